"""``/oauth2/logout``, OpenID Connect RP-Initiated Logout 1.0, as the OIDF
``oidcc-rp-initiated-logout-certification-test-plan`` drives it: one test per module, named after
it, then what the modules leave out (the confirmation's CSRF defence, form posts, the pages).

Each module signs in first; the browser then goes to the end-session endpoint with the session
cookie, by default with ``id_token_hint``, ``post_logout_redirect_uri`` and a 128-character
``state``. Where the provider must not redirect, the person is asked first (the confirmation
page) and nothing ends until they confirm. The module's closing ``prompt=none`` request belongs
to the authorization endpoint; here the session's end shows as its token being refused.
"""

from __future__ import annotations

import base64
import json
import re
import secrets
from html.parser import HTMLParser
from typing import Any
from urllib.parse import parse_qs, urlsplit

from aiohttp import ClientResponse
from joserfc import jwt
from joserfc.jwk import RSAKey

from authgate.domain.model import Outcome

from .conftest import (
    ADMIN_LOGOUT,
    ISSUER,
    MOBILE_LOGOUT,
    WEB_LOGOUT,
    WEB_LOGOUT_WITH_QUERY,
    Provider,
    Session,
)

STATE = secrets.token_urlsafe(96)[:128]
assert len(STATE) == 128
ENDPOINT = "/oauth2/logout"
CONFIRM = "/oauth2/logout/confirm"


class _Form(HTMLParser):
    """The confirmation page's form: its action and hidden fields."""

    def __init__(self) -> None:
        super().__init__()
        self.action: str | None = None
        self.fields: dict[str, str] = {}
        self.external: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if tag == "form":
            self.action = found.get("action")
        if tag == "input" and found.get("type") == "hidden":
            self.fields[found["name"] or ""] = found.get("value") or ""
        for name in ("src", "href"):
            if found.get(name):
                self.external.append(str(found[name]))


async def end_session(
    op: Provider, session: Session | None, *, method: str = "GET", **params: str
) -> ClientResponse:
    headers = dict(session.cookie) if session is not None else {}
    if method == "POST":
        return await op.client.post(ENDPOINT, data=params, headers=headers, allow_redirects=False)
    return await op.client.get(ENDPOINT, params=params, headers=headers, allow_redirects=False)


async def confirmation(response: ClientResponse) -> tuple[_Form, str]:
    """The confirmation page (status 200, asked before anything ended): its form and the
    token cookie set with it."""
    assert response.status == 200, response.status
    assert "Location" not in response.headers
    page = await response.text()
    assert "Sign out of authgate?" in page
    form = _Form()
    form.feed(page)
    assert form.action is not None
    return form, response.cookies["__Host-authgate_logout"].value


async def confirm(
    op: Provider,
    session: Session | None,
    form: _Form,
    csrf_cookie: str | None,
    *,
    origin: str | None = ISSUER,
) -> ClientResponse:
    cookies = [f"__Host-authgate_logout={csrf_cookie}"] if csrf_cookie is not None else []
    if session is not None:
        cookies.append(f"session={session.token}")
    headers = {"Cookie": "; ".join(cookies)} if cookies else {}
    if origin is not None:
        headers["Origin"] = origin
    return await op.client.post(CONFIRM, data=form.fields, headers=headers, allow_redirects=False)


async def assert_signed_out_page(response: ClientResponse) -> str:
    assert response.status == 200, response.status
    assert "Location" not in response.headers
    page = await response.text()
    assert "You are signed out" in page
    assert_cleared(response)
    return page


def assert_cleared(response: ClientResponse) -> None:
    """The session cookie is cleared by the answer."""
    cleared = [h for h in response.headers.getall("Set-Cookie", []) if h.startswith("session=")]
    assert cleared and "Max-Age=0" in cleared[0], cleared


def assert_redirected(response: ClientResponse, uri: str, state: str | None) -> None:
    assert response.status in (302, 303), response.status
    location = response.headers["Location"]
    parts = urlsplit(location)
    registered = urlsplit(uri)
    assert (parts.scheme, parts.netloc, parts.path) == (
        registered.scheme,
        registered.netloc,
        registered.path,
    )
    query = parse_qs(parts.query)
    expected = parse_qs(registered.query)
    if state is not None:
        expected["state"] = [state]
    assert query == expected, location
    assert_cleared(response)


