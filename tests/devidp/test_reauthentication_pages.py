"""Re-authentication as a person meets it outside the demo page: the development provider's
page says that the application asked to confirm who they are, and starting one while signed
out says to sign in first (not to "link another provider")."""

from __future__ import annotations

from html import unescape
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest

from tests.devidp.support import Browser, Service

CONFIRM = "Confirm it's you (re-authentication requested by the application)"


def _heading(html: str) -> str:
    start, end = html.index("<h1>") + 4, html.index("</h1>")
    text = html[start:end]
    while "<" in text:  # the heading's text, without its inner markup
        a = text.index("<")
        text = text[:a] + text[text.index(">", a) + 1 :]
    return unescape(text)


@pytest.mark.parametrize(("provider", "label"), [("google", "Google"), ("apple", "Apple")])
async def test_the_provider_page_says_it_is_a_re_authentication(
    service: Service, provider: str, label: str
) -> None:
    browser = Browser(service)
    await browser.sign_in(provider, "ada")
    # What the service sends for an OpenID Connect provider: prompt=login&max_age=0.
    url = await browser.start(provider, "reauthenticate")
    assert parse_qs(urlsplit(url).query)["prompt"] == ["login"]
    page = await (await browser.request("GET", url)).text()
    assert _heading(page) == CONFIRM
    assert f"sign in to {label} again" in page
    assert "<title>Confirm it&#x27;s you with" in page

    # A first sign-in keeps its plain heading.
    page = await (await browser.request("GET", await browser.start(provider, "login"))).text()
    assert _heading(page) == f"Sign in with {label}"


async def test_the_facebook_shape_cannot_re_authenticate(service: Service) -> None:
    browser = Browser(service)
    await browser.sign_in("facebook", "ada")
    # Its answers sign no login time: a re-authentication through it could prove nothing,
    # so it is refused at the start, in words that say what can.
    with pytest.raises(AssertionError, match="cannot prove a recent sign-in"):
        await browser.start("facebook", "reauthenticate")
    # A plain sign-in carries no re-authentication parameter.
    url = await browser.start("facebook", "login")
    assert "auth_type" not in parse_qs(urlsplit(url).query)


@pytest.mark.parametrize(
    ("intent", "message"),
    [
        ("reauthenticate", "sign in before re-authenticating"),
        ("link", "sign in before linking another provider"),
    ],
)
async def test_a_signed_out_caller_is_told_to_sign_in_first(
    service: Service, intent: str, message: str
) -> None:
    query = urlencode({"redirect_uri": service.callback("google"), "intent": intent})
    response = await service.client.get(
        f"/v1/auth/google?{query}", headers={"Accept": "application/json"}
    )
    assert response.status == 401
    assert await response.json() == {"error": "unauthorized", "message": message}
