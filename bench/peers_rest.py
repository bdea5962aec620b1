"""The REST layer benchmark's peers: the same endpoint as ``bench/rest_layer.py`` serves, written
the way each framework's documentation declares it, and served by uvicorn.

``GET /items/{id}?view=...``: ``id`` must match ``ID_REGEX``, ``view`` is a required, repeatable
query parameter whose values must match ``VIEW_REGEX``; the answer is a small JSON object (the
first ``view``), and a bad parameter answers 400 ``{"error": "<what> in <where>: <name>"}``, the
wording of the service's contract (spec 7.3), instead of each framework's own error body.

    fastapi-h11   FastAPI on uvicorn with the pure-Python h11 parser and asyncio's loop (the
                  stack first measured, kept for continuity)
    fastapi       FastAPI on uvicorn[standard]: httptools parser, uvloop
    litestar      Litestar on uvicorn[standard] (what ``litestar run`` starts)
    blacksheep    BlackSheep on uvicorn[standard] (the server its documentation deploys with)
"""

# No ``from __future__ import annotations``: the frameworks read the annotations at run time.
import re
import socket
from typing import Any

ID_REGEX = r"^\d{1,10}$"
VIEW_REGEX = r"^(brief|full)$"

PEERS = ("fastapi-h11", "fastapi", "litestar", "blacksheep")


def _error_text(missing: bool, where: str, name: str) -> str:
    what = "missing required request parameter" if missing else "invalid parameter value"
    return f"{what} in {where}: {name}"


def fastapi_app() -> Any:
    from typing import Annotated

    from fastapi import FastAPI, Path, Query, Request
    from fastapi.exceptions import RequestValidationError
    from fastapi.responses import JSONResponse
    from pydantic import BaseModel, StringConstraints

    class ItemModel(BaseModel):
        id: str
        name: str
        view: str
        price_cents: int
        tags: list[str]

    app = FastAPI(openapi_url=None, docs_url=None, redoc_url=None)

    @app.exception_handler(RequestValidationError)
    async def as_400(_: Request, exc: RequestValidationError) -> JSONResponse:
        # The contract's wording instead of FastAPI's 422 detail list.
        first = exc.errors()[0]
        where, name = first["loc"][0], first["loc"][1]
        text = _error_text(first["type"] == "missing", where, name)
        return JSONResponse({"error": text}, status_code=400)

    View = Annotated[str, StringConstraints(pattern=VIEW_REGEX)]

    @app.get("/items/{id}", response_model=ItemModel)
    async def get_item(
        id: Annotated[str, Path(pattern=ID_REGEX)],
        view: Annotated[list[View], Query()],
    ) -> ItemModel:
        return ItemModel(id=id, name=f"item {id}", view=view[0], price_cents=1999, tags=["a", "b"])

    return app


def litestar_app() -> Any:
    from typing import Annotated

    import msgspec
    from litestar import Litestar, Request, Response, get
    from litestar.exceptions import ValidationException
    from litestar.params import Parameter

    # A msgspec Struct: Litestar's fastest (and documented) way to declare a response.
    class ItemStruct(msgspec.Struct):
        id: str
        name: str
        view: str
        price_cents: int
        tags: list[str]

    View = Annotated[str, msgspec.Meta(pattern=VIEW_REGEX)]

    @get("/items/{id:str}")
    async def get_item(
        id: Annotated[str, Parameter(pattern=ID_REGEX)],
        view: Annotated[list[View], Parameter(query="view")],
    ) -> ItemStruct:
        return ItemStruct(id=id, name=f"item {id}", view=view[0], price_cents=1999, tags=["a", "b"])

    missing = re.compile(r"^Missing required (\w+) parameter '([^']*)'")

    def as_400(_: Request[Any, Any, Any], exc: ValidationException) -> Response[Any]:
        # The contract's wording instead of Litestar's detail and extra list.
        if isinstance(exc.extra, list) and exc.extra:
            first = exc.extra[0]
            text = _error_text(False, str(first["source"].value), first["key"])
        elif m := missing.match(exc.detail):
            text = _error_text(True, m[1], m[2])
        else:
            text = "invalid request"
        return Response({"error": text}, status_code=400)

    return Litestar(
        [get_item], exception_handlers={ValidationException: as_400}, openapi_config=None
    )


def blacksheep_app() -> Any:
    from blacksheep import Application, FromQuery, json

    # BlackSheep binds and converts parameters but has no pattern constraints of its own: the
    # checks are written by hand in the handler, as its documentation does (the cheapest way).
    id_re = re.compile(ID_REGEX)
    view_re = re.compile(VIEW_REGEX)
    app = Application(show_error_details=False)

    def error(text: str) -> Any:
        return json({"error": text}, status=400)

    @app.router.get("/items/{id}")
    async def get_item(id: str, view: FromQuery[list[str]]) -> Any:
        if id_re.search(id) is None:
            return error(_error_text(False, "path", "id"))
        views = view.value
        if not views:
            return error(_error_text(True, "query", "view"))
        for v in views:
            if view_re.search(v) is None:
                return error(_error_text(False, "query", "view"))
        return json(
            {
                "id": id,
                "name": f"item {id}",
                "view": views[0],
                "price_cents": 1999,
                "tags": ["a", "b"],
            }
        )

    return app


def serve_peer(kind: str, sock: socket.socket) -> None:
    """Serve ``kind`` with uvicorn on the bound, listening ``sock`` until SIGTERM."""
    import uvicorn

    app = {
        "fastapi-h11": fastapi_app,
        "fastapi": fastapi_app,
        "litestar": litestar_app,
        "blacksheep": blacksheep_app,
    }[kind]()
    standard = kind != "fastapi-h11"
    config = uvicorn.Config(
        app,
        log_level="warning",
        access_log=False,
        # Named explicitly, so that neither row depends on what happens to be installed.
        loop="uvloop" if standard else "asyncio",
        http="httptools" if standard else "h11",
        # No websockets, nothing else started; one process (no --workers), as every server here.
        ws="none",
    )
    # Server.run (not serve) sets up the loop the config names.
    uvicorn.Server(config).run(sockets=[sock])
