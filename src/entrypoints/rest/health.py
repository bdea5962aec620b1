"""Liveness and readiness probes made of named checks, each bounded by a timeout (a hung
dependency must not hang the probe) and run concurrently.

A check fails when it raises, returns False or times out: a required one makes the probe answer
503; one that is not (a dependency the service runs without) answers 200 ``degraded``. The body
names each check's result: ``{"status": "ok", "checks": {"database": {"status": "ok"}}}``. A
check that starts failing is logged once, and once more when it passes again, not every probe.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

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


@attrs.define
class HealthCheck:
    """A named dependency check. ``check`` returns None/True when healthy."""

    name: str
    check: CheckFn = attrs.field(eq=False)
    timeout: float = 2.0
    # False: a failure is reported in the body without making the probe answer 503
    required: bool = True
    # whether the last run failed (for logging the changes only)
    failing: bool = attrs.field(default=False, eq=False, init=False)


@attrs.define
class Probe:
    """A set of checks answered at one endpoint; a custom handler may replace it whole."""

    checks: list[HealthCheck] = attrs.field(factory=list)
    handler: Callable[[web.Request], Awaitable[web.StreamResponse]] | None = None

    def add(self, check: HealthCheck) -> None:
        self.checks.append(check)

    async def respond(self, request: web.Request) -> web.StreamResponse:
        if self.handler is not None:
            return await self.handler(request)
        results = await asyncio.gather(*(_run_check(c) for c in self.checks))
        checked = list(zip(self.checks, results, strict=True))
        healthy = all(ok for c, (ok, _) in checked if c.required)
        complete = all(ok for ok, _ in results)
        body = {
            "status": "ok" if complete else "degraded" if healthy else "unavailable",
            "checks": {c.name: detail for c, (_, detail) in checked},
        }
        return json_response(body, 200 if healthy else 503, {"Cache-Control": "no-store"})


async def _run_check(check: HealthCheck) -> tuple[bool, dict[str, str]]:
    try:
        async with asyncio.timeout(check.timeout):
            result = await check.check()
    except TimeoutError:
        _failed(check, f"timed out after {check.timeout:.1f}s")
        return False, {"status": "timeout"}
    except Exception as e:
        _failed(check, f"{type(e).__name__}: {e}")
        return False, {"status": "failed"}
    if result is False:
        _failed(check, "reported a failure")
        return False, {"status": "failed"}
    if check.failing:
        check.failing = False
        log.warning("health check %s passes again", check.name)
    return True, {"status": "ok"}


def _failed(check: HealthCheck, why: str) -> None:
    if not check.failing:
        check.failing = True
        log.warning("health check %s failed (%s)", check.name, why)
