"""A served Api with one slow operation, for the graceful-shutdown test (run as a script).

    python slow_server.py CONFIG

Serves through :func:`authgate.entrypoints.app.serving.serve`, as ``authgate serve`` does. Prints
``READY <address>`` once listening and ``STARTED`` when the slow operation begins; the
operation finishes once a line arrives on stdin, so the test decides how long it is in flight.
"""

from __future__ import annotations

import asyncio
import sys

import attrs

from authgate.entrypoints.app.config import load
from authgate.entrypoints.app.serving import build_app, serve
from authgate.entrypoints.rest import Api, Call


@attrs.frozen
class Done:
    finished: bool


def main(config_file: str) -> None:
    config = load(config_file)
    api = Api("Slow", "1.0.0")

    @api.operation("GET", "/slow", response=Done)
    async def slow(call: Call[None]) -> Done:
        print("STARTED", flush=True)
        await asyncio.to_thread(sys.stdin.readline)
        return Done(True)

    def ready(address: str) -> None:
        print(f"READY {address}", flush=True)

    serve(build_app(api, config), config, on_ready=ready)
    print("EXITED", flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