def alg_none(token: str) -> str:
    """The OIDF module's rewrite: the same claims under ``alg: none``, no signature."""
    _, payload, _ = token.split(".")
    header = base64.urlsafe_b64encode(json.dumps({"alg": "none"}).encode()).rstrip(b"=")
    return f"{header.decode()}.{payload}."


def foreign_signed(op: Provider, session: Session) -> str:
    """The OIDF module's hint: the same claims, signed by someone else's key."""
    key = RSAKey.generate_key(2048, parameters={"kid": "suite-key"})
    now = int(op.clock.now().timestamp())
    claims = {
        "iss": ISSUER,
        "sub": session.account_id,
        "aud": "webapp",
        "iat": now,
        "exp": now + 300,
        "sid": session.session_id,
    }
    return jwt.encode({"alg": "RS256", "kid": "suite-key"}, claims, key)


# -- the OIDF modules -----------------------------------------------------------------------


async def test_oidcc_rp_initiated_logout_discovery_endpoint_verification(op: Provider) -> None:
    document = await (await op.client.get("/.well-known/openid-configuration")).json()
    assert document["end_session_endpoint"] == ISSUER + ENDPOINT
    for name, value in document.items():
        if name.endswith("_endpoint"):
            assert value.startswith("https://"), name


async def test_oidcc_rp_initiated_logout(op: Provider) -> None:
    session = await op.signed_in()
    # live, the session's silent request fails only for want of consent
    assert await op.prompt_none(session) == "consent_required"
    answer = await end_session(
        op,
        session,
        id_token_hint=op.id_token(session),
        post_logout_redirect_uri=WEB_LOGOUT,
        state=STATE,
    )
    assert_redirected(answer, WEB_LOGOUT, STATE)
    assert answer.headers["Cache-Control"] == "no-store"
    assert await op.status(session) == 401
    assert await op.prompt_none(session) == "login_required"
    signed_out = [e for e in await op.audit() if e.outcome is Outcome.SIGNED_OUT]
    assert [e.account_id for e in signed_out] == [session.account_id]
    assert "client webapp" in (signed_out[0].detail or "")


async def test_oidcc_rp_initiated_logout_bad_post_logout_redirect_uri(op: Provider) -> None:
    session = await op.signed_in()
    answer = await end_session(
        op,
        session,
        id_token_hint=op.id_token(session),
        post_logout_redirect_uri="https://web.example.com/elsewhere",
        state=STATE,
    )
    form, csrf = await confirmation(answer)
    assert "has not registered" in await answer.text()
    assert await op.status(session) == 200  # nothing ended before the person confirms
    page = await assert_signed_out_page(await confirm(op, session, form, csrf))
    assert "elsewhere" not in page
    assert await op.status(session) == 401


async def test_oidcc_rp_initiated_logout_modified_id_token_hint(op: Provider) -> None:
    session = await op.signed_in()
    answer = await end_session(
        op,
        session,
        id_token_hint=alg_none(op.id_token(session)),
        post_logout_redirect_uri=WEB_LOGOUT,
        state=STATE,
    )
    form, csrf = await confirmation(answer)
    assert "could not be verified" in await answer.text()
    assert await op.status(session) == 200
    await assert_signed_out_page(await confirm(op, session, form, csrf))
    assert await op.status(session) == 401


async def test_oidcc_rp_initiated_logout_no_id_token_hint(op: Provider) -> None:
    session = await op.signed_in()
    answer = await end_session(op, session, post_logout_redirect_uri=WEB_LOGOUT, state=STATE)
    form, csrf = await confirmation(answer)
    assert await op.status(session) == 200
    await assert_signed_out_page(await confirm(op, session, form, csrf))
    assert await op.status(session) == 401


async def test_oidcc_rp_initiated_logout_no_params(op: Provider) -> None:
    session = await op.signed_in()
    form, csrf = await confirmation(await end_session(op, session))
    assert set(form.fields) == {"csrf"}
    assert await op.status(session) == 200
    await assert_signed_out_page(await confirm(op, session, form, csrf))
    assert await op.status(session) == 401


