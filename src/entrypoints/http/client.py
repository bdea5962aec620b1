"""Facts about the calling client: its address (behind trusted proxies) and what it accepts."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

from aiohttp import web

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


class ClientAddress:
    """The client's address: the peer, or — only when the peer is a trusted proxy — the
    right-most ``X-Forwarded-For`` entry that is not itself a trusted proxy. A client cannot
    choose its own address by sending the header: the left-most entries are never believed."""

    def __init__(self, trusted_proxies: Iterable[str]) -> None:
        self._trusted: tuple[Network, ...] = tuple(
            ipaddress.ip_network(p, strict=False) for p in trusted_proxies
        )

    def _is_trusted(self, address: str) -> bool:
        try:
            ip = ipaddress.ip_address(address.strip())
        except ValueError:
            return False
        return any(ip in net for net in self._trusted)

    def of(self, request: web.Request) -> str:
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
