"""Cookie.set_on writes the Set-Cookie header itself: it must be what aiohttp's set_cookie sends."""

from __future__ import annotations

from http.cookies import CookieError

import pytest
from aiohttp import hdrs, web
from hypothesis import given
from hypothesis import strategies as st

from authgate.entrypoints.rest import Cookie
from authgate.entrypoints.rest.call import sets_cookie


def _aiohttp_value(cookie: Cookie) -> str:
    response = web.Response()
    response.set_cookie(
        cookie.name,
        cookie.value,
        max_age=cookie.max_age,
        path=cookie.path,
        secure=cookie.secure,
        httponly=cookie.httponly,
        samesite=cookie.samesite,
    )
    morsel = response.cookies[cookie.name]
    return morsel.output(header="")[1:]  # what aiohttp's _prepare_headers adds


_TEXT = st.text(st.characters(min_codepoint=0, max_codepoint=0x17F), max_size=30)
_COOKIES = st.builds(
    Cookie,
    name=st.sampled_from(["session", "__Host-authgate_binding", "a.b", "x:y"]),
    value=st.one_of(
        st.sampled_from(["", "eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiIxIn0.c2ln", "a b", 'q"t', "x;y"]),
        _TEXT,
    ),
    max_age=st.one_of(st.none(), st.integers(min_value=0, max_value=10**9)),
    path=st.one_of(st.sampled_from(["/", "/v1/auth", "/a b", "/x;y"]), _TEXT),
    secure=st.booleans(),
    httponly=st.booleans(),
    samesite=st.one_of(st.none(), st.sampled_from(["Lax", "Strict", "None", "", "x;y"])),
)


@given(_COOKIES)
def test_the_header_is_what_aiohttp_would_send(cookie: Cookie) -> None:
    assert cookie.header_value() == _aiohttp_value(cookie)


def test_the_usual_cookies_read_as_before() -> None:
    session = Cookie("session", "h.p.s", max_age=86400)
    assert session.header_value() == (
        "session=h.p.s; HttpOnly; Max-Age=86400; Path=/; SameSite=Lax; Secure"
    )
    binding = Cookie(
        "__Host-authgate_binding", "abc", max_age=600, path="/v1/auth", samesite="None"
    )
    assert binding.header_value() == (
        "__Host-authgate_binding=abc; HttpOnly; Max-Age=600; Path=/v1/auth; SameSite=None; Secure"
    )
    cleared = Cookie("session", "")
    assert cleared.header_value() == 'session=""; HttpOnly; Path=/; SameSite=Lax; Secure'


def test_an_illegal_name_is_refused_as_aiohttp_refuses_it() -> None:
    with pytest.raises(CookieError):
        Cookie("bad name", "v").set_on(web.Response())


def test_a_cookie_set_twice_is_replaced() -> None:
    response = web.Response()
    Cookie("session", "first").set_on(response)
    Cookie("other", "o").set_on(response)
    Cookie("session", "second", max_age=5).set_on(response)
    assert response.headers.getall(hdrs.SET_COOKIE) == [
        "other=o; HttpOnly; Path=/; SameSite=Lax; Secure",
        "session=second; HttpOnly; Max-Age=5; Path=/; SameSite=Lax; Secure",
    ]
    assert sets_cookie(response, "session")
    assert sets_cookie(response, "other")
    assert not sets_cookie(response, "sess")


def test_a_cookie_set_through_aiohttp_counts_as_set() -> None:
    response = web.Response()
    response.set_cookie("session", "v")
    assert sets_cookie(response, "session")
    assert not sets_cookie(web.Response(), "session")