async def test_oidcc_rp_initiated_logout_no_post_logout_redirect_uri(op: Provider) -> None:
    session = await op.signed_in()
    answer = await end_session(op, session, id_token_hint=op.id_token(session), state=STATE)
    page = await assert_signed_out_page(answer)
    assert STATE not in page
    assert await op.status(session) == 401


async def test_oidcc_rp_initiated_logout_no_state(op: Provider) -> None:
    session = await op.signed_in()
    answer = await end_session(
        op, session, id_token_hint=op.id_token(session), post_logout_redirect_uri=WEB_LOGOUT
    )
    assert_redirected(answer, WEB_LOGOUT, None)
    assert answer.headers["Location"] == WEB_LOGOUT
    assert await op.status(session) == 401
    assert await op.prompt_none(session) == "login_required"


async def test_oidcc_rp_initiated_logout_only_state(op: Provider) -> None:
    session = await op.signed_in()
    form, csrf = await confirmation(await end_session(op, session, state=STATE))
    assert await op.status(session) == 200
    await assert_signed_out_page(await confirm(op, session, form, csrf))
    assert await op.status(session) == 401


async def test_oidcc_rp_initiated_logout_query_added_to_post_logout_redirect_uri(
    op: Provider,
) -> None:
    session = await op.signed_in()
    answer = await end_session(
        op,
        session,
        id_token_hint=op.id_token(session),
        post_logout_redirect_uri=WEB_LOGOUT + "?foo=bar",
        state=STATE,
    )
    form, csrf = await confirmation(answer)
    assert await op.status(session) == 200
    await assert_signed_out_page(await confirm(op, session, form, csrf))
    assert await op.status(session) == 401


async def test_oidcc_rp_initiated_logout_bad_id_token_hint(op: Provider) -> None:
    session = await op.signed_in()
    answer = await end_session(
        op,
        session,
        id_token_hint=foreign_signed(op, session),
        post_logout_redirect_uri=WEB_LOGOUT,
        state=STATE,
    )
    form, csrf = await confirmation(answer)
    assert "could not be verified" in await answer.text()
    assert await op.status(session) == 200
    await assert_signed_out_page(await confirm(op, session, form, csrf))
    assert await op.status(session) == 401


# -- beyond the modules ---------------------------------------------------------------------


async def test_a_registered_uri_with_a_query_keeps_it_and_gets_the_state_added(
    op_memory: Provider,
) -> None:
    op = op_memory
    session = await op.signed_in()
    answer = await end_session(
        op,
        session,
        id_token_hint=op.id_token(session),
        post_logout_redirect_uri=WEB_LOGOUT_WITH_QUERY,
        state="s 1&x=y",
    )
    assert_redirected(answer, WEB_LOGOUT_WITH_QUERY, "s 1&x=y")


async def test_an_expired_hint_still_names_the_session(op_memory: Provider) -> None:
    op = op_memory
    session = await op.signed_in()
    long_ago = int(op.clock.now().timestamp()) - 30 * 86400
    hint = op.id_token(session, iat=long_ago, exp=long_ago + 300, auth_time=long_ago)
    answer = await end_session(
        op, session, id_token_hint=hint, post_logout_redirect_uri=WEB_LOGOUT, state="x"
    )
    assert_redirected(answer, WEB_LOGOUT, "x")
    assert await op.status(session) == 401


async def test_a_form_post_from_the_client_ends_the_session_and_answers_303(
    op_memory: Provider,
) -> None:
    op = op_memory
    session = await op.signed_in()
    answer = await end_session(
        op,
        session,
        method="POST",
        id_token_hint=op.id_token(session),
        post_logout_redirect_uri=WEB_LOGOUT,
        state="x",
        ui_locales="de fr",
    )
    assert answer.status == 303
    assert_redirected(answer, WEB_LOGOUT, "x")
    assert await op.status(session) == 401


async def test_a_cross_site_post_without_the_cookie_is_confirmed_first(
    op_memory: Provider,
) -> None:
    """A SameSite=Lax session cookie does not ride on another site's form post: seeing none
    proves nothing, so the person confirms on a page of the service, whose post carries it."""
    op = op_memory
    session = await op.signed_in()
    answer = await op.client.post(
        ENDPOINT,
        data={
            "id_token_hint": op.id_token(session),
            "post_logout_redirect_uri": WEB_LOGOUT,
            "state": "x",
        },
        headers={"Sec-Fetch-Site": "cross-site", "Origin": "https://web.example.com"},
        allow_redirects=False,
    )
    form, csrf = await confirmation(answer)
    confirmed = await confirm(op, session, form, csrf)
    assert confirmed.status == 303
    assert_redirected(confirmed, WEB_LOGOUT, "x")
    assert await op.status(session) == 401


