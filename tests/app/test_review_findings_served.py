"""The security review's findings on the OpenID Provider, proven over HTTP against a running
``authgate serve`` (the default configuration: SQLite, the development identity provider at
``/dev/idp``), with a few applications registered. Each test drives the service as a browser
and an application do: plain requests, cookies kept by hand, redirects followed one by one.

The in-process tests of the same behaviour (tests/openid, tests/app) say it in more detail;
these show the running process does it too: the resume mark in the query means nothing,
withdrawing consent spends the codes, loopback redirect URIs on any port only for public
clients, a consent form answers once, one browser keeps one session through a link and a
step-up, freshness comes only from signed statements, and a ``private_key_jwt`` assertion's
audience is the issuer alone.
"""

from __future__ import annotations

import base64
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any
from urllib.parse import urlencode

import aiohttp
import pytest
from joserfc import jwt
from joserfc.jwk import ECKey, KeySet

from tests.openid.harness import Request, parse_page, query_of
from tests.support.jwt import claims_of
from tests.support.served import ServedBrowser, serve

APP = "http://127.0.0.1:9999"  # the applications' own address: nothing listens, nothing needs to
FIRST_REDIRECT = f"{APP}/cb"
FIRST_SECRET = "first-secret-of-more-than-thirty-two-characters"
SHOP_REDIRECT = f"{APP}/shop"
SHOP_SECRET = "shop-secret-of-more-than-thirty-two-characters"
NEWS_REDIRECT = f"{APP}/news"
NEWS_SECRET = "news-secret-of-more-than-thirty-two-characters"
SIGNED_REDIRECT = f"{APP}/signed"
SIGNED_KEY = ECKey.generate_key("P-256", parameters={"kid": "signed-1"})
JWT_BEARER = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
YEAR = "max_age=31536000"
CLIENTS: dict[str, Any] = {
    # a web application of the same party (no consent page), its server on loopback
    "first": {
        "name": "First",
        "type": "confidential",
        "secrets": [FIRST_SECRET],
        "redirect_uris": [FIRST_REDIRECT],
        "first_party": True,
    },
    # two applications of other parties: consent is asked (one each for the two consent tests,
    # so that neither finds the other's grant)
    "shop": {
        "name": "Shop",
        "type": "confidential",
        "secrets": [SHOP_SECRET],
        "redirect_uris": [SHOP_REDIRECT],
    },
    "news": {
        "name": "News",
        "type": "confidential",
        "secrets": [NEWS_SECRET],
        "redirect_uris": [NEWS_REDIRECT],
    },
    # a native application: no secret, loopback on any port (RFC 8252 section 7.3)
    "native": {
        "name": "Native",
        "type": "public",
        "redirect_uris": ["http://127.0.0.1/callback"],
        "first_party": True,
    },
    # a back end authenticating with a signed JWT (RFC 7523)
    "signed": {
        "name": "Signed",
        "type": "confidential",
        "token_endpoint_auth_method": "private_key_jwt",
        "jwks": {"keys": [SIGNED_KEY.as_dict(private=False)]},
        "redirect_uris": [SIGNED_REDIRECT],
        "first_party": True,
    },
}
# Every test signs in (a callback and a start each) within the same minute, from one address.
RATE_LIMITS = {"callback": "1000/minute", "initiation": "1000/minute"}

NewBrowser = Callable[[], ServedBrowser]


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One running service for the module; its address is also the provider's issuer."""
    sections = {"clients": CLIENTS, "ratelimit": RATE_LIMITS}
    yield from serve(tmp_path_factory.mktemp("authgate-review-findings"), sections)


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    # No jar: each browser keeps its own cookies, and the application sends none.
    async with aiohttp.ClientSession(cookie_jar=aiohttp.DummyCookieJar()) as session:
        yield session


@pytest.fixture
def new_browser(http: aiohttp.ClientSession, base: str) -> NewBrowser:
    """A browser of its own for each person (no cookie shared)."""
    return lambda: ServedBrowser(http, base)


# -- the application's side -------------------------------------------------------------------


async def authorize(browser: ServedBrowser, request: Request) -> aiohttp.ClientResponse:
    """The application sends the browser to the authorization endpoint."""
    url = f"/oauth2/authorize?{urlencode(request.params())}"
    return await browser.request("GET", url, {"Accept": "text/html"})


async def answer_of(response: aiohttp.ClientResponse, redirect_uri: str) -> dict[str, str]:
    """The authorization response the application receives at ``redirect_uri``."""
    assert response.status == 302, (response.status, await response.text())
    location = response.headers["Location"]
    assert location.startswith(redirect_uri + "?"), location
    return query_of(location)


async def code_of(response: aiohttp.ClientResponse, redirect_uri: str) -> str:
    answer = await answer_of(response, redirect_uri)
    assert "code" in answer, answer
    return answer["code"]


