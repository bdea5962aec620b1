"""Static files of the demo and docs pages, and the headers they are served with."""

from __future__ import annotations

from pathlib import Path

from aiohttp import web

# The folder beside this module, not importlib.resources: that would load zipfile, and the
# readers of every package kind, into the service for three small files (docs/benchmarks.md).
STATIC = Path(__file__).resolve().parent / "static"

CONTENT_TYPES = {
    ".html": "text/html",
    ".css": "text/css",
    ".js": "text/javascript",
    ".map": "application/json",
    ".png": "image/png",
    ".svg": "image/svg+xml",
}


def read_static(name: str) -> bytes:
    """A file of ``static/`` in this package."""
    return (STATIC / name).read_bytes()


def stylesheet() -> bytes:
    """The demo's stylesheet as served: the look every page shares (the provider's pages
    inline the same text), then the demo's own rules."""
    from authgate.entrypoints.http.common.look import LOOK

    return LOOK.encode() + read_static("demo.css")


def content_type(name: str) -> str:
    for suffix, kind in CONTENT_TYPES.items():
        if name.endswith(suffix):
            return kind
    return "application/octet-stream"


def page_headers(csp: str) -> dict[str, str]:
    return {
        "Content-Security-Policy": csp,
        "X-Frame-Options": "DENY",
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "same-origin",
        "Cache-Control": "no-store",
    }


def static_response(name: str, body: bytes) -> web.Response:
    return web.Response(
        body=body,
        content_type=content_type(name),
        charset="utf-8" if not name.endswith(".png") else None,
        headers={"X-Content-Type-Options": "nosniff", "Cache-Control": "no-cache"},
    )
