"""The callback's rate limit: 10 per minute per client address, exact under concurrency, on
memory and on a real Redis; X-Forwarded-For believed only from trusted proxies."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from .conftest import MakeService

CALLBACK = "/v1/auth/google/callback"


def unique_ip() -> str:
    n = uuid.uuid4().int
    return f"10.{n % 250}.{(n >> 8) % 250}.{(n >> 16) % 250 + 1}"


@pytest.fixture(params=["memory", "redis"])
def storage(request: pytest.FixtureRequest) -> str:
    if request.param == "memory":
        return "memory://"
    url: str = request.getfixturevalue("redis_url")
    return url


async def test_forty_concurrent_callbacks_let_exactly_ten_through(
    make_service: MakeService, storage: str
) -> None:
    # Exact means every request counted: a Redis answer slower than the default 0.5 s (a
    # loaded test machine) would let a request through uncounted, as a Redis outage does.
    client = await make_service(
        {
            "ratelimit": {
                "storage": storage,
                "trusted_proxies": ["127.0.0.1/32"],
                "redis_timeout_seconds": 10,
            }
        }
    )
    headers = {"X-Forwarded-For": unique_ip()}
    responses = await asyncio.gather(*(client.get(CALLBACK, headers=headers) for _ in range(40)))
    statuses = [r.status for r in responses]
    assert statuses.count(429) == 30
    limited = next(r for r in responses if r.status == 429)
    assert await limited.json() == {
        "error": "rate_limited",
        "message": "too many sign-in callbacks; retry later",
    }
    assert 1 <= int(limited.headers["Retry-After"]) <= 60
    # Another client address has its own budget.
    other = await client.get(CALLBACK, headers={"X-Forwarded-For": unique_ip()})
    assert other.status != 429


async def test_get_and_post_share_one_budget(make_service: MakeService) -> None:
    client = await make_service({"ratelimit": {"trusted_proxies": ["127.0.0.1/32"]}})
    headers = {"X-Forwarded-For": unique_ip()}
    for i in range(10):
        method = client.get if i % 2 else client.post
        assert (await method(CALLBACK, headers=headers)).status != 429
    assert (await client.post(CALLBACK, headers=headers)).status == 429
    assert (await client.get(CALLBACK, headers=headers)).status == 429


async def test_forwarded_for_from_an_untrusted_peer_is_ignored(make_service: MakeService) -> None:
    client = await make_service()  # no trusted proxies: the peer address counts
    for _ in range(10):
        # A client rotating X-Forwarded-For does not get a fresh budget.
        response = await client.get(CALLBACK, headers={"X-Forwarded-For": unique_ip()})
        assert response.status != 429
    response = await client.get(CALLBACK, headers={"X-Forwarded-For": unique_ip()})
    assert response.status == 429


async def test_left_most_forwarded_for_is_not_believed(make_service: MakeService) -> None:
    client = await make_service({"ratelimit": {"trusted_proxies": ["127.0.0.1/32"]}})
    real = unique_ip()
    for _ in range(10):
        spoofed = f"{unique_ip()}, {real}"  # the client prepends; our proxy appends the real one
        assert (await client.get(CALLBACK, headers={"X-Forwarded-For": spoofed})).status != 429
    response = await client.get(CALLBACK, headers={"X-Forwarded-For": f"{unique_ip()}, {real}"})
    assert response.status == 429


async def test_redis_down_fails_open_by_default_and_closed_when_configured(
    make_service: MakeService, caplog: pytest.LogCaptureFixture
) -> None:
    dead = "redis://127.0.0.1:1/0"
    client = await make_service({"ratelimit": {"storage": dead}})
    statuses = [(await client.get(CALLBACK)).status for _ in range(12)]
    assert 429 not in statuses
    assert "rate-limit store unreachable" in caplog.text
    closed = await make_service({"ratelimit": {"storage": dead, "fail_open": False}})
    assert (await closed.get(CALLBACK)).status == 429


async def test_a_redis_that_does_not_answer_counts_as_down_after_the_timeout(
    make_service: MakeService, caplog: pytest.LogCaptureFixture
) -> None:
    """A Redis that takes connections and never answers (a stalled server, a black-holed
    route) holds a request no longer than ``ratelimit.redis_timeout_seconds`` allows, then
    fails open as an unreachable one does."""
    accepted: list[asyncio.StreamWriter] = []

    async def silent(_: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted.append(writer)  # read nothing, answer nothing, keep the connection

    server = await asyncio.start_server(silent, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        for timeout, at_least, under in ((0.2, 0.2, 1.0), (1.0, 1.0, 3.0)):
            client = await make_service(
                {
                    "ratelimit": {
                        "storage": f"redis://127.0.0.1:{port}/0",
                        "redis_timeout_seconds": timeout,
                    }
                }
            )
            began = asyncio.get_running_loop().time()
            response = await client.get(CALLBACK)
            waited = asyncio.get_running_loop().time() - began
            assert response.status != 429
            assert at_least <= waited < under, (timeout, waited)
        assert accepted
        assert "rate-limit store unreachable (" in caplog.text
    finally:
        for writer in accepted:
            writer.close()
        server.close()
        await server.wait_closed()
