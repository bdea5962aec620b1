"""What the rate limits count by: the client's network, not its exact address.

An IPv6 client holds a whole /64 (2^64 addresses), so both limits (callback and initiation) key
IPv6 clients by their network of ``ratelimit.ipv6_prefix`` bits (64 by default), and an
IPv4-mapped address (``::ffff:a.b.c.d``) by its IPv4 address. The addresses come through
``X-Forwarded-For`` from a trusted proxy; the sign-in event keeps the full address."""

from __future__ import annotations

import ipaddress
import secrets
import sqlite3
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from authgate.entrypoints.app.config import ConfigError
from tests.fakeidp import FakeIdP, FakeUser, SettableClock

from .conftest import APP_URL, CALLBACK_URL, Client, MakeService, SignIn, load_config

LIMIT = 3
Hit = Callable[[Client, str], Awaitable[int]]


async def hit_callback(client: Client, address: str) -> int:
    response = await client.get("/v1/auth/google/callback", headers={"X-Forwarded-For": address})
    return response.status


async def hit_initiation(client: Client, address: str) -> int:
    headers = {"Accept": "application/json", "X-Forwarded-For": address}
    response = await client.get("/v1/auth/google", headers=headers)
    return response.status


@pytest.fixture(params=["callback", "initiation"])
def hit(request: pytest.FixtureRequest) -> Hit:
    return hit_callback if request.param == "callback" else hit_initiation


@pytest.fixture(params=["memory", "redis"])
def storage(request: pytest.FixtureRequest) -> str:
    if request.param == "memory":
        return "memory://"
    url: str = request.getfixturevalue("redis_url")
    return url


def limited(storage: str, **ratelimit: Any) -> dict[str, Any]:
    """Both limits at LIMIT per minute, addresses from X-Forwarded-For of the local proxy."""
    return {
        "ratelimit": {
            "storage": storage,
            "callback": f"{LIMIT}/minute",
            "initiation": f"{LIMIT}/minute",
            "trusted_proxies": ["127.0.0.1/32"],
            **ratelimit,
        }
    }


def network64() -> str:
    """A /64 no other test run uses (the documentation prefix 2001:db8::/32), without ``::``."""
    return f"2001:db8:{secrets.token_hex(2)}:{secrets.token_hex(2)}"


def unique_ipv4() -> str:
    n = uuid.uuid4().int
    return f"10.{n % 250}.{(n >> 8) % 250}.{(n >> 16) % 250 + 1}"


async def test_a_64_is_one_client_and_another_64_is_another(
    make_service: MakeService, hit: Hit, storage: str
) -> None:
    client = await make_service(limited(storage))
    net = network64()
    addresses = [f"{net}::1", f"{net}::2", f"{net}:dead:beef:0:1"]  # three /128s, one /64
    for address in addresses:
        assert await hit(client, address) != 429
    assert await hit(client, f"{net}:ffff:ffff:ffff:ffff") == 429
    assert await hit(client, f"{net}::1") == 429
    assert await hit(client, f"{network64()}::1") != 429  # another /64


async def test_an_ipv4_mapped_address_counts_as_its_ipv4_address(
    make_service: MakeService, hit: Hit, storage: str
) -> None:
    client = await make_service(limited(storage))
    ipv4 = unique_ipv4()
    for address in (ipv4, f"::ffff:{ipv4}", ipv4):
        assert await hit(client, address) != 429
    assert await hit(client, f"::ffff:{ipv4}") == 429
    assert await hit(client, ipv4) == 429
    assert await hit(client, unique_ipv4()) != 429


async def test_the_ipv6_prefix_is_configurable(
    make_service: MakeService, hit: Hit, storage: str
) -> None:
    client = await make_service(limited(storage, ipv6_prefix=48))
    net48 = network64().rsplit(":", 1)[0]  # 2001:db8:xxxx
    for subnet in ("1", "2", "ffff"):  # three /64s of one /48
        assert await hit(client, f"{net48}:{subnet}::1") != 429
    assert await hit(client, f"{net48}:abcd::99") == 429
    assert await hit(client, f"{network64().rsplit(':', 1)[0]}:1::1") != 429  # another /48


async def test_prefix_128_keys_each_address(make_service: MakeService, hit: Hit) -> None:
    client = await make_service(limited("memory://", ipv6_prefix=128))
    net = network64()
    for _ in range(LIMIT):
        assert await hit(client, f"{net}::1") != 429
    assert await hit(client, f"{net}::1") == 429
    assert await hit(client, f"{net}::2") != 429


async def test_a_trusted_proxy_hop_written_ipv4_mapped_is_still_trusted(
    make_service: MakeService, hit: Hit
) -> None:
    """A dual-stack proxy may write its own IPv4 address mapped; it is still the trusted
    127.0.0.1, so the client is the hop before it."""
    client = await make_service(limited("memory://"))
    real = unique_ipv4()
    for _ in range(LIMIT):
        assert await hit(client, f"{real}, ::ffff:127.0.0.1") != 429
    assert await hit(client, real) == 429


async def test_the_sign_in_event_keeps_the_full_ipv6_address(
    make_service: MakeService, fake_idp: FakeIdP, idp_clock: SettableClock, tmp_path: Path
) -> None:
    database = tmp_path / "authgate.db"
    client = await make_service(
        {
            "app": {"url": APP_URL, "callback_urls": [CALLBACK_URL.format(name="google")]},
            "database": {"url": f"sqlite:///{database}"},
            "ratelimit": {"trusted_proxies": ["127.0.0.1/32"]},
            "providers": {"google": fake_idp.config("google")},
        },
        clock=idp_clock,
    )
    address = f"{network64()}:1234:5678:9abc:def0"
    signin = SignIn(client, fake_idp, idp_clock)
    response = await signin.complete(
        user=FakeUser(sub="v6"), intent="register", headers={"X-Forwarded-For": address}
    )
    assert response.status == 302
    with sqlite3.connect(database) as db:
        rows = db.execute("SELECT client_address FROM sign_in_events").fetchall()
    # The full address, in its canonical text form (leading zeros of a group dropped).
    assert rows == [(str(ipaddress.ip_address(address)),)]


@pytest.mark.parametrize("prefix", [0, 129, -1])
def test_an_ipv6_prefix_out_of_range_is_a_one_line_config_error(
    tmp_path: Path, prefix: int
) -> None:
    with pytest.raises(ConfigError) as raised:
        load_config(tmp_path, {"ratelimit": {"ipv6_prefix": prefix}})
    assert str(raised.value) == "ratelimit.ipv6_prefix: must be between 1 and 128"


@pytest.mark.parametrize("seconds", [0, -1, 31])
def test_a_redis_timeout_out_of_range_is_a_one_line_config_error(
    tmp_path: Path, seconds: float
) -> None:
    with pytest.raises(ConfigError) as raised:
        load_config(tmp_path, {"ratelimit": {"redis_timeout_seconds": seconds}})
    assert str(raised.value) == ("ratelimit.redis_timeout_seconds: must be above 0 and at most 30")


def test_a_trusted_proxy_that_is_no_network_is_a_one_line_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as raised:
        load_config(tmp_path, {"ratelimit": {"trusted_proxies": ["10.0.0.0/8", "proxy.local"]}})
    assert str(raised.value) == (
        "ratelimit.trusted_proxies: 'proxy.local' is not an address or network"
    )
