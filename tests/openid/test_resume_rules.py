"""Where a sign-in may return to resume an authorization request, and which resumed requests
ask the provider for a fresh login (the pure rules)."""

from __future__ import annotations

import pytest

from authgate.domain.openid.authorization_request import resume_needs_fresh_login
from authgate.domain.redirects import MAX_RESUME_LENGTH, safe_return_to

APP = "https://app.example.com"
AUTHORIZE = "https://api.example.com/oauth2/authorize"


def test_the_authorization_endpoint_is_a_destination_only_when_named() -> None:
    url = AUTHORIZE + "?client_id=web&state=x"
    assert safe_return_to(url, APP, {AUTHORIZE}) == url
    assert safe_return_to(url, APP) is None
    # longer than an ordinary return_to may be
    long = AUTHORIZE + "?state=" + "s" * 2000
    assert safe_return_to(long, APP, {AUTHORIZE}) == long


@pytest.mark.parametrize(
    "url",
    [
        "https://api.example.com/oauth2/authorize/../token?x=1",
        "https://api.example.com/oauth2/authorizeX?x=1",
        "https://api.example.com/oauth2/authorize?x=1#frag",
        "https://user@api.example.com/oauth2/authorize?x=1",
        "http://api.example.com/oauth2/authorize?x=1",
        "https://api.example.com:8443/oauth2/authorize?x=1",
        "https://api.example.com/OAUTH2/authorize?x=1",
        "https://api.example.com/oauth2/authorize?x=1\r\nSet-Cookie: a=b",
        "https://api.example.com/oauth2/authorize?x=" + "a" * MAX_RESUME_LENGTH,
        "//api.example.com/oauth2/authorize?x=1",
    ],
)
def test_anything_else_is_ignored(url: str) -> None:
    assert safe_return_to(url, APP, {AUTHORIZE}) is None


@pytest.mark.parametrize(
    ("query", "fresh"),
    [
        ("client_id=web", False),
        ("prompt=login", True),
        ("prompt=consent+login", True),
        ("prompt=consent", False),
        ("prompt=none", False),
        ("max_age=0", True),
        ("max_age=3600", True),
        ("state=prompt%3Dlogin", False),
    ],
)
def test_a_fresh_login_is_asked_by_prompt_login_or_max_age(query: str, fresh: bool) -> None:
    assert resume_needs_fresh_login(f"{AUTHORIZE}?{query}") is fresh
