"""Facts about the caller of a request: its address (behind trusted proxies), the key the rate
limits count it by (and the refusal of one over its limit), and what it accepts."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

from aiohttp import web

from authgate.domain.model import ClientInfo
from authgate.entrypoints.http.common.errors import rate_limited
from authgate.ports.metrics import LimitName, Metrics
from authgate.ports.ratelimit import RateLimiter

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def _unmapped(
    ip: ipaddress.IPv4Address | ipaddress.IPv6Address,
) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    """``::ffff:a.b.c.d`` as ``a.b.c.d``: a dual-stack socket or proxy writes IPv4 clients so."""
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    return ip


_KEYS_KEPT = 4096


class ClientAddress:
    """The client's address: the peer, or behind a trusted proxy the right-most
    ``X-Forwarded-For`` entry that is not a trusted proxy (a client can write the left-most)."""

    def __init__(self, trusted_proxies: Iterable[str], ipv6_prefix: int = 64) -> None:
        self._trusted: tuple[Network, ...] = tuple(
            ipaddress.ip_network(p, strict=False) for p in trusted_proxies
        )
        self._ipv6_prefix = ipv6_prefix
        # limit_key's answers (parsing costs more than the rest of the key); emptied when full.
        self._keys: dict[str, str] = {}

    def _is_trusted(self, address: str) -> bool:
        try:
            ip = _unmapped(ipaddress.ip_address(address.strip()))
        except ValueError:
            return False
        return any(ip in net for net in self._trusted)

    def of(self, request: web.Request) -> str:
        """The client's full address, as the sign-in event records it."""
        peer = request.remote or "unknown"
        if not self._trusted or not self._is_trusted(peer):
            return peer
        hops = [
            h.strip()
            for value in request.headers.getall("X-Forwarded-For", ())
            for h in value.split(",")
        ]
        for hop in reversed(hops):
            if not hop:
                continue
            if not self._is_trusted(hop):
                try:
                    return str(ipaddress.ip_address(hop))
                except ValueError:
                    return peer  # garbage from a proxy: fall back to the proxy itself
        return peer

    def client(self, request: web.Request, address: str | None = None) -> ClientInfo:
        """The client as the audit trail records it: its address (``address``, when known
        already) and its ``User-Agent``."""
        return ClientInfo(address or self.of(request), request.headers.get("User-Agent"))

    def limit_key(self, address: str) -> str:
        """The rate-limit key of an address: an IPv6 address as its network of ``ipv6_prefix``
        bits (one client holds a whole /64: exact addresses would give it 2^64 budgets)."""
        key = self._keys.get(address)
        if key is None:
            key = self._limit_key(address)
            if len(self._keys) >= _KEYS_KEPT:
                self._keys.clear()
            self._keys[address] = key
        return key

    def _limit_key(self, address: str) -> str:
        try:
            ip = _unmapped(ipaddress.ip_address(address))
        except ValueError:
            return address
        if isinstance(ip, ipaddress.IPv4Address):
            return str(ip)
        # From the integer: a scoped address (fe80::1%eth0) keys as its network, zone dropped.
        return str(ipaddress.IPv6Network((int(ip), self._ipv6_prefix), strict=False))


async def admit(
    limiter: RateLimiter, key: str, metrics: Metrics, limit: LimitName, refusal: str
) -> None:
    """Count one request of the client ``key`` against ``limiter``; over the limit, 429
    ``rate_limited`` with ``refusal`` (docs/security.md, "Rate limits")."""
    decision = await limiter.hit(key)
    if not decision.allowed:
        metrics.rate_limited(limit)
        raise rate_limited(decision, refusal)


def _quality(accept: str, media: str) -> float:
    """The q-value ``accept`` gives ``media`` (exact type, type/*, */*; most specific wins)."""
    best_specificity, best_q = -1, 0.0
    major = media.split("/")[0]
    for part in accept.split(","):
        fields = [f.strip() for f in part.split(";")]
        kind = fields[0].lower()
        q = 1.0
        for f in fields[1:]:
            if f.lower().startswith("q="):
                try:
                    q = float(f[2:])
                except ValueError:
                    q = 0.0
        if kind == media:
            specificity = 2
        elif kind == f"{major}/*":
            specificity = 1
        elif kind == "*/*":
            specificity = 0
        else:
            continue
        if specificity > best_specificity:
            best_specificity, best_q = specificity, q
    return best_q


def prefers_html(request: web.Request) -> bool:
    """A browser navigation: Accept ranks text/html above application/json."""
    accept = request.headers.get("Accept", "")
    return _quality(accept, "text/html") > _quality(accept, "application/json")


def accepts_only_json(request: web.Request) -> bool:
    """An API client: Accept admits application/json and not text/html."""
    accept = request.headers.get("Accept", "")
    return _quality(accept, "application/json") > 0 and _quality(accept, "text/html") == 0
