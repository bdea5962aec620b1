"""``/docs``: Swagger UI over ``/openapi.json``, from the ``swagger-ui-bundle`` package's files.

Nothing is fetched from elsewhere at run time: the page's script turns off Swagger UI's online
validator, and the content security policy would block any other origin anyway.
"""

from __future__ import annotations

from importlib.util import find_spec
from pathlib import Path

from aiohttp import web

from authgate.entrypoints.demo.assets import (
    Handler,
    content_type,
    html_page,
    read_static,
    static_file,
)

DOCS_PATH = "/docs"
SWAGGER_FILES = (
    "swagger-ui.css",
    "swagger-ui.css.map",
    "swagger-ui-bundle.js",
    "swagger-ui-bundle.js.map",
    "favicon-16x16.png",
    "favicon-32x32.png",
)
# Swagger UI sets inline styles and shows data: images.
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; connect-src 'self'; font-src 'self'; base-uri 'none'; "
    "form-action 'self'; frame-ancestors 'none'"
)


def mount_docs(app: web.Application) -> None:
    """Add ``/docs`` and its assets to ``app``."""
    page = html_page(read_static("docs.html"), CSP)
    folder = swagger_ui_folder()
    app.router.add_get(DOCS_PATH, page)
    app.router.add_get(f"{DOCS_PATH}/", page)
    app.router.add_get(
        f"{DOCS_PATH}/assets/docs.js", static_file("docs.js", read_static("docs.js"))
    )
    for name in SWAGGER_FILES:
        app.router.add_get(f"{DOCS_PATH}/assets/{name}", _file(folder / name))


def swagger_ui_folder() -> Path:
    """The Swagger UI distribution inside the ``swagger-ui-bundle`` package (found, not
    imported: its ``__init__`` loads importlib.resources, which the service does not need)."""
    spec = find_spec("swagger_ui_bundle")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("the swagger-ui-bundle package is not installed")
    vendor = Path(next(iter(spec.submodule_search_locations))) / "vendor"
    folders = sorted(p for p in vendor.iterdir() if p.name.startswith("swagger-ui-"))
    if not folders:
        raise FileNotFoundError(f"no Swagger UI distribution in {vendor}")
    return folders[-1]


def _file(path: Path) -> Handler:
    async def serve(request: web.Request) -> web.StreamResponse:
        return web.FileResponse(
            path,
            headers={
                "Content-Type": content_type(path.name),
                "X-Content-Type-Options": "nosniff",
                "Cache-Control": "public, max-age=86400",
            },
        )

    return serve
