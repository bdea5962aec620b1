"""Declared parameters: path, query, header and cookie; validators in order (spec 4.3, 7.3)."""

from __future__ import annotations

import attrs
import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient

from authgate.entrypoints.rest import (
    Api,
    Call,
    cookie,
    header,
    path,
    pattern,
    query,
    required,
)

from .conftest import Serve

Client = TestClient[web.Request, web.Application]


@attrs.frozen
class Seen:
    path: dict[str, str]
    query: dict[str, list[str]]
    header: dict[str, str]
    cookie: dict[str, str]


def echo_api(*params: object, path_shape: str = "/items/{id}") -> tuple[Api, list[int]]:
    """An API whose one operation echoes its validated parameters and counts its runs."""
    api = Api("Example", "1.0.0")
    runs: list[int] = []

    @api.operation("GET", path_shape, params=params, response=Seen)  # type: ignore[arg-type]
    async def echo(call: Call[None]) -> Seen:
        runs.append(1)
        p = call.params
        return Seen(
            dict(p.path),
            {k: list(v) for k, v in p.query.items()},
            dict(p.header),
            dict(p.cookie),
        )

    return api, runs


async def test_repeated_query_values_are_delivered_in_order(serve: Serve) -> None:
    api, _ = echo_api(query("tag"))
    client = await serve(api)
    resp = await client.get("/items/1?tag=b&other=x&tag=a&tag=c")
    assert resp.status == 200
    assert (await resp.json())["query"] == {"tag": ["b", "a", "c"]}


async def test_absent_optional_query_is_an_empty_list(serve: Serve) -> None:
    api, runs = echo_api(query("tag", pattern(r"^[a-z]+$")))
    client = await serve(api)
    resp = await client.get("/items/1")
    assert resp.status == 200
    assert await resp.json() == {
        "path": {"id": "1"},
        "query": {"tag": []},
        "header": {},
        "cookie": {},
    }
    assert runs == [1]


async def test_header_is_matched_case_insensitively(serve: Serve) -> None:
    api, _ = echo_api(header("X-Request-Id", required))
    client = await serve(api)
    resp = await client.get("/items/1", headers={"x-REQUEST-id": "abc"})
    assert resp.status == 200
    assert (await resp.json())["header"] == {"X-Request-Id": "abc"}


async def test_cookie_is_read_from_the_cookie_header(serve: Serve) -> None:
    api, _ = echo_api(cookie("theme", required))
    client = await serve(api)
    resp = await client.get("/items/1", headers={"Cookie": "lang=en; theme=dark; x=1"})
    assert resp.status == 200
    assert (await resp.json())["cookie"] == {"theme": "dark"}


async def test_every_location_together(serve: Serve) -> None:
    api, _ = echo_api(
        path("id", pattern(r"^\d+$")),
        query("q", required),
        header("Accept-Language"),
        cookie("sid"),
    )
    client = await serve(api)
    resp = await client.get("/items/12?q=x", headers={"Accept-Language": "fr", "Cookie": "sid=s1"})
    assert await resp.json() == {
        "path": {"id": "12"},
        "query": {"q": ["x"]},
        "header": {"Accept-Language": "fr"},
        "cookie": {"sid": "s1"},
    }


MISSING = [
    (query("q", required), "/items/1", {}, "query", "q"),
    (header("X-Tenant", required), "/items/1", {}, "header", "X-Tenant"),
    (cookie("sid", required), "/items/1", {"Cookie": "other=1"}, "cookie", "sid"),
]


@pytest.mark.parametrize(("param", "url", "headers", "location", "name"), MISSING)
async def test_missing_required_parameter(
    serve: Serve,
    param: object,
    url: str,
    headers: dict[str, str],
    location: str,
    name: str,
) -> None:
    api, runs = echo_api(param)
    client = await serve(api)
    resp = await client.get(url, headers=headers)
    assert resp.status == 400
    assert resp.content_type == "application/json"
    assert await resp.json() == {
        "error": f"missing required request parameter in {location}: {name}"
    }
    assert runs == []


