"""A lean closed-loop HTTP/1.1 load generator on asyncio streams (loopback only).

Each of ``connections`` keep-alive connections sends one request, reads the whole answer
(``Content-Length`` bodies only), checks its status and sends the next, until ``seconds`` have
passed or ``max_requests`` were sent. No client library: the aiohttp client costs several times
more CPU per request than the servers measured here, and would be the bottleneck.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping

import attrs


@attrs.define
class LoadResult:
    count: int = 0
    errors: int = 0
    seconds: float = 0.0
    latencies: list[float] = attrs.field(factory=list)
    first_error: str | None = None

    @property
    def per_second(self) -> float:
        return self.count / self.seconds if self.seconds else 0.0

    def percentile(self, q: float) -> float:
        if not self.latencies:
            return float("nan")
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


def request_bytes(path: str, port: int, headers: Mapping[str, str] | None = None) -> bytes:
    lines = [f"GET {path} HTTP/1.1", f"Host: 127.0.0.1:{port}", "Accept: application/json"]
    lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


async def _connection(
    port: int,
    request: bytes,
    deadline: float,
    result: LoadResult,
    expect: bytes,
    max_requests: int,
) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    perf = time.perf_counter
    try:
        while time.monotonic() < deadline and result.count + result.errors < max_requests:
            started = perf()
            writer.write(request)
            head = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n")[1:]:
                if line[:15].lower() == b"content-length:":
                    length = int(line[15:])
                    break
            if length:
                await reader.readexactly(length)
            if head.startswith(expect):
                result.count += 1
                result.latencies.append(perf() - started)
            else:
                result.errors += 1
                if result.first_error is None:
                    result.first_error = head.split(b"\r\n", 1)[0].decode(errors="replace")
    finally:
        writer.close()


async def closed_loop(
    port: int,
    request: bytes,
    *,
    connections: int,
    seconds: float,
    expect_status: int = 200,
    max_requests: int = 10_000_000,
) -> LoadResult:
    """Drive ``127.0.0.1:port`` with ``request`` over ``connections`` connections."""
    result = LoadResult()
    expect = f"HTTP/1.1 {expect_status}".encode()
    started = time.monotonic()
    deadline = started + seconds
    await asyncio.gather(
        *(
            _connection(port, request, deadline, result, expect, max_requests)
            for _ in range(connections)
        )
    )
    result.seconds = time.monotonic() - started
    return result
