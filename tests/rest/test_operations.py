"""Registered operations: path shapes, the three body shapes, success statuses (spec 4.3)."""

from __future__ import annotations

import attrs
from aiohttp import web

from authgate.entrypoints.rest import Api, Call, Reply, path, pattern

from .conftest import Serve


@attrs.frozen
class Post:
    user: str
    post: str


@attrs.frozen
class NewNote:
    text: str


@attrs.frozen
class Note:
    id: int
    text: str


async def test_path_shape_with_alternating_segments(serve: Serve) -> None:
    api = Api("Example", "1.0.0")

    @api.operation(
        "GET",
        "/users/{id}/posts/{postId}",
        params=[path("id", pattern(r"^\d+$"))],
        response=Post,
    )
    async def get_post(call: Call[None]) -> Post:
        return Post(call.path["id"], call.path["postId"])

    client = await serve(api)
    resp = await client.get("/users/42/posts/Hello-World")
    assert resp.status == 200
    assert resp.content_type == "application/json"
    assert await resp.json() == {"user": "42", "post": "Hello-World"}
    # Static segments are case-as-given.
    assert (await client.get("/Users/42/posts/x")).status == 404
    # A path parameter that fails its regex: 400, exact body.
    resp = await client.get("/users/abc/posts/x")
    assert resp.status == 400
    assert await resp.json() == {"error": "invalid parameter value in path: id"}


async def test_produce_only_answers_200(serve: Serve) -> None:
    api = Api("Example", "1.0.0")

    @api.operation("GET", "/notes/{id}", response=Note)
    async def get_note(call: Call[None]) -> Note:
        assert call.body is None
        return Note(int(call.path["id"]), "hello")

    client = await serve(api)
    resp = await client.get("/notes/7")
    assert resp.status == 200
    assert await resp.json() == {"id": 7, "text": "hello"}


async def test_consume_only_answers_204_with_no_body(serve: Serve) -> None:
    api = Api("Example", "1.0.0")
    received: list[NewNote] = []

    @api.operation("PUT", "/notes/{id}", request=NewNote)
    async def put_note(call: Call[NewNote]) -> None:
        received.append(call.body)

    client = await serve(api)
    resp = await client.put("/notes/1", json={"text": "hi"})
    assert resp.status == 204
    assert await resp.read() == b""
    assert received == [NewNote("hi")]


async def test_consume_and_produce(serve: Serve) -> None:
    api = Api("Example", "1.0.0")

    @api.operation("POST", "/notes/{id}/copy", request=NewNote, response=Note)
    async def copy_note(call: Call[NewNote]) -> Note:
        return Note(int(call.path["id"]) + 1, call.body.text.upper())

    client = await serve(api)
    resp = await client.post("/notes/1/copy", json={"text": "hi"})
    assert resp.status == 200
    assert await resp.json() == {"id": 2, "text": "HI"}


async def test_custom_status_by_declaration(serve: Serve) -> None:
    api = Api("Example", "1.0.0")

    @api.operation("POST", "/notes", request=NewNote, response=Note, status=201)
    async def create_note(call: Call[NewNote]) -> Note:
        return Note(1, call.body.text)

    client = await serve(api)
    resp = await client.post("/notes", json={"text": "hi"})
    assert resp.status == 201
    assert await resp.json() == {"id": 1, "text": "hi"}


async def test_custom_status_and_headers_by_reply(serve: Serve) -> None:
    api = Api("Example", "1.0.0")

    @api.operation("POST", "/notes", request=NewNote, response=Note)
    async def create_note(call: Call[NewNote]) -> Reply[Note]:
        if call.body.text == "later":
            return Reply(status=202)
        return Reply(Note(9, call.body.text), status=201, headers={"Location": "/notes/9"})

    client = await serve(api)
    resp = await client.post("/notes", json={"text": "now"})
    assert resp.status == 201
    assert resp.headers["Location"] == "/notes/9"
    assert await resp.json() == {"id": 9, "text": "now"}
    resp = await client.post("/notes", json={"text": "later"})
    assert resp.status == 202
    assert await resp.read() == b""


async def test_raw_aiohttp_response_redirect_with_cookie(serve: Serve) -> None:
    api = Api("Example", "1.0.0")

    @api.operation("GET", "/login/done")
    async def done(call: Call[None]) -> web.StreamResponse:
        resp = web.Response(status=302, headers={"Location": "https://app.example/dashboard"})
        resp.set_cookie("session", "jwt-value", httponly=True, secure=True, samesite="Lax")
        return resp

    client = await serve(api)
    resp = await client.get("/login/done", allow_redirects=False)
    assert resp.status == 302
    assert resp.headers["Location"] == "https://app.example/dashboard"
    set_cookie = resp.headers["Set-Cookie"]
    assert set_cookie.startswith("session=jwt-value;")
    assert "HttpOnly" in set_cookie
    assert "Secure" in set_cookie
    assert "SameSite=Lax" in set_cookie


async def test_raised_redirect_passes_through(serve: Serve) -> None:
    api = Api("Example", "1.0.0")

    @api.operation("GET", "/old")
    async def old(call: Call[None]) -> None:
        raise web.HTTPMovedPermanently("/new")

    client = await serve(api)
    resp = await client.get("/old", allow_redirects=False)
    assert resp.status == 301
    assert resp.headers["Location"] == "/new"


async def test_several_methods_on_one_path(serve: Serve) -> None:
    api = Api("Example", "1.0.0")

    @api.operation("GET", "/notes/{id}", response=Note)
    async def get_note(call: Call[None]) -> Note:
        return Note(int(call.path["id"]), "got")

    @api.operation("DELETE", "/notes/{id}")
    async def delete_note(call: Call[None]) -> None:
        return None

    client = await serve(api)
    assert (await client.get("/notes/3")).status == 200
    assert (await client.delete("/notes/3")).status == 204
    resp = await client.post("/notes/3")
    assert resp.status == 405
    assert set(resp.headers["Allow"].split(",")) >= {"GET", "DELETE"}


async def test_one_handler_under_two_version_prefixes(serve: Serve) -> None:
    api = Api("Example", "1.0.0")

    async def get_note(call: Call[None]) -> Note:
        return Note(int(call.path["id"]), call.request.path.split("/")[1])

    api.group("/v1").operation("GET", "/notes/{id}", response=Note)(get_note)
    api.group("/v2").operation("GET", "/notes/{id}", response=Note)(get_note)
    client = await serve(api)
    assert await (await client.get("/v1/notes/1")).json() == {"id": 1, "text": "v1"}
    assert await (await client.get("/v2/notes/2")).json() == {"id": 2, "text": "v2"}


async def test_reply_without_a_status_keeps_the_declared_one(serve: Serve) -> None:
    api = Api("Example", "1.0.0")

    @api.operation("POST", "/notes", request=NewNote, response=Note, status=201)
    async def create_note(call: Call[NewNote]) -> Reply[Note]:
        return Reply(Note(5, call.body.text), headers={"Location": "/notes/5"})

    @api.operation("PUT", "/notes/{id}", request=NewNote)
    async def put_note(call: Call[NewNote]) -> Reply[None]:
        return Reply(headers={"ETag": '"1"'})

    client = await serve(api)
    resp = await client.post("/notes", json={"text": "hi"})
    assert resp.status == 201
    assert resp.headers["Location"] == "/notes/5"
    assert await resp.json() == {"id": 5, "text": "hi"}
    resp = await client.put("/notes/5", json={"text": "hi"})
    assert resp.status == 204
    assert resp.headers["ETag"] == '"1"'
