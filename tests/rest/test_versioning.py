"""Versioning: a version segment in the path, or the required API-Version header (spec 9.3)."""

from __future__ import annotations

import attrs
import pytest

from authgate.entrypoints.rest import API_VERSION_HEADER, Api, Call, header

from .conftest import Serve


@attrs.frozen
class Greeting:
    text: str


async def test_path_versioned_groups(serve: Serve) -> None:
    api = Api("Example", "2.0.0")
    v1 = api.group("/api/v1")
    v2 = api.group("/api/v2")

    @v1.operation("GET", "/greetings/{name}", response=Greeting)
    async def greet_v1(call: Call[None]) -> Greeting:
        return Greeting(f"hello {call.path['name']}")

    @v2.operation("GET", "/greetings/{name}", response=Greeting)
    async def greet_v2(call: Call[None]) -> Greeting:
        return Greeting(f"HELLO {call.path['name'].upper()}")

    client = await serve(api)
    assert await (await client.get("/api/v1/greetings/ada")).json() == {"text": "hello ada"}
    assert await (await client.get("/api/v2/greetings/ada")).json() == {"text": "HELLO ADA"}
    assert (await client.get("/greetings/ada")).status == 404
    assert (await client.get("/api/v3/greetings/ada")).status == 404
    assert set(api.openapi()["paths"]) >= {
        "/api/v1/greetings/{name}",
        "/api/v2/greetings/{name}",
    }


async def test_header_versioned_group(serve: Serve) -> None:
    api = Api("Example", "1.0.0")
    versioned = api.group("/v1", params=[API_VERSION_HEADER])
    runs: list[str] = []

    @versioned.operation("GET", "/greetings", response=Greeting)
    async def greet(call: Call[None]) -> Greeting:
        version = call.params.header["API-Version"]
        runs.append(version)
        return Greeting(f"hello from {version}")

    @versioned.operation("GET", "/farewells", response=Greeting)
    async def farewell(call: Call[None]) -> Greeting:
        return Greeting("bye")

    client = await serve(api)
    resp = await client.get("/v1/greetings", headers={"api-version": "v12"})
    assert resp.status == 200
    assert await resp.json() == {"text": "hello from v12"}

    resp = await client.get("/v1/greetings")
    assert resp.status == 400
    assert await resp.json() == {
        "error": "missing required request parameter in header: API-Version"
    }
    for bad in ("2", "v", "v1.0", "V1", "v1x", "xv1"):
        resp = await client.get("/v1/greetings", headers={"API-Version": bad})
        assert resp.status == 400, bad
        assert await resp.json() == {"error": "invalid parameter value in header: API-Version"}
    assert runs == ["v12"]
    # Declared once, reused: the other operation of the group requires it too.
    assert (await client.get("/v1/farewells")).status == 400
    assert (await client.get("/v1/farewells", headers={"API-Version": "v1"})).status == 200

    params = api.openapi()["paths"]["/v1/greetings"]["get"]["parameters"]
    assert params == [
        {
            "name": "API-Version",
            "in": "header",
            "required": True,
            "schema": {"type": "string", "pattern": r"^v\d+$"},
        }
    ]


def test_a_parameter_declared_twice_is_refused() -> None:
    api = Api("Example", "1.0.0")
    versioned = api.group("/v1", params=[API_VERSION_HEADER])

    async def greet(call: Call[None]) -> Greeting:
        return Greeting("hi")

    with pytest.raises(ValueError, match="header parameter api-version is declared twice"):
        versioned.operation("GET", "/greetings", params=[header("api-version")])(greet)
    assert api.operations == []
