"""Where the provider may connect for a document: the address policy on IPv4 and IPv6 (and
IPv6 forms that carry an IPv4 address), the resolver that refuses an answer holding any refused
address, the URL rules; and a service configured for production that refuses a document on
loopback, whether named by address or by a name that resolves there, and never follows a
redirect."""

from __future__ import annotations

import ipaddress
import logging
import socket
from pathlib import Path
from typing import Any

import pytest
from aiohttp.abc import AbstractResolver, ResolveResult

from authgate.adapters.openid.fetch_policy import CheckedResolver, RefusedAddress, address_problem
from authgate.adapters.openid.metadata_documents import DocumentPolicy
from tests.app.conftest import MakeService
from tests.fakeidp import FakeIdP, SettableClock
from tests.openid.conftest import op_config
from tests.openid.harness import Op

from .conftest import DocumentSite
from .test_code_flow import native
from .test_refusals import LOG, logged, refused

REFUSED = [
    ("10.1.2.3", "private"),
    ("172.16.0.1", "private"),
    ("192.168.1.1", "private"),
    ("127.0.0.1", "loopback"),
    ("127.8.9.10", "loopback"),
    ("169.254.169.254", "link-local"),  # cloud metadata services
    ("0.0.0.0", "unspecified"),
    ("224.0.0.1", "multicast"),
    ("239.255.255.250", "multicast"),
    ("100.64.0.1", "not a public address"),  # shared address space (carrier NAT)
    ("240.0.0.1", ""),  # reserved (Python counts it private)
    ("255.255.255.255", ""),
    ("::1", "loopback"),
    ("::", "unspecified"),
    ("fe80::1", "link-local"),
    ("fc00::1", "private"),
    ("fd12:3456:789a::1", "private"),
    ("ff02::1", "multicast"),
    ("fec0::1", "site-local"),
    ("::ffff:10.0.0.1", "carries 10.0.0.1"),  # IPv4-mapped
    ("::ffff:127.0.0.1", "carries 127.0.0.1"),
    ("::ffff:169.254.169.254", "carries 169.254.169.254"),
    ("2002:a00:1::", "carries 10.0.0.1"),  # 6to4
    ("64:ff9b::7f00:1", "carries 127.0.0.1"),  # NAT64
    ("2001:db8::1", ""),  # documentation
]
ALLOWED = ["93.184.215.14", "8.8.8.8", "2606:4700:4700::1111", "2a00:1450:4001:80b::200e"]


@pytest.mark.parametrize(("address", "why"), REFUSED)
def test_internal_addresses_are_refused(address: str, why: str) -> None:
    problem = address_problem(ipaddress.ip_address(address))
    assert problem is not None and why in problem


@pytest.mark.parametrize("address", ALLOWED)
def test_public_addresses_are_allowed(address: str) -> None:
    assert address_problem(ipaddress.ip_address(address)) is None
    assert address_problem(ipaddress.ip_address(address), allow_loopback=True) is None


def test_outside_production_loopback_alone_is_allowed_besides() -> None:
    for address in ("127.0.0.1", "::1", "::ffff:127.0.0.1"):
        assert address_problem(ipaddress.ip_address(address), allow_loopback=True) is None
    for address in ("10.0.0.1", "169.254.169.254", "fc00::1", "::ffff:192.168.0.1"):
        assert address_problem(ipaddress.ip_address(address), allow_loopback=True) is not None


class Answers(AbstractResolver):
    """A name server that answers what the test says."""

    def __init__(self, addresses: list[str]) -> None:
        self.addresses = addresses

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        return [
            ResolveResult(
                hostname=host,
                host=a,
                port=port,
                family=socket.AF_INET6 if ":" in a else socket.AF_INET,
                proto=0,
                flags=socket.AI_NUMERICHOST,
            )
            for a in self.addresses
        ]

    async def close(self) -> None:
        return None


@pytest.mark.parametrize(
    "addresses",
    [
        ["10.0.0.7"],
        ["93.184.215.14", "127.0.0.1"],
        ["2606:4700::1", "fd00::1"],
        ["::ffff:10.0.0.1"],
    ],
)
async def test_an_answer_holding_a_refused_address_is_refused(addresses: list[str]) -> None:
    resolver = CheckedResolver(allow_loopback=False, inner=Answers(addresses))
    with pytest.raises(RefusedAddress, match=r"tools\.example\.net resolves to"):
        await resolver.resolve("tools.example.net", 443)