async def consent(browser: ServedBrowser, page_html: str) -> aiohttp.ClientResponse:
    """Allow, as the consent page's button does (the form posted from authgate's origin)."""
    form = parse_page(page_html).forms[0]
    data = [*form["fields"], ("decision", "approve")]
    headers = {"Accept": "text/html", **browser.same_origin}
    return await browser.request("POST", form["action"], headers, data=data)


async def redeem(
    http: aiohttp.ClientSession,
    base: str,
    request: Request,
    code: str,
    *,
    secret: str | None = None,
    form: dict[str, str] | None = None,
) -> tuple[int, dict[str, Any]]:
    """The application redeems ``code`` at the token endpoint (client_secret_basic with
    ``secret``; else the client authentication in ``form``)."""
    headers = {"Accept": "application/json"}
    if secret is not None:
        raw = f"{request.client_id}:{secret}".encode()
        headers["Authorization"] = "Basic " + base64.b64encode(raw).decode()
    body = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": request.redirect_uri,
        "code_verifier": request.pkce.verifier,
        **(form or {}),
    }
    async with http.post(f"{base}/oauth2/token", data=body, headers=headers) as response:
        answer: dict[str, Any] = await response.json()
        return response.status, answer


def first(**extra: str) -> Request:
    return Request(client_id="first", redirect_uri=FIRST_REDIRECT, extra=dict(extra))


# -- the resume mark: signin_started_at in the query means nothing ----------------------------


async def test_a_forged_resume_mark_gets_the_sign_in_page_never_a_code(
    new_browser: NewBrowser,
) -> None:
    """``signin_started_at`` once marked a resumed request; whoever holds the browser could
    set it to the session's own login time and skip the new login the application asked for."""
    browser = new_browser()
    await browser.sign_in("google", "ada")
    assert browser.session is not None
    proven = claims_of(browser.session)["auth_time"]
    # Without a demand for a new login, this browser gets a code at once.
    await code_of(await authorize(browser, first()), FIRST_REDIRECT)
    for demand in ({"prompt": "login"}, {"max_age": "0"}):
        page = await authorize(browser, first(**demand, signin_started_at=str(proven)))
        assert page.status == 200, (demand, page.status, page.headers.get("Location"))
        assert "Location" not in page.headers
        assert page.content_type == "text/html"
        assert "<h1>Sign in</h1>" in await page.text()


async def test_a_hint_for_another_account_is_not_relaxed_by_a_resume_mark(
    http: aiohttp.ClientSession, base: str, new_browser: NewBrowser
) -> None:
    # The application holds an ID token of ada's...
    ada = new_browser()
    await ada.sign_in("google", "ada")
    request = first()
    code = await code_of(await authorize(ada, request), FIRST_REDIRECT)
    status, tokens = await redeem(http, base, request, code, secret=FIRST_SECRET)
    assert status == 200, tokens
    # ...and asks silently for her in a browser where grace is signed in.
    grace = new_browser()
    await grace.sign_in("google", "grace")
    assert grace.session is not None
    started = claims_of(grace.session)["auth_time"]
    hinted = first(prompt="none", id_token_hint=tokens["id_token"], signin_started_at=str(started))
    answer = await answer_of(await authorize(grace, hinted), FIRST_REDIRECT)
    assert answer.get("error") == "login_required", answer
    assert "code" not in answer
    assert answer["state"] == hinted.state


# -- withdrawing consent spends the codes already issued --------------------------------------


async def test_a_code_issued_before_consent_was_withdrawn_is_invalid_grant(
    http: aiohttp.ClientSession, base: str, new_browser: NewBrowser
) -> None:
    browser = new_browser()
    await browser.sign_in("google", "ada")
    request = Request(client_id="shop", redirect_uri=SHOP_REDIRECT, scope="openid profile")
    page = await authorize(browser, request)
    assert page.status == 200, await page.text()  # the consent page
    code = await code_of(await consent(browser, await page.text()), SHOP_REDIRECT)

    withdrawn = await browser.request("DELETE", "/v1/account/apps/shop", browser.same_origin)
    assert withdrawn.status == 204, await withdrawn.text()

    status, body = await redeem(http, base, request, code, secret=SHOP_SECRET)
    assert (status, body.get("error")) == (400, "invalid_grant"), body
    assert "access_token" not in body and "id_token" not in body
    # The next request asks for consent again.
    again = await authorize(browser, Request(client_id="shop", redirect_uri=SHOP_REDIRECT))
    assert again.status == 200 and "<form" in await again.text()


# -- loopback redirect URIs on any port: public clients only ----------------------------------


async def test_a_confidential_clients_loopback_uri_on_another_port_is_an_error_page(
    new_browser: NewBrowser,
) -> None:
    browser = new_browser()
    await browser.sign_in("google", "ada")
    another_port = Request(client_id="first", redirect_uri="http://127.0.0.1:9998/cb")
    page = await authorize(browser, another_port)
    assert page.status == 400, (page.status, page.headers.get("Location"))
    assert "Location" not in page.headers
    assert page.content_type == "text/html"
    assert "is not registered for the client" in await page.text()


