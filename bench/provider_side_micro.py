"""The provider side of a callback, in process: ID-token signature checks and the token request.

Two measurements that do not depend on the machine's other load as much as a throughput run
(each figure is the best of several repeats, and both variants run in the same process):

* ``id-token``: µs per signature check of a real ID token of the fake provider (RS256 as
  google signs, ES256 as apple signs) by the adapter's ``_verify_signature`` (joserfc's
  ``deserialize_compact``), and the whole ``IdTokenVerifier.verify`` (header, key choice,
  signature, claims).
* ``token-request``: CPU µs of this process per ``request_json`` POST to a token endpoint
  served by another process (the fake's answer), on the session the service builds
  (``provider_session``) and on a default ``aiohttp.ClientSession``; the server's CPU is not
  counted. ``--baseline-fetch FILE`` adds another version of ``fetch.py`` (e.g. ``git show
  main:src/adapters/http_fetch.py > /tmp/fetch_main.py``) on a default session, measured in
  the same run.

With ``--instructions`` (valgrind's callgrind), the signature checks are also counted in
instructions (the difference between a run of 1,200 and one of 200 checks, per check): a
figure that the other work on the machine does not move at all.

    .venv/bin/python bench/provider_side_micro.py
    .venv/bin/python bench/provider_side_micro.py --only id-token --instructions
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import importlib.util
import json
import multiprocessing
import re
import shutil
import subprocess
import sys
import tempfile
import time
import timeit
from collections.abc import Callable
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import aiohttp
from aiohttp import web
from joserfc.jwk import KeySet

from authgate.adapters.jose.key_sets import KeySetCache
from authgate.adapters.provider import fetch, id_token
from tests.fakeidp.model import Shape
from tests.fakeidp.provider import FakeProvider


class _Clock:
    def now(self) -> dt.datetime:
        return dt.datetime.now(dt.UTC)


def best_us(call: Callable[[], Any], number: int, repeat: int = 7) -> float:
    return min(timeit.repeat(call, number=number, repeat=repeat)) / number * 1e6


def id_token_figures(number: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, shape in (("RS256 (google)", Shape.OIDC), ("ES256 (apple)", Shape.APPLE)):
        provider = FakeProvider("google", shape, time.time)
        provider.base_url = "https://idp.example"
        nonce = "n-0123456789"
        token = provider.mint_id_token(nonce=nonce)
        keys = KeySet.import_key_set(provider.jwks())
        key = id_token._pick_key(keys, provider.alg, provider.kid)
        assert key is not None

        async def fetch_keys(keys: KeySet = keys) -> KeySet:
            return keys

        cache = KeySetCache(fetch_keys, _Clock(), max_age_seconds=86400, min_refetch_seconds=10)
        verifier = id_token.IdTokenVerifier(
            keys=cache,
            clock=_Clock(),
            issuer=provider.issuer,
            client_id=provider.client_id,
            algorithms=[provider.alg],
        )
        loop = asyncio.new_event_loop()
        loop.run_until_complete(cache.get())

        def verify(verifier: Any = verifier, token: str = token, nonce: str = nonce) -> None:
            coroutine = verifier.verify(token, nonce=nonce)
            try:
                coroutine.send(None)  # completes without suspending: the key set is cached
            except StopIteration:
                return
            raise AssertionError("verify suspended")

        row = {
            "signature_joserfc_us": best_us(
                lambda t=token, k=key, a=provider.alg: id_token._verify_signature(t, k, a), number
            ),
            "verify_joserfc_us": best_us(verify, number),
        }
        loop.close()
        out[name] = {k: round(v, 1) for k, v in row.items()}
    return out


def loop(variant: str, fixture: str, count: int) -> None:
    """``count`` signature checks of one variant on the token and key set in ``fixture``
    (a JSON file: no key generation here, whose cost varies from run to run)."""
    data = json.loads(Path(fixture).read_text())
    alg, kid, token = data["alg"], data["kid"], data["token"]
    key = id_token._pick_key(KeySet.import_key_set(data["jwks"]), alg, kid)
    assert key is not None
    check = id_token._verify_signature  # joserfc's: the only variant left
    for _ in range(count):
        check(token, key, alg)


def instructions() -> dict[str, Any]:
    """Instructions per signature check, each variant, from callgrind."""
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        return {"error": "valgrind is not installed"}
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as folder:
        for shape in (Shape.OIDC, Shape.APPLE):
            provider = FakeProvider("google", shape, time.time)
            provider.base_url = "https://idp.example"
            fixture = Path(folder) / f"{provider.alg}.json"
            fixture.write_text(
                json.dumps(
                    {
                        "alg": provider.alg,
                        "kid": provider.kid,
                        "token": provider.mint_id_token(nonce="n"),
                        "jwks": provider.jwks(),
                    }
                )
            )
            for variant in ("joserfc",):
                counts = []
                for count in (200, 1200):
                    result = subprocess.run(
                        [
                            valgrind,
                            "--tool=callgrind",
                            f"--callgrind-out-file={folder}/cg.out",
                            sys.executable,
                            __file__,
                            "--loop",
                            variant,
                            str(fixture),
                            str(count),
                        ],
                        capture_output=True,
                        text=True,
                        check=True,
                    )
                    found = re.search(r"Collected : (\d+)", result.stderr)
                    assert found, result.stderr[-2000:]
                    counts.append(int(found.group(1)))
                out[f"{provider.alg} {variant}"] = round((counts[1] - counts[0]) / 1000)
    return out


TOKEN_ANSWER = json.dumps(
    {
        "access_token": "ya29." + "a" * 160,
        "expires_in": 3599,
        "scope": "openid email profile",
        "token_type": "Bearer",
        "id_token": "eyJ" + "b" * 1100,
    }
).encode()


def serve(port: int, ready: Any) -> None:
    async def token(request: web.Request) -> web.Response:
        await request.read()
        return web.Response(body=TOKEN_ANSWER, content_type="application/json")

    async def main() -> None:
        app = web.Application()
        app.router.add_post("/token", token)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", port).start()
        ready.set()
        await asyncio.Event().wait()

    asyncio.run(main())


FORM = {
    "grant_type": "authorization_code",
    "code": "4/0AfJohXn" + "x" * 60,
    "redirect_uri": "https://auth.example.com/v1/auth/google/callback",
    "client_id": "1234567890-abcdefghijklmnop.apps.googleusercontent.com",
    "client_secret": "GOCSPX-abcdefghijklmnopqrstuvwx",
    "code_verifier": "v" * 64,
}


async def cpu_per_request(
    session: aiohttp.ClientSession, url: str, requests: int, module: Any = fetch
) -> float:
    async def one() -> None:
        answer = await module.request_json(
            session,
            "POST",
            url,
            what="provider bench: token endpoint",
            timeout_seconds=10.0,
            max_bytes=1 << 20,
            data=FORM,
        )
        assert answer.status == 200 and isinstance(answer.body, dict)

    for _ in range(50):  # warm: the connection is open and kept
        await one()
    best = float("inf")
    for _ in range(5):
        start = time.process_time()
        for _ in range(requests):
            await one()
        best = min(best, time.process_time() - start)
    return best / requests * 1e6


async def token_request_figures(requests: int, baseline: str | None) -> dict[str, Any]:
    port = 18765
    ready = multiprocessing.Event()
    server = multiprocessing.Process(target=serve, args=(port, ready), daemon=True)
    server.start()
    try:
        assert ready.wait(10)
        url = f"http://127.0.0.1:{port}/token"
        out: dict[str, Any] = {}
        old = load_fetch(baseline) if baseline is not None else None
        for _ in range(2):  # alternated, twice: the machine's load moves
            if old is not None:
                async with aiohttp.ClientSession() as session:
                    figure = await cpu_per_request(session, url, requests, old)
                out.setdefault("baseline_fetch_default_session_cpu_us", []).append(round(figure, 1))
            async with aiohttp.ClientSession() as session:
                figure = await cpu_per_request(session, url, requests)
            out.setdefault("default_session_cpu_us", []).append(round(figure, 1))
            async with fetch.provider_session() as session:
                figure = await cpu_per_request(session, url, requests)
            out.setdefault("provider_session_cpu_us", []).append(round(figure, 1))
        return out
    finally:
        server.terminate()
        server.join()


def load_fetch(path: str) -> Any:
    spec = importlib.util.spec_from_file_location("baseline_fetch", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


async def request_loop(baseline: str | None, url: str, count: int) -> None:
    """``count`` token requests (after 20 to open the connection), run under callgrind."""
    module = load_fetch(baseline) if baseline else fetch
    session = aiohttp.ClientSession() if baseline else fetch.provider_session()
    async with session:
        for _ in range(20 + count):
            answer = await module.request_json(
                session,
                "POST",
                url,
                what="provider bench: token endpoint",
                timeout_seconds=10.0,
                max_bytes=1 << 20,
                data=FORM,
            )
            assert answer.status == 200


def request_instructions(baseline: str | None) -> dict[str, Any]:
    """Instructions of this process per token request, from callgrind (server not counted)."""
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        return {"error": "valgrind is not installed"}
    port = 18766
    ready = multiprocessing.Event()
    server = multiprocessing.Process(target=serve, args=(port, ready), daemon=True)
    server.start()
    out: dict[str, Any] = {}
    try:
        assert ready.wait(10)
        url = f"http://127.0.0.1:{port}/token"
        variants = {"current fetch.py, provider_session": None}
        if baseline:
            variants["baseline fetch.py, default ClientSession"] = baseline
        with tempfile.TemporaryDirectory() as folder:
            for name, module in variants.items():
                counts = []
                for count in (100, 600):
                    command = [valgrind, "--tool=callgrind"]
                    command += [f"--callgrind-out-file={folder}/cg.out", sys.executable, __file__]
                    command += ["--request-loop", module or "", url, str(count)]
                    result = subprocess.run(command, capture_output=True, text=True, check=True)
                    found = re.search(r"Collected : (\d+)", result.stderr)
                    assert found, result.stderr[-2000:]
                    counts.append(int(found.group(1)))
                out[name] = round((counts[1] - counts[0]) / 500)
    finally:
        server.terminate()
        server.join()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", choices=("id-token", "token-request"))
    parser.add_argument("--number", type=int, default=2000, help="signature checks per repeat")
    parser.add_argument("--requests", type=int, default=400, help="token requests per repeat")
    parser.add_argument("--instructions", action="store_true", help="callgrind counts too")
    parser.add_argument("--baseline-fetch", help="another fetch.py to measure too")
    parser.add_argument("--loop", nargs=3, help=argparse.SUPPRESS)
    parser.add_argument("--request-loop", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.loop:
        loop(args.loop[0], args.loop[1], int(args.loop[2]))
        return
    if args.request_loop:
        baseline, url, count = args.request_loop
        asyncio.run(request_loop(baseline or None, url, int(count)))
        return
    report: dict[str, Any] = {}
    if args.only in (None, "id-token"):
        report["id_token"] = id_token_figures(args.number)
        if args.instructions:
            report["id_token_instructions_per_check"] = instructions()
    if args.only in (None, "token-request"):
        report["token_request"] = asyncio.run(
            token_request_figures(args.requests, args.baseline_fetch)
        )
        if args.instructions:
            report["token_request_instructions"] = request_instructions(args.baseline_fetch)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
