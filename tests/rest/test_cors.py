"""The REST layer's CORS option (``cors=Cors([...])``), on an API of its own: exact origins,
preflights only where an operation opted in, one policy per path, static paths before
templated ones, every answer (an unexpected 500 included) with its headers, and the OpenAPI
document unchanged."""

from __future__ import annotations

import pytest

from authgate.entrypoints.rest import Api, Call, Cors, path
from tests.rest.conftest import Serve

SITE = "https://app.example"
CORS = Cors([SITE + ":443"], expose_headers=("WWW-Authenticate",), max_age=60)


def make_api() -> Api:
    api = Api("CORS", "1.0.0")

    @api.operation("GET", "/things/{id}", params=[path("id")], cors=CORS)
    async def get_thing(call: Call[None]) -> None:
        if call.path["id"] == "boom":
            raise RuntimeError("unexpected")

    @api.operation("DELETE", "/things/{id}", params=[path("id")], cors=CORS)
    async def delete_thing(call: Call[None]) -> None:
        return None

    @api.operation("POST", "/things/special")
    async def special(call: Call[None]) -> None:
        return None

    @api.operation("GET", "/plain")
    async def plain(call: Call[None]) -> None:
        return None

    return api


PREFLIGHT = {"Origin": SITE, "Access-Control-Request-Method": "DELETE"}


async def test_preflight_and_actual_answers(serve: Serve) -> None:
    client = await serve(make_api())
    response = await client.options("/things/1", headers=PREFLIGHT)
    assert response.status == 204
    assert response.headers["Access-Control-Allow-Origin"] == SITE
    assert response.headers["Access-Control-Allow-Methods"] == "DELETE, GET"
    assert response.headers["Access-Control-Max-Age"] == "60"
    for method in ("GET", "DELETE"):
        answer = await client.request(method, "/things/1", headers={"Origin": SITE})
        assert answer.status == 204
        assert answer.headers["Access-Control-Allow-Origin"] == SITE
        assert answer.headers["Access-Control-Allow-Credentials"] == "true"
        assert answer.headers["Access-Control-Expose-Headers"] == "WWW-Authenticate"
        assert answer.headers["Vary"] == "Origin"


async def test_an_unexpected_error_carries_the_cors_headers(serve: Serve) -> None:
    client = await serve(make_api())
    answer = await client.get("/things/boom", headers={"Origin": SITE})
    assert answer.status == 500
    assert answer.headers["Access-Control-Allow-Origin"] == SITE


async def test_a_static_sibling_keeps_its_own_methods(serve: Serve) -> None:
    client = await serve(make_api())
    # /things/special is a static path (no CORS) beside the templated CORS path.
    response = await client.options("/things/special", headers=PREFLIGHT)
    assert response.status == 405
    assert response.headers["Allow"] == "POST"
    assert "Access-Control-Allow-Origin" not in response.headers
    answer = await client.post("/things/special", headers={"Origin": SITE})
    assert "Access-Control-Allow-Origin" not in answer.headers
    assert "Vary" not in answer.headers


async def test_without_cors_nothing_changes(serve: Serve) -> None:
    client = await serve(make_api())
    response = await client.options("/plain", headers=PREFLIGHT)
    assert response.status == 405
    assert response.headers["Allow"] == "GET"
    answer = await client.get("/plain", headers={"Origin": SITE})
    assert "Access-Control-Allow-Origin" not in answer.headers and "Vary" not in answer.headers


def test_the_document_has_no_preflight() -> None:
    document = make_api().openapi()
    assert all("options" not in item for item in document["paths"].values())


def test_one_policy_per_path_and_origins_only() -> None:
    api = make_api()
    with pytest.raises(ValueError, match="different CORS policies"):

        @api.operation("PUT", "/things/{id}", params=[path("id")], cors=Cors([SITE + ":8443"]))
        async def put_thing(call: Call[None]) -> None:
            return None

    for bad in ("*", "https://app.example/path", "app.example", "null"):
        with pytest.raises(ValueError, match="not an origin"):
            Cors([bad])
    with pytest.raises(TypeError):
        Cors(SITE)  # type: ignore[arg-type]


async def test_without_credentials_no_credentials_header_and_cookies_are_not_refused(
    serve: Serve,
) -> None:
    api = Api("CORS", "1.0.0")
    uncredentialed = Cors([SITE], credentials=False)

    @api.operation("POST", "/tokens", cors=uncredentialed)
    async def tokens(call: Call[None]) -> None:
        return None

    client = await serve(api)
    preflight = {"Origin": SITE, "Access-Control-Request-Method": "POST"}
    response = await client.options("/tokens", headers=preflight)
    assert response.status == 204
    assert response.headers["Access-Control-Allow-Origin"] == SITE
    assert "Access-Control-Allow-Credentials" not in response.headers
    answer = await client.post("/tokens", headers={"Origin": SITE})
    assert answer.headers["Access-Control-Allow-Origin"] == SITE
    assert "Access-Control-Allow-Credentials" not in answer.headers
    # The operation reads no cookie: one a browser attaches for another origin's page is no
    # reason to refuse it (and that page gets no CORS headers to read the answer with).
    other = await client.post(
        "/tokens", headers={"Origin": "https://elsewhere.example", "Cookie": "session=x"}
    )
    assert other.status == 204
    assert "Access-Control-Allow-Origin" not in other.headers
    refused = {**preflight, "Origin": "https://elsewhere.example"}
    assert (await client.options("/tokens", headers=refused)).status == 403