async def test_a_browser_without_a_session_goes_straight_back(op_memory: Provider) -> None:
    op = op_memory
    session = await op.signed_in()
    hint = op.id_token(session)
    assert (await end_session(op, session, id_token_hint=hint)).status == 200  # ended
    again = await end_session(
        op, session, id_token_hint=hint, post_logout_redirect_uri=WEB_LOGOUT, state="x"
    )
    assert_redirected(again, WEB_LOGOUT, "x")
    nothing = await end_session(op, None)  # no cookie, no parameter: nothing to ask about
    await assert_signed_out_page(nothing)


async def test_a_hint_of_another_session_is_confirmed_then_goes_back(op_memory: Provider) -> None:
    op = op_memory
    old = await op.signed_in()
    current = await op.signed_in(intent="login")
    answer = await end_session(
        op, current, id_token_hint=op.id_token(old), post_logout_redirect_uri=WEB_LOGOUT, state="x"
    )
    form, csrf = await confirmation(answer)
    assert "go back to the application" in await answer.text()
    assert await op.status(current) == 200
    confirmed = await confirm(op, current, form, csrf)
    assert_redirected(confirmed, WEB_LOGOUT, "x")
    assert await op.status(current) == 401


async def test_client_id_alone_names_the_client_after_confirmation(op_memory: Provider) -> None:
    op = op_memory
    session = await op.signed_in()
    answer = await end_session(
        op, session, client_id="admin", post_logout_redirect_uri=ADMIN_LOGOUT, state="x"
    )
    form, csrf = await confirmation(answer)
    assert "Admin asks authgate to sign you out" in await answer.text()
    assert_redirected(await confirm(op, session, form, csrf), ADMIN_LOGOUT, "x")


async def test_a_native_apps_private_use_scheme_is_a_registered_uri(op_memory: Provider) -> None:
    op = op_memory
    session = await op.signed_in()
    answer = await end_session(
        op,
        session,
        id_token_hint=op.id_token(session, client_id="mobile"),
        post_logout_redirect_uri=MOBILE_LOGOUT,
    )
    assert answer.headers["Location"] == MOBILE_LOGOUT


async def test_requests_that_name_no_client_or_the_wrong_one_never_redirect(
    op_memory: Provider,
) -> None:
    op = op_memory
    session = await op.signed_in()
    hint = op.id_token(session)
    cases: list[dict[str, str]] = [
        # The hint was issued to webapp; admin's URI is admin's.
        {"id_token_hint": hint, "post_logout_redirect_uri": ADMIN_LOGOUT},
        # client_id and the hint's audience disagree.
        {"id_token_hint": hint, "client_id": "admin", "post_logout_redirect_uri": ADMIN_LOGOUT},
        # An unknown client.
        {"client_id": "nobody", "post_logout_redirect_uri": WEB_LOGOUT},
        # The service's own session token is signed by the same keys: never a hint.
        {"id_token_hint": session.token, "post_logout_redirect_uri": WEB_LOGOUT},
    ]
    for params in cases:
        form, csrf = await confirmation(await end_session(op, session, state="x", **params))
        assert await op.status(session) == 200, params
        assert "go back to the application" not in json.dumps(form.fields)
    # Confirming a request that named the wrong client signs out without going anywhere.
    await assert_signed_out_page(await confirm(op, session, form, csrf))
    assert await op.status(session) == 401


# -- the confirmation's defence against cross-site requests ---------------------------------


