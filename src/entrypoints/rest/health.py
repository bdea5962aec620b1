"""Liveness and readiness probes made of named checks, each bounded by a timeout.

A probe with no checks answers 200. A check fails when it raises, returns False or does not
finish within its timeout (a hung dependency must not hang the probe); any failure answers 503.
Checks run concurrently. The body names each check and its result:
``{"status": "ok", "checks": {"database": {"status": "ok"}}}``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import attrs
from aiohttp import web

from .errors import json_response

log = logging.getLogger("authgate.health")

CheckFn = Callable[[], Awaitable[bool | None]]


@attrs.frozen
class HealthReport:
    """The documented body of a probe's answer: overall status and each check's status."""

    status: str
    checks: dict[str, dict[str, str]]


@attrs.frozen
class HealthCheck:
    """A named dependency check. ``check`` returns None/True when healthy."""

    name: str
    check: CheckFn = attrs.field(eq=False)
    timeout: float = 2.0


@attrs.define
class Probe:
    """A set of checks answered at one endpoint; a custom handler may replace it whole."""

    checks: list[HealthCheck] = attrs.field(factory=list)
    handler: Callable[[web.Request], Awaitable[web.StreamResponse]] | None = None

    def add(self, check: HealthCheck) -> None:
        self.checks.append(check)

    async def run(self) -> tuple[bool, dict[str, Any]]:
        results = await asyncio.gather(*(_run_check(c) for c in self.checks))
        healthy = all(ok for ok, _ in results)
        body = {
            "status": "ok" if healthy else "unavailable",
            "checks": {c.name: detail for c, (_, detail) in zip(self.checks, results, strict=True)},
        }
        return healthy, body

    async def respond(self, request: web.Request) -> web.StreamResponse:
        if self.handler is not None:
            return await self.handler(request)
        healthy, body = await self.run()
        return json_response(body, 200 if healthy else 503, {"Cache-Control": "no-store"})


async def _run_check(check: HealthCheck) -> tuple[bool, dict[str, str]]:
    try:
        async with asyncio.timeout(check.timeout):
            result = await check.check()
    except TimeoutError:
        log.warning("health check %s timed out after %.1fs", check.name, check.timeout)
        return False, {"status": "timeout"}
    except Exception:
        log.warning("health check %s failed", check.name, exc_info=True)
        return False, {"status": "failed"}
    if result is False:
        return False, {"status": "failed"}
    return True, {"status": "ok"}
