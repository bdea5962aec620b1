"""Where the provider may connect to fetch what a stranger names (a client ID metadata
document and its keys): the addresses it never connects to, checked on every resolved address,
and a resolver that hands the connector only checked addresses, so the connection goes to the
address that was checked (no second lookup for a DNS answer to change in between).

In production only public unicast addresses are allowed: never private (RFC 1918, unique-local
fc00::/7), loopback, link-local, multicast, unspecified, reserved or shared (100.64.0.0/10)
ones, nor an IPv6 address that carries one of those IPv4 addresses (IPv4-mapped, 6to4, Teredo,
NAT64). Outside production loopback is allowed besides, for tests and local clients."""

from __future__ import annotations

import ipaddress
import socket

from aiohttp.abc import AbstractResolver, ResolveResult
from aiohttp.resolver import ThreadedResolver

IpAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

_NAT64 = ipaddress.ip_network("64:ff9b::/96")


def address_problem(address: IpAddress, *, allow_loopback: bool = False) -> str | None:
    """Why the provider must not connect to ``address``, or None when it may."""
    embedded = _embedded_ipv4(address)
    if embedded is not None:
        problem = address_problem(embedded, allow_loopback=allow_loopback)
        return None if problem is None else f"carries {embedded}, which {problem}"
    if address.is_loopback:
        return None if allow_loopback else "is a loopback address"
    for refused, what in (
        (address.is_unspecified, "is the unspecified address"),
        (address.is_multicast, "is a multicast address"),
        (address.is_link_local, "is a link-local address"),
        (isinstance(address, ipaddress.IPv6Address) and address.is_site_local, "is site-local"),
        (address.is_private, "is a private address"),
        (address.is_reserved, "is a reserved address"),
        (not address.is_global, "is not a public address"),
    ):
        if refused:
            return what
    return None


def _embedded_ipv4(address: IpAddress) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 one stands for (IPv4-mapped, 6to4, Teredo's client, NAT64)."""
    if not isinstance(address, ipaddress.IPv6Address):
        return None
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address.teredo is not None:
        return address.teredo[1]
    if address in _NAT64:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def host_address_problem(host: str, *, allow_loopback: bool) -> str | None:
    """Why a URL's host that is an address literal is refused (None: allowed, or a name)."""
    try:
        address = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return None
    problem = address_problem(address, allow_loopback=allow_loopback)
    return None if problem is None else f"{address} {problem}"


class RefusedAddress(OSError):
    """A host name resolved to an address the policy refuses (the connector reports it as a
    failed lookup)."""


class CheckedResolver(AbstractResolver):
    """Resolves as ``inner`` does, then refuses the whole answer when any address in it is
    refused: the connector tries the answer's addresses in turn, so each must be allowed."""

    def __init__(self, *, allow_loopback: bool, inner: AbstractResolver | None = None) -> None:
        self._allow_loopback = allow_loopback
        self._inner = inner if inner is not None else ThreadedResolver()

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        answer = await self._inner.resolve(host, port, family)
        for result in answer:
            address = ipaddress.ip_address(result["host"])
            problem = address_problem(address, allow_loopback=self._allow_loopback)
            if problem is not None:
                raise RefusedAddress(f"{host} resolves to {address}, which {problem}")
        return answer

    async def close(self) -> None:
        await self._inner.close()

    def __repr__(self) -> str:
        return f"CheckedResolver(allow_loopback={self._allow_loopback})"
