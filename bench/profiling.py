"""Where a server's CPU time goes: py-spy samples, folded into the issue's categories.

py-spy is a measurement tool in the dev lock's bench extra (``scripts/bootstrap dev`` installs
it; :func:`available` says whether it is there). It samples the server's on-CPU Python stacks
(idle time is not sampled); each stack is put in the category of the most specific subsystem
on it, so that a database call made from an operation counts as database, not as the
operation:

    token verification   joserfc / cryptography under the provider's ID token verification or
                         the JWKS (signature and claims of the provider's ID token)
    session token        joserfc / cryptography for the service's own session JWT (signing at
                         the callback, verification of the bearer token)
    database             asyncpg, aiosqlite and the storage adapters
    HTTP client          aiohttp's client (the token endpoint, userinfo) and its connector
    rate limiter         limits (the callback's moving window; its memory store expires
                         entries from a background task through a thread)
    access log           logging
    REST layer           routing to operations, parameters, security, cattrs, JSON
    sign-in logic        domain/ and the sign-in HTTP operations
    HTTP server          aiohttp's server: protocol, parser, request and response objects
    event loop           asyncio: selectors, transports, scheduling
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

# (category, substrings of a frame "function (file:line)"), most specific first
RULES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("token verification", ("identity/id_token.py", "identity/jwks.py")),
    ("session token", ("sessions/jwt.py",)),
    ("token verification", ("joserfc/", "cryptography/")),
    ("rate limiter", ("limits/", "adapters/ratelimit/")),
    ("database", ("asyncpg/", "aiosqlite/", "adapters/postgres/", "adapters/sqlite/")),
    ("HTTP client", ("aiohttp/client", "aiohttp/connector", "identity/fetch.py")),
    ("access log", ("logging/",)),
    ("sign-in logic", ("src/domain/", "entrypoints/http/")),
    ("REST layer", ("entrypoints/rest/", "cattrs/", "json/", "attr/")),
    ("HTTP server", ("aiohttp/", "multidict/", "yarl/")),
    ("event loop", ("asyncio/", "selectors.py")),
)


def py_spy() -> str | None:
    local = Path(sys.executable).with_name("py-spy")
    return str(local) if local.exists() else shutil.which("py-spy")


def available() -> bool:
    return py_spy() is not None


def record(pid: int, seconds: float, out: Path, rate: int = 200) -> subprocess.Popen[bytes]:
    """Start sampling ``pid`` for ``seconds`` into ``out`` (folded stacks); wait on the result."""
    binary = py_spy()
    if binary is None:
        raise RuntimeError("py-spy is not installed (scripts/bootstrap dev)")
    command = [binary, "record", "-p", str(pid), "-d", str(int(seconds)), "-r", str(rate)]
    return subprocess.Popen(
        [*command, "-f", "raw", "-o", str(out)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


# A thread pool worker blocked on its queue (the GIL released): waiting, not working.
IDLE = ("_worker (concurrent/futures/thread.py:81)",)


def _samples(folded: Path) -> list[tuple[str, int]]:
    out = []
    for line in folded.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if stack and count.isdigit() and not stack.endswith(IDLE):
            out.append((stack, int(count)))
    return out


def category(stack: str) -> str:
    for name, needles in RULES:
        if any(needle in stack for needle in needles):
            return name
    return "other"


def shares(folded: Path) -> dict[str, float]:
    """Each category's share of the samples in a folded-stacks file."""
    counts: Counter[str] = Counter()
    for stack, count in _samples(folded):
        counts[category(stack)] += count
    total = sum(counts.values()) or 1
    return {name: round(n / total, 3) for name, n in counts.most_common()}


def top_functions(folded: Path, n: int = 15) -> list[tuple[str, float]]:
    """The leaf frames with the most samples (self time)."""
    counts: Counter[str] = Counter()
    for stack, count in _samples(folded):
        counts[stack.rsplit(";", 1)[-1]] += count
    total = sum(counts.values()) or 1
    return [(frame, round(c / total, 3)) for frame, c in counts.most_common(n)]