async def test_a_public_clients_loopback_uri_takes_any_port(new_browser: NewBrowser) -> None:
    browser = new_browser()
    await browser.sign_in("google", "ada")
    native = "http://127.0.0.1:61234/callback"
    request = Request(client_id="native", redirect_uri=native)
    await code_of(await authorize(browser, request), native)


# -- a consent form answers once --------------------------------------------------------------


async def test_the_same_consent_form_posted_twice_gets_409_and_no_code(
    http: aiohttp.ClientSession, base: str, new_browser: NewBrowser
) -> None:
    browser = new_browser()
    await browser.sign_in("google", "grace")
    request = Request(client_id="news", redirect_uri=NEWS_REDIRECT)
    page = await authorize(browser, request)
    assert page.status == 200, await page.text()
    html = await page.text()
    code = await code_of(await consent(browser, html), NEWS_REDIRECT)
    status, body = await redeem(http, base, request, code, secret=NEWS_SECRET)
    assert status == 200, body
    # The very same form again (a replay, a double click): nothing recorded, no code.
    again = await consent(browser, html)
    assert again.status == 409, (again.status, again.headers.get("Location"))
    assert "Location" not in again.headers
    assert "answered already" in await again.text()


# -- one browser, one session -----------------------------------------------------------------


async def test_a_link_and_a_step_up_leave_the_browser_one_session(
    new_browser: NewBrowser,
) -> None:
    """alan signs in nowhere else in this module: his sessions are this browser's alone."""
    browser = new_browser()
    await browser.sign_in("google", "alan")
    assert browser.session is not None
    sid = claims_of(browser.session)["sid"]
    await browser.sign_in("facebook", "alan", intent="link")
    await browser.sign_in("google", "alan", intent="reauthenticate")

    listed = await browser.request("GET", "/v1/account/sessions", {"Accept": "application/json"})
    assert listed.status == 200, await listed.text()
    assert [s["id"] for s in (await listed.json())["sessions"]] == [sid]
    assert claims_of(browser.session)["sid"] == sid
    account = await browser.request("GET", "/v1/account", {"Accept": "application/json"})
    assert len((await account.json())["providers"]) == 2  # google and the linked facebook


# -- freshness only from signed statements ----------------------------------------------------


async def test_a_re_authentication_through_facebook_is_refused_at_its_start(
    new_browser: NewBrowser,
) -> None:
    """facebook's answer dates no login: nothing it says can prove a recent sign-in, even
    for an account it is linked to."""
    browser = new_browser()
    await browser.sign_in("google", "ada")
    await browser.sign_in("facebook", "ada", intent="link")
    started = await browser.start("facebook", intent="reauthenticate")
    assert started.status == 400, await started.text()
    body = await started.json()
    assert body["error"] == "invalid_request"
    assert "cannot prove a recent sign-in" in body["message"]


async def test_every_openid_connect_sign_in_asks_for_auth_time(new_browser: NewBrowser) -> None:
    """``max_age`` makes ``auth_time`` a claim the provider must sign (OpenID Connect Core
    3.1.2.1); a year forces no login the provider would not have asked for anyway."""
    browser = new_browser()
    for provider in ("google", "apple"):
        url = await browser.authorization_url(provider)
        assert YEAR in url.split("?", 1)[1].split("&"), url
        assert "prompt=" not in url
    assert "max_age" not in await browser.authorization_url("facebook")


# -- private_key_jwt: the assertion's audience is the issuer, one string ----------------------


def assertion(aud: Any) -> dict[str, str]:
    now = int(time.time())
    claims = {
        "iss": "signed",
        "sub": "signed",
        "aud": aud,
        "jti": uuid.uuid4().hex,
        "iat": now,
        "exp": now + 60,
    }
    signed = jwt.encode({"alg": "ES256", "kid": "signed-1"}, claims, SIGNED_KEY, ["ES256"])
    return {"client_assertion_type": JWT_BEARER, "client_assertion": signed}


async def test_an_assertion_for_anything_but_the_issuer_alone_is_invalid_client(
    http: aiohttp.ClientSession, base: str, new_browser: NewBrowser
) -> None:
    browser = new_browser()
    await browser.sign_in("google", "ada")
    request = Request(client_id="signed", redirect_uri=SIGNED_REDIRECT)
    code = await code_of(await authorize(browser, request), SIGNED_REDIRECT)
    for aud in ([base], f"{base}/oauth2/token"):
        status, body = await redeem(http, base, request, code, form=assertion(aud))
        assert (status, body.get("error")) == (401, "invalid_client"), (aud, body)
    # Client authentication comes first: the code is still there for the proper assertion.
    status, body = await redeem(http, base, request, code, form=assertion(base))
    assert status == 200, body
    async with http.get(f"{base}/.well-known/jwks.json") as keys:
        key_set = KeySet.import_key_set(await keys.json())
    claims = jwt.decode(body["id_token"], key_set, algorithms=["RS256"]).claims
    assert (claims["iss"], claims["aud"], claims["nonce"]) == (base, "signed", request.nonce)