async def test_a_confirmation_without_the_browsers_token_ends_nothing(
    op_memory: Provider,
) -> None:
    op = op_memory
    session = await op.signed_in()
    form, csrf = await confirmation(await end_session(op, session))
    other_csrf = secrets.token_urlsafe(32)
    forged: list[tuple[str | None, str | None]] = [
        (None, ISSUER),  # no token cookie: another site cannot read or set it
        (other_csrf, ISSUER),  # a cookie that is not the form's token
        (csrf, "https://evil.example"),  # the browser says another site posted it
    ]
    for cookie, origin in forged:
        refused = await confirm(op, session, form, cookie, origin=origin)
        assert refused.status == 403, (cookie, origin)
        assert "could not be verified" in await refused.text()
        assert await op.status(session) == 200
    # The refusal asks again, with a token of its own.
    again = _Form()
    again.feed(await refused.text())
    assert again.action == "confirm"
    fresh = refused.cookies["__Host-authgate_logout"].value
    assert fresh != csrf and again.fields["csrf"] == fresh
    await assert_signed_out_page(await confirm(op, session, again, fresh))
    assert await op.status(session) == 401


async def test_the_token_cookie_is_bound_to_this_site_only(op_memory: Provider) -> None:
    op = op_memory
    session = await op.signed_in()
    answer = await end_session(op, session)
    [header] = [
        h for h in answer.headers.getall("Set-Cookie") if h.startswith("__Host-authgate_logout=")
    ]
    for attribute in ("Secure", "HttpOnly", "Path=/", "SameSite=Strict"):
        assert attribute in header
    assert "Domain" not in header


# -- the pages ------------------------------------------------------------------------------


async def test_pages_load_nothing_are_never_cached_and_escape_what_they_show(
    op_memory: Provider,
) -> None:
    op = op_memory
    session = await op.signed_in()
    hostile = '"><script>alert(1)</script><img src=x onerror=alert(2)>'
    answer = await end_session(
        op,
        session,
        id_token_hint=op.id_token(session),
        post_logout_redirect_uri=WEB_LOGOUT + hostile,
        state=hostile,
        client_id="webapp",
    )
    page = await answer.text()
    assert hostile not in page and "<script" not in page
    form, csrf = await confirmation(answer)
    assert form.fields["state"] == hostile  # carried back intact, escaped in the page
    assert form.external == []
    # The registered name is escaped too ("Web <App> & Co").
    assert "Web &lt;App&gt; &amp; Co" in page
    _assert_page_headers(answer)
    signed_out = await confirm(op, session, form, csrf)
    _assert_page_headers(signed_out)
    assert "<script" not in await signed_out.text()


def _assert_page_headers(answer: ClientResponse) -> None:
    assert answer.content_type == "text/html"
    assert answer.headers["Cache-Control"] == "no-store"
    assert answer.headers["X-Frame-Options"] == "DENY"
    # Its address (with the id_token_hint) goes to no other origin; to its own it must, or the
    # browser sends the confirmation's post with "Origin: null".
    assert answer.headers["Referrer-Policy"] == "same-origin"
    policy = answer.headers["Content-Security-Policy"]
    assert "default-src 'none'" in policy and "frame-ancestors 'none'" in policy
    assert re.search(r"style-src 'sha256-[A-Za-z0-9+/=]+'", policy)
    assert "script-src" not in policy


async def test_the_confirmation_allows_its_form_to_lead_only_where_the_request_earned(
    op_memory: Provider,
) -> None:
    op = op_memory
    old = await op.signed_in()
    current = await op.signed_in(intent="login")
    earned = await end_session(
        op, current, id_token_hint=op.id_token(old), post_logout_redirect_uri=WEB_LOGOUT
    )
    policy = earned.headers["Content-Security-Policy"]
    assert "form-action 'self' https://web.example.com;" in policy
    refused = await end_session(op, current, post_logout_redirect_uri=WEB_LOGOUT)
    assert "form-action 'self';" in refused.headers["Content-Security-Policy"]


async def test_the_openapi_document_lists_the_end_session_endpoint(op_memory: Provider) -> None:
    document: dict[str, Any] = await (await op_memory.client.get("/openapi.json")).json()
    paths = document["paths"]
    assert set(paths[ENDPOINT]) == {"get", "post"}
    assert "text/html" in paths[ENDPOINT]["get"]["responses"]["200"]["content"]
    assert "302" in paths[ENDPOINT]["get"]["responses"]
    assert "303" in paths[ENDPOINT]["post"]["responses"]
    assert "post" in paths[CONFIRM]
    names = {p["name"] for p in paths[ENDPOINT]["get"]["parameters"]}
    assert {"id_token_hint", "client_id", "post_logout_redirect_uri", "state"} <= names