INVALID = [
    (path("id", pattern(r"^\d+$")), "/items/x1", {}, "path", "id"),
    (query("q", pattern(r"^[a-z]+$")), "/items/1?q=ABC", {}, "query", "q"),
    (
        header("X-Tenant", pattern(r"^t-\d+$")),
        "/items/1",
        {"X-Tenant": "t-x"},
        "header",
        "X-Tenant",
    ),
    (cookie("sid", pattern(r"^[0-9a-f]{4}$")), "/items/1", {"Cookie": "sid=zzzz"}, "cookie", "sid"),
]


@pytest.mark.parametrize(("param", "url", "headers", "location", "name"), INVALID)
async def test_invalid_parameter_value(
    serve: Serve,
    param: object,
    url: str,
    headers: dict[str, str],
    location: str,
    name: str,
) -> None:
    api, runs = echo_api(param)
    client = await serve(api)
    resp = await client.get(url, headers=headers)
    assert resp.status == 400
    assert await resp.json() == {"error": f"invalid parameter value in {location}: {name}"}
    assert runs == []


@pytest.mark.parametrize(
    ("url", "headers"),
    [("/items/1", {}), ("/items/1", {"X-Tenant": "t-1"})],
)
async def test_valid_values_pass(serve: Serve, url: str, headers: dict[str, str]) -> None:
    api, runs = echo_api(header("X-Tenant", pattern(r"^t-\d+$")))
    client = await serve(api)
    resp = await client.get(url, headers=headers)
    assert resp.status == 200
    assert runs == [1]


async def test_validators_run_in_declaration_order_first_failure_wins(serve: Serve) -> None:
    # Both parameters are wrong; the first declared one is reported.
    api, runs = echo_api(query("b", required), query("a", pattern(r"^\d+$")))
    client = await serve(api)
    resp = await client.get("/items/1?a=x")
    assert await resp.json() == {"error": "missing required request parameter in query: b"}
    api2, _ = echo_api(query("a", pattern(r"^\d+$")), query("b", required))
    client2 = await serve(api2)
    resp = await client2.get("/items/1?a=x")
    assert await resp.json() == {"error": "invalid parameter value in query: a"}
    assert runs == []


async def test_validators_of_one_parameter_run_in_order(serve: Serve) -> None:
    # pattern before required: an absent value passes the pattern, then fails required.
    api, _ = echo_api(query("q", pattern(r"^\d+$"), required))
    client = await serve(api)
    resp = await client.get("/items/1")
    assert await resp.json() == {"error": "missing required request parameter in query: q"}
    resp = await client.get("/items/1?q=x")
    assert await resp.json() == {"error": "invalid parameter value in query: q"}


async def test_absent_optional_parameter_passes_its_regex(serve: Serve) -> None:
    api, runs = echo_api(
        query("q", pattern(r"^\d+$")),
        header("X-Tenant", pattern(r"^t-\d+$")),
        cookie("sid", pattern(r"^[0-9a-f]+$")),
    )
    client = await serve(api)
    resp = await client.get("/items/1")
    assert resp.status == 200
    assert runs == [1]


async def test_every_value_of_a_repeated_parameter_must_match(serve: Serve) -> None:
    api, runs = echo_api(query("n", pattern(r"^\d+$")))
    client = await serve(api)
    resp = await client.get("/items/1?n=1&n=2&n=x&n=4")
    assert resp.status == 400
    assert await resp.json() == {"error": "invalid parameter value in query: n"}
    assert runs == []
    resp = await client.get("/items/1?n=1&n=2")
    assert resp.status == 200
    assert (await resp.json())["query"] == {"n": ["1", "2"]}


async def test_regex_is_searched_unless_anchored(serve: Serve) -> None:
    # A declared regex matches anywhere in the value (JSON Schema semantics); anchor it to
    # match the whole value. Percent-encoded values are decoded before matching.
    api, _ = echo_api(query("q", pattern(r"\d")), query("s", pattern(r"^a b$")))
    client = await serve(api)
    assert (await client.get("/items/1?q=ab1c&s=a%20b")).status == 200
    assert (await client.get("/items/1?q=abc")).status == 400


async def test_path_parameter_of_many_segments_is_decoded(serve: Serve) -> None:
    api, _ = echo_api(
        path("id"), path("postId", pattern(r"^[\w-]+$")), path_shape="/u/{id}/p/{postId}"
    )
    client = await serve(api)
    resp = await client.get("/u/a%20b/p/x-1")
    assert (await resp.json())["path"] == {"id": "a b", "postId": "x-1"}
