"""Static files of the demo and docs pages, and the handlers that serve them."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from aiohttp import web

from authgate.domain.redirects import origin

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

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
    return CONTENT_TYPES.get(Path(name).suffix, "application/octet-stream")


def html_page(body: bytes, csp: str, only_at: str | None = None) -> Handler:
    """Serves the page ``body`` under ``csp``; with ``only_at`` (an origin), a request made to
    another origin continues there."""

    async def serve(request: web.Request) -> web.StreamResponse:
        if only_at is not None and origin(f"{request.scheme}://{request.host}") != only_at:
            raise web.HTTPFound(only_at + request.rel_url.path_qs)
        return web.Response(
            body=body,
            content_type="text/html",
            charset="utf-8",
            headers={
                "Content-Security-Policy": csp,
                "X-Frame-Options": "DENY",
                "X-Content-Type-Options": "nosniff",
                "Referrer-Policy": "same-origin",
                "Cache-Control": "no-store",
            },
        )

    return serve


def static_file(name: str, body: bytes) -> Handler:
    async def serve(request: web.Request) -> web.StreamResponse:
        return web.Response(
            body=body,
            content_type=content_type(name),
            charset="utf-8" if not name.endswith(".png") else None,
            headers={"X-Content-Type-Options": "nosniff", "Cache-Control": "no-cache"},
        )

    return serve


def json_document(document: Any) -> Handler:
    async def serve(request: web.Request) -> web.StreamResponse:
        return web.json_response(document, headers={"Cache-Control": "no-store"})

    return serve
