"""Built-in endpoints: the OpenAPI document and the liveness/readiness probes (spec 4.1, 4.2)."""

from __future__ import annotations

import asyncio
import time

from aiohttp import web

from authgate.entrypoints.rest import Api, HealthCheck

from .conftest import Serve


async def test_builtin_endpoints_answer_200_by_default(serve: Serve) -> None:
    client = await serve(Api("Example", "1.2.3"))
    for path in ("/openapi.json", "/health/liveness", "/health/readiness"):
        resp = await client.get(path)
        assert resp.status == 200, path
        assert resp.content_type == "application/json", path
    resp = await client.get("/health/liveness")
    assert await resp.json() == {"status": "ok", "checks": {}}
    resp = await client.get("/openapi.json")
    doc = await resp.json()
    assert doc["info"] == {"title": "Example", "version": "1.2.3"}


async def test_readiness_with_passing_checks_names_each(serve: Serve) -> None:
    api = Api("Example", "1.0.0")

    async def database() -> None:
        return None

    async def cache() -> bool:
        return True

    api.readiness.add(HealthCheck("database", database))
    api.readiness.add(HealthCheck("cache", cache))
    client = await serve(api)
    resp = await client.get("/health/readiness")
    assert resp.status == 200
    assert await resp.json() == {
        "status": "ok",
        "checks": {"database": {"status": "ok"}, "cache": {"status": "ok"}},
    }


async def test_readiness_503_when_a_check_raises(serve: Serve) -> None:
    api = Api("Example", "1.0.0")

    async def ok() -> None:
        return None

    async def broken() -> None:
        raise ConnectionError("database down")

    api.readiness.add(HealthCheck("cache", ok))
    api.readiness.add(HealthCheck("database", broken))
    client = await serve(api)
    resp = await client.get("/health/readiness")
    assert resp.status == 503
    body = await resp.json()
    assert body == {
        "status": "unavailable",
        "checks": {"cache": {"status": "ok"}, "database": {"status": "failed"}},
    }
    # The exception's text is for the log, not the probe's caller.
    assert "database down" not in await resp.text()
    # Liveness is a separate probe and is unaffected.
    assert (await client.get("/health/liveness")).status == 200


async def test_readiness_503_when_a_check_returns_false(serve: Serve) -> None:
    api = Api("Example", "1.0.0")

    async def not_ready() -> bool:
        return False

    api.readiness.add(HealthCheck("queue", not_ready))
    client = await serve(api)
    resp = await client.get("/health/readiness")
    assert resp.status == 503
    assert await resp.json() == {"status": "unavailable", "checks": {"queue": {"status": "failed"}}}


async def test_readiness_503_in_bounded_time_when_a_check_hangs(serve: Serve) -> None:
    api = Api("Example", "1.0.0")

    async def hangs() -> None:
        await asyncio.Event().wait()  # never set: a hung dependency

    async def quick() -> None:
        return None

    api.readiness.add(HealthCheck("database", hangs, timeout=0.2))
    api.readiness.add(HealthCheck("cache", quick))
    client = await serve(api)
    started = time.monotonic()
    resp = await client.get("/health/readiness")
    elapsed = time.monotonic() - started
    assert resp.status == 503
    assert await resp.json() == {
        "status": "unavailable",
        "checks": {"database": {"status": "timeout"}, "cache": {"status": "ok"}},
    }
    # The time is the behaviour here: the check never returns, so only its own 0.2 s timeout
    # ends it. The bound is as generous as it can be while still telling that timeout apart
    # from HealthCheck's 2 s default (which would answer too, but only after 2 s).
    assert elapsed < 2.0


async def test_checks_run_concurrently(serve: Serve) -> None:
    api = Api("Example", "1.0.0")
    started = 0
    all_started = asyncio.Event()

    async def waits_for_the_others() -> None:
        # Run one after another, the first check would wait out its timeout.
        nonlocal started
        started += 1
        if started == 3:
            all_started.set()
        await all_started.wait()

    for name in ("a", "b", "c"):
        api.readiness.add(HealthCheck(name, waits_for_the_others, timeout=5.0))
    client = await serve(api)
    resp = await client.get("/health/readiness")
    assert resp.status == 200
    assert resp.headers["Cache-Control"] == "no-store"
    assert (await resp.json())["checks"] == {n: {"status": "ok"} for n in ("a", "b", "c")}


async def test_liveness_with_a_failing_custom_check(serve: Serve) -> None:
    api = Api("Example", "1.0.0")

    async def deadlocked() -> bool:
        return False

    api.liveness.add(HealthCheck("event-loop", deadlocked))
    client = await serve(api)
    resp = await client.get("/health/liveness")
    assert resp.status == 503
    assert await resp.json() == {
        "status": "unavailable",
        "checks": {"event-loop": {"status": "failed"}},
    }
    assert (await client.get("/health/readiness")).status == 200


async def test_probe_with_a_custom_handler(serve: Serve) -> None:
    api = Api("Example", "1.0.0")

    async def draining(_: web.Request) -> web.StreamResponse:
        return web.json_response({"draining": True}, status=503)

    api.readiness.handler = draining
    client = await serve(api)
    resp = await client.get("/health/readiness")
    assert resp.status == 503
    assert await resp.json() == {"draining": True}
    assert (await client.get("/health/liveness")).status == 200
