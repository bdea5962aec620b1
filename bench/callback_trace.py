"""Which of authgate's files a sign-in callback crosses, and how often it hops between them.

A reader who follows one sign-in callback through the code meets every file it runs in; this
script counts them. It serves the service in this process (the composition root's own app on
PostgreSQL, as ``authgate serve`` builds it, with the access log on), signs one user in to warm
everything up, then signs a second user in with ``sys.setprofile`` on for the callback request
only, and records every call whose callee is a file of the ``authgate`` package:

* **files**: the distinct ``authgate`` source files in which code ran during the callback;
* **hops**: the distinct (caller function, callee function) pairs whose two functions live in
  different ``authgate`` files (a call into a library and back does not count, a call from one
  of our files into another does, once however often it repeats).

``--list`` prints the files in the order the callback first enters them.

    .venv/bin/python bench/callback_trace.py            # files and hops of one callback
    .venv/bin/python bench/callback_trace.py --list     # and the files, in order

Needs PostgreSQL (``--admin-url``); a throw-away database is created and dropped.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from types import FrameType
from typing import Any

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import yaml
from aiohttp.test_utils import TestServer

import authgate
from bench.harness import SignInDriver, migrate, service_config, temp_folder, write_config
from bench.load import DEFAULT_ADMIN_URL, Settings, database
from tests.fakeidp import FakeIdP, FakeUser

PACKAGE = str(Path(authgate.__file__).resolve().parent)
HANDLER = "entrypoints/http/signin.py"


class CallTrace:
    """The profile hook: per asyncio task, files entered (in order) and cross-file call pairs.
    Only the task that runs the callback's handler counts (:meth:`callback`): the service's
    background tasks (housekeeping, say) run on the same loop meanwhile."""

    def __init__(self) -> None:
        self._files: dict[object, dict[str, None]] = {}
        self._hops: dict[object, set[tuple[str, str]]] = {}

    def callback(self) -> tuple[list[str], set[tuple[str, str]]]:
        for task, files in self._files.items():
            if any(f.endswith(HANDLER) for f in files):
                return list(files), self._hops.get(task, set())
        raise RuntimeError("no task ran the callback's handler")

    def __call__(self, frame: FrameType, event: str, arg: Any) -> None:
        if event != "call":
            return
        callee = frame.f_code.co_filename
        if not callee.startswith(PACKAGE):
            return
        try:
            task: object = asyncio.current_task()
        except RuntimeError:
            task = None
        self._files.setdefault(task, {}).setdefault(callee, None)
        caller = frame.f_back
        # The nearest caller of ours: a library frame in between (aiohttp's dispatch, a
        # coroutine resumed by the event loop) is skipped, not counted as a hop.
        while caller is not None and not caller.f_code.co_filename.startswith(PACKAGE):
            caller = caller.f_back
        if caller is None or caller.f_code.co_filename == callee:
            return
        self._hops.setdefault(task, set()).add((_name(caller), _name(frame)))


def _name(frame: FrameType) -> str:
    path = Path(frame.f_code.co_filename).relative_to(PACKAGE)
    return f"{path}:{frame.f_code.co_qualname}"


async def trace(admin_url: str) -> CallTrace:
    from authgate.entrypoints.app import build as assembly  # the service's own application assembly
    from authgate.entrypoints.app.config import parse
    from authgate.entrypoints.app.serving import build_app

    folder = temp_folder("authgate-callback-trace-")
    settings = Settings(users=2, admin_url=admin_url, database="postgres")
    async with FakeIdP() as fake, database(settings, folder) as (url, fresh):
        config_dict = service_config(folder, fake, database_url=url)
        config_file = write_config(folder, config_dict)
        if fresh:
            migrate(config_file)
        config = parse(yaml.safe_dump(config_dict, sort_keys=False))
        app = await assembly.create_app(config, build_app)
        server = TestServer(app, port=config.rest.port)
        await server.start_server()
        base = str(server.make_url("")).rstrip("/")
        recorded = CallTrace()
        try:
            async with SignInDriver(fake) as driver:
                for n, user in enumerate((FakeUser(sub="warm-up"), FakeUser(sub="traced"))):
                    details, binding = await driver.begin(base, "google", intent="register")
                    back = await fake.authorize(details["authorizationUrl"], user=user)
                    if n == 1:
                        sys.setprofile(recorded)
                    try:
                        result = await driver.callback(base, "google", back.params, binding=binding)
                    finally:
                        sys.setprofile(None)
                    if not result.signed_in:
                        raise RuntimeError(f"the callback answered {result.status}")
        finally:
            await server.close()
        return recorded


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--admin-url", default=DEFAULT_ADMIN_URL)
    parser.add_argument("--list", action="store_true", help="print the files in order")
    parser.add_argument("--hops", action="store_true", help="print the hops")
    args = parser.parse_args()
    files, hops = asyncio.run(trace(args.admin_url)).callback()
    if args.list:
        for path in files:
            print(Path(path).relative_to(PACKAGE))
    if args.hops:
        for caller, callee in sorted(hops):
            print(f"{caller} -> {callee}")
    print(f"callback: {len(files)} files, {len(hops)} hops between them")


if __name__ == "__main__":
    main()
