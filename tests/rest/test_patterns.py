"""A declared ``pattern`` means what the OpenAPI document says: ECMA-262, not Python's ``re``.

Python's ``$`` also matches before a final newline and its ``\\d`` matches every Unicode digit;
ECMA-262's do not. A value the published pattern refuses gets the spec's 400 and the operation
does not run, whatever the parameter's location.
"""

from __future__ import annotations

import re

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient

from authgate.entrypoints.rest import Api, Call, Param, cookie, header, path, pattern, query
from authgate.entrypoints.rest.params import ecma_regex

from .conftest import Serve

Client = TestClient[web.Request, web.Application]


def counting_api(param: Param, shape: str = "/items") -> tuple[Api, list[str]]:
    """One operation declaring ``param``; it records each run."""
    api = Api("Example", "1.0.0")
    runs: list[str] = []

    @api.operation("GET", shape, params=[param])
    async def op(call: Call[None]) -> None:
        runs.append("ran")

    return api, runs


async def refused(client: Client, runs: list[str], location: str, name: str, **kw: str) -> None:
    resp = await client.get(kw.pop("url", "/items"), headers=kw or None)
    assert resp.status == 400, await resp.text()
    assert await resp.json() == {"error": f"invalid parameter value in {location}: {name}"}
    assert runs == []


async def test_dollar_refuses_a_trailing_newline_in_a_query(serve: Serve) -> None:
    api, runs = counting_api(query("intent", pattern(r"^(login|register)$")))
    client = await serve(api)
    await refused(client, runs, "query", "intent", url="/items?intent=login%0A")
    assert (await client.get("/items?intent=login")).status == 204
    assert runs == ["ran"]


async def test_dollar_refuses_a_trailing_newline_in_a_path(serve: Serve) -> None:
    api, runs = counting_api(path("kind", pattern(r"^(a|b)$")), "/items/{kind}")
    client = await serve(api)
    await refused(client, runs, "path", "kind", url="/items/a%0A")
    assert (await client.get("/items/a")).status == 204


async def test_dollar_refuses_a_trailing_newline_in_a_cookie(serve: Serve) -> None:
    api, runs = counting_api(cookie("mode", pattern(r"^(a|b)$")))
    client = await serve(api)
    # A quoted cookie value's octal escape decodes to a newline (RFC 2109 quoting).
    await refused(client, runs, "cookie", "mode", Cookie='mode="a\\012"')
    assert (await client.get("/items", headers={"Cookie": "mode=a"})).status == 204


async def test_digit_class_refuses_non_ascii_digits_in_a_header(serve: Serve) -> None:
    # A header cannot carry a newline; a non-ASCII digit is what Python's \d admits there.
    api, runs = counting_api(header("X-Count", pattern(r"^\d+$")))
    client = await serve(api)
    await refused(client, runs, "header", "X-Count", **{"X-Count": "١٢"})
    assert (await client.get("/items", headers={"X-Count": "12"})).status == 204


async def test_digit_class_refuses_non_ascii_digits_in_a_query(serve: Serve) -> None:
    api, runs = counting_api(query("n", pattern(r"^\d+$")))
    client = await serve(api)
    await refused(client, runs, "query", "n", url="/items?n=%D9%A1%D9%A2")  # "١٢"


async def test_word_class_is_ascii(serve: Serve) -> None:
    api, runs = counting_api(query("n", pattern(r"^\w+$")))
    client = await serve(api)
    await refused(client, runs, "query", "n", url="/items?n=%C3%A9")  # "é"
    assert (await client.get("/items?n=a_1")).status == 204


@pytest.mark.parametrize("declared", [r"^a\$$", r"^a[$]$"])
async def test_an_escaped_or_class_dollar_is_a_literal_dollar(serve: Serve, declared: str) -> None:
    api, runs = counting_api(query("p", pattern(declared)))
    client = await serve(api)
    await refused(client, runs, "query", "p", url="/items?p=a")
    await refused(client, runs, "query", "p", url="/items?p=a%24%0A")
    assert (await client.get("/items?p=a%24")).status == 204


async def test_the_document_keeps_the_pattern_as_declared(serve: Serve) -> None:
    declared = r"^(a|b)$"
    api, _ = counting_api(query("p", pattern(declared)))
    client = await serve(api)
    doc = await (await client.get("/openapi.json")).json()
    (param,) = doc["paths"]["/items"]["get"]["parameters"]
    assert param["schema"] == {"type": "string", "pattern": declared}


async def test_patterns_are_searched_not_anchored(serve: Serve) -> None:
    # OpenAPI patterns are not implicitly anchored (ECMA-262 RegExp.test).
    api, _ = counting_api(query("p", pattern(r"b\d")))
    client = await serve(api)
    assert (await client.get("/items?p=ab1c")).status == 204
    assert (await client.get("/items?p=ab")).status == 400


@pytest.mark.parametrize(
    ("declared", "admitted", "refused_values"),
    [
        (r"^(a|b)$", ["a", "b"], ["a\n", "c"]),
        (r"^\d+$", ["0129"], ["١٢", "1\n", "²"]),
        (r"^a.c$", ["abc"], ["a\nc", "a\rc", "a\u2028c", "a\u2029c"]),
        (r"^\s$", [" ", "\t", "\ufeff", "\u00a0"], ["\x1c", "\x85"]),
        (r"^\S+$", ["ab"], ["a b", "a\ufeff"]),
        (r"^[\w-]+$", ["a_b-9"], ["é", "a b"]),
        (r"[]", [], ["", "a"]),
        (r"^[^]$", ["\n", "x"], ["", "xy"]),
        (r"^[a[&~|]$", ["[", "&", "~", "|", "a"], ["b"]),
        (r"\bab\b", ["x ab y"], ["xab", "ab_"]),
    ],
)
def test_ecma_translation(declared: str, admitted: list[str], refused_values: list[str]) -> None:
    compiled = ecma_regex(declared)
    for value in admitted:
        assert compiled.search(value), (declared, value)
    for value in refused_values:
        assert compiled.search(value) is None, (declared, value)


def test_an_untranslatable_pattern_is_refused_at_declaration() -> None:
    with pytest.raises(ValueError, match="not supported"):
        pattern(r"^[\S]+$")
    with pytest.raises(re.error):
        pattern(r"^(a$")