async def test_a_public_answer_is_handed_on_as_it_was_checked() -> None:
    addresses = ["93.184.215.14", "2606:4700::1"]
    resolver = CheckedResolver(allow_loopback=False, inner=Answers(addresses))
    answer = await resolver.resolve("tools.example.net", 443)
    # the connector connects to these very addresses: no second lookup in between
    assert [r["host"] for r in answer] == addresses


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("http://tools.example.net/c.json", "must be an https URL"),
        ("http://127.0.0.1:8000/c.json", "must be an https URL"),
        ("https://tools.example.net", "must have a path"),
        ("https://tools.example.net/", "must have a path"),
        ("https://tools.example.net/a/../c.json", "without . or .. segments"),
        ("https://tools.example.net/./c.json", "without . or .. segments"),
        ("https://user@tools.example.net/c.json", "no user name"),
        ("https://tools.example.net/c.json#x", "fragment"),
        ("https://tools.example.net/c .json", "white space"),
        ("https://127.0.0.1/c.json", "loopback"),
        ("https://[::1]/c.json", "loopback"),
        ("https://[::ffff:a9fe:a9fe]/c.json", "carries 169.254.169.254"),
        ("https://10.0.0.1/c.json", "private"),
    ],
)
def test_production_url_rules(url: str, why: str) -> None:
    problem = DocumentPolicy(production=True, allow_any_host=True).url_problem(url)
    assert problem is not None and why in problem


def test_hosts_are_allowed_exactly() -> None:
    policy = DocumentPolicy(production=True, allowed_hosts=frozenset({"tools.example.net"}))
    assert policy.url_problem("https://tools.example.net/c.json") is None
    assert policy.url_problem("https://TOOLS.example.net/c.json") is None  # hosts are case-free
    assert policy.url_problem("https://evil.tools.example.net/c.json") is not None
    assert policy.url_problem("https://tools.example.net.evil.com/c.json") is not None


def test_outside_production_http_is_for_loopback_only() -> None:
    policy = DocumentPolicy(production=False, allow_any_host=True)
    assert policy.url_problem("http://127.0.0.1:8000/c.json") is None
    assert policy.url_problem("http://localhost:8000/c.json") is None
    assert policy.url_problem("http://[::1]:8000/c.json") is None
    assert policy.url_problem("http://tools.example.net/c.json") == "must be an https URL"
    assert "private" in (policy.url_problem("https://192.168.0.10/c.json") or "")


@pytest.fixture
async def production(
    make_service: MakeService, fake_idp: FakeIdP, idp_clock: SettableClock, tmp_path: Path
) -> Op:
    """The provider as production runs it, reading any host's documents."""
    config: dict[str, Any] = op_config(
        fake_idp,
        environment="production",
        client_metadata_documents={"enabled": True, "allow_any_host": True},
    )
    client = await make_service(config, clock=idp_clock)
    return Op(client, fake_idp, idp_clock)


async def test_production_refuses_documents_on_loopback(
    production: Op, site: DocumentSite, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, LOG)
    port = site.server.port
    cases = {
        # named by a name that resolves to loopback: refused once resolved, never connected
        f"https://localhost:{port}/clients/tool.json": "which is a loopback address",
        # an address literal
        f"https://127.0.0.1:{port}/clients/tool.json": "127.0.0.1 is a loopback address",
        f"https://[::1]:{port}/clients/tool.json": "::1 is a loopback address",
        f"https://[::ffff:127.0.0.1]:{port}/clients/tool.json": "carries 127.0.0.1",
        # legacy numeric forms of 127.0.0.1: the HTTP client refuses them before any lookup
        f"https://2130706433:{port}/clients/tool.json": "(InvalidUrlClientError)",
        f"https://127.1:{port}/clients/tool.json": "(InvalidUrlClientError)",
        # plain http
        site.url("/clients/tool.json"): "must be an https URL",
    }
    for url, why in cases.items():
        site.document("/clients/tool.json", client_id=url)
        await refused(await production.authorize(native(url)))
        assert why in logged(caplog, url)
        if "localhost" in url:
            assert "localhost resolves to" in logged(caplog, url)
    assert site.hits["/clients/tool.json"] == 0
