"""Sessions you can end, over HTTP against the service and its development provider: a
stolen token is useless after logout, after "sign out everywhere" from another browser, after
the unlink of its provider; account changes need a recent sign-in (RFC 9470)."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest

from tests.devidp.support import Browser, Service, StartService
from tests.support.jwt import claims_of

from .test_lifecycle import bearer, own_origin, reissue, signed_in

Works = tuple[int, int]


@pytest.fixture(params=["memory", "sqlite", "postgres"])
async def stored(
    request: pytest.FixtureRequest, make_dev_service: StartService, tmp_path: Path
) -> Service:
    """The service on each store: the same behaviour on memory, SQLite and PostgreSQL."""
    if request.param == "memory":
        return await make_dev_service()
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'authgate.db'}"
    else:
        url = request.getfixturevalue("clean_postgres_url")
    return await make_dev_service({"database": {"url": url}})


async def status_of(service: Service, token: str | None) -> Works:
    """What a token gets from the two protected reads (bearer): providers and account."""
    listed = await service.client.get("/v1/account/providers", headers=bearer(token))
    account = await service.client.get("/v1/account", headers=bearer(token))
    return listed.status, account.status


async def second_browser(service: Service, user: str = "ada") -> Browser:
    """Another browser signing in to the same account (registered already) with google."""
    browser = Browser(service)
    answer = await browser.sign_in("google", user, intent="login")
    assert answer.status == 302 and browser.session, answer.headers
    return browser


def stale(service: Service, token: str | None, seconds: int = 3600) -> str:
    """The same session's token, its sign-in ``seconds`` ago (auth_time)."""
    assert token is not None
    return reissue(service, token, auth_time=int(time.time()) - seconds)


async def test_a_session_token_is_live_until_logout_then_refused_everywhere(
    stored: Service,
) -> None:
    browser = await signed_in(stored, "google")
    token = browser.session
    assert await status_of(stored, token) == (200, 200)
    out = await browser.request("POST", "/v1/auth/logout", own_origin(stored))
    assert out.status == 204
    assert await status_of(stored, token) == (401, 401)
    # As the cookie too.
    thief = Browser(stored)
    thief.cookies["session"] = token or ""
    assert (await thief.request("GET", "/v1/account")).status == 401
    body = await (await stored.client.get("/v1/account", headers=bearer(token))).json()
    assert body["error"] == "unauthorized"


async def test_an_unknown_session_is_refused_like_an_invalid_token(service: Service) -> None:
    browser = await signed_in(service, "google")
    forged_sid = reissue(service, browser.session or "", sid="0" * 32)
    assert await status_of(service, forged_sid) == (401, 401)


async def test_sessions_are_listed_with_the_current_one_marked(service: Service) -> None:
    first = await signed_in(service, "google")
    second = await second_browser(service)
    response = await second.request("GET", "/v1/account/sessions")
    assert response.status == 200
    assert response.headers["Cache-Control"] == "no-store"
    listed = (await response.json())["sessions"]
    ids = {s["id"]: s for s in listed}
    mine = claims_of(second.session or "")["sid"]
    theirs = claims_of(first.session or "")["sid"]
    assert set(ids) >= {mine, theirs}
    assert ids[mine]["current"] is True and ids[theirs]["current"] is False
    assert set(ids[mine]) == {
        "id",
        "provider",
        "createdAt",
        "expiresAt",
        "current",
        "userAgent",
        "address",
        "authTimeProven",  # passkeyId too, for a session a passkey signed in
    }
    assert ids[mine]["provider"] == "google"
    assert "token" not in str(listed).lower()


async def test_ending_one_session_from_another_browser(service: Service) -> None:
    first = await signed_in(service, "google")
    second = await second_browser(service)
    theirs = claims_of(first.session or "")["sid"]
    response = await service.client.delete(
        f"/v1/account/sessions/{theirs}", headers=bearer(second.session)
    )
    assert response.status == 204
    assert await status_of(service, first.session) == (401, 401)
    assert await status_of(service, second.session) == (200, 200)
    again = await service.client.delete(
        f"/v1/account/sessions/{theirs}", headers=bearer(second.session)
    )
    assert again.status == 404
    assert (await again.json())["error"] == "session_not_found"


async def test_another_accounts_session_cannot_be_ended(service: Service) -> None:
    ada = await signed_in(service, "google")
    grace = await signed_in(service, "google", user="grace")
    sid = claims_of(ada.session or "")["sid"]
    response = await service.client.delete(
        f"/v1/account/sessions/{sid}", headers=bearer(grace.session)
    )
    assert response.status == 404
    assert await status_of(service, ada.session) == (200, 200)


async def test_sign_out_everywhere_else_keeps_only_the_caller(stored: Service) -> None:
    first = await signed_in(stored, "google")
    second = await second_browser(stored)
    third = await second_browser(stored)
    response = await second.request("DELETE", "/v1/account/sessions", own_origin(stored))
    assert response.status == 204
    assert await status_of(stored, first.session) == (401, 401)
    assert await status_of(stored, third.session) == (401, 401)
    assert await status_of(stored, second.session) == (200, 200)


async def test_logout_everywhere_ends_every_session_including_the_caller(
    service: Service,
) -> None:
    first = await signed_in(service, "google")
    second = await second_browser(service)
    response = await second.request("POST", "/v1/auth/logout?everywhere=true", own_origin(service))
    assert response.status == 204
    assert await status_of(service, first.session) == (401, 401)
    assert second.session is None  # the cookie was cleared


def cleared_cookies(response: Any) -> set[str]:
    """The names of the cookies ``response`` clears (``Max-Age=0``)."""
    return {
        h.partition("=")[0] for h in response.headers.getall("Set-Cookie", []) if "Max-Age=0" in h
    }


async def test_an_ended_session_cannot_sign_out_everywhere(stored: Service) -> None:
    stolen = await signed_in(stored, "google")
    owner = await second_browser(stored)
    copy = stolen.session
    # The owner ends the stolen session from their own browser.
    sid = claims_of(copy or "")["sid"]
    ended = await owner.request("DELETE", f"/v1/account/sessions/{sid}", own_origin(stored))
    assert ended.status == 204
    # Its copy, still within its signature's lifetime, signs nothing out: by bearer, by cookie.
    response = await stored.client.post("/v1/auth/logout?everywhere=true", headers=bearer(copy))
    assert response.status == 401
    body = await response.json()
    assert body["error"] == "unauthorized" and "nothing was signed out" in body["message"]
    assert response.headers["WWW-Authenticate"] == 'Bearer error="invalid_token"'
    response = await stolen.request("POST", "/v1/auth/logout?everywhere=true", own_origin(stored))
    assert response.status == 401
    # The browser is left with nothing it could still use.
    assert {"session", "__Host-authgate_binding"} <= cleared_cookies(response)
    assert stolen.session is None
    assert await status_of(stored, owner.session) == (200, 200)
    # Nor without any session at all.
    response = await stored.client.post("/v1/auth/logout?everywhere=true")
    assert response.status == 401
    assert response.headers["WWW-Authenticate"] == "Bearer"
    assert await status_of(stored, owner.session) == (200, 200)


async def test_a_plain_sign_out_with_an_ended_session_ends_nothing_and_clears_the_cookies(
    service: Service,
) -> None:
    first = await signed_in(service, "google")
    other = await second_browser(service)
    copy = first.session or ""
    out = await first.request("POST", "/v1/auth/logout", own_origin(service))
    assert out.status == 204
    before = await events_of(service, other)
    # The ended session's token again, as a browser still holding it would send it: what it
    # asks (signed out) holds already, so 204 and the cookies cleared, nothing else ended.
    first.cookies["session"] = copy
    response = await first.request("POST", "/v1/auth/logout", own_origin(service))
    assert response.status == 204
    assert "session" in cleared_cookies(response)
    assert await status_of(service, other.session) == (200, 200)
    assert await events_of(service, other) == before  # no second sign-out recorded


async def events_of(service: Service, browser: Browser) -> list[Any]:
    exported = await service.client.get("/v1/account/export", headers=bearer(browser.session))
    assert exported.status == 200, await exported.text()
    events: list[Any] = (await exported.json())["events"]
    return events


async def test_unlinking_a_provider_ends_the_sessions_issued_through_it(
    stored: Service,
) -> None:
    owner = await signed_in(stored, "google", "facebook")
    # A session issued through facebook, in another browser (the thief's, say).
    through_facebook = Browser(stored)
    answer = await through_facebook.sign_in("facebook", "ada", intent="login")
    assert answer.status == 302 and through_facebook.session
    assert claims_of(through_facebook.session)["provider"] == "facebook"
    google_browser = await second_browser(stored)
    response = await stored.client.delete(
        "/v1/account/providers/facebook", headers=bearer(google_browser.session)
    )
    assert response.status == 200
    assert await status_of(stored, through_facebook.session) == (401, 401)
    assert await status_of(stored, google_browser.session) == (200, 200)
    del owner


# -- RFC 9470: a recent sign-in for account changes -------------------------------------------


def assert_step_up(response: Any, body: dict[str, Any]) -> None:
    assert response.status == 401
    assert body["error"] == "reauthentication_required"
    challenge = response.headers["WWW-Authenticate"]
    assert challenge.startswith("Bearer ")
    assert 'error="insufficient_user_authentication"' in challenge
    assert "max_age=600" in challenge


async def test_an_old_sign_in_cannot_unlink_link_or_end_other_sessions(
    stored: Service,
) -> None:
    browser = await signed_in(stored, "google", "facebook")
    old = stale(stored, browser.session)
    unlink = await stored.client.delete("/v1/account/providers/facebook", headers=bearer(old))
    assert_step_up(unlink, await unlink.json())
    others = await stored.client.delete("/v1/account/sessions", headers=bearer(old))
    assert_step_up(others, await others.json())
    everywhere = await stored.client.post("/v1/auth/logout?everywhere=true", headers=bearer(old))
    assert_step_up(everywhere, await everywhere.json())
    link = await Browser(stored).request(
        "GET",
        "/v1/auth/apple?intent=link&redirect_uri=" + stored.callback("apple"),
        {**bearer(old), "Accept": "application/json"},
    )
    assert_step_up(link, await link.json())
    # Reading stays allowed, and nothing changed.
    listed = await stored.client.get("/v1/account/providers", headers=bearer(old))
    assert [p["provider"] for p in (await listed.json())["providers"]] == ["google", "facebook"]


async def test_a_fresh_sign_in_restores_account_changes(service: Service) -> None:
    browser = await signed_in(service, "google", "facebook")
    assert (
        await service.client.delete(
            "/v1/account/providers/facebook", headers=bearer(stale(service, browser.session))
        )
    ).status == 401
    fresh = await second_browser(service)
    response = await service.client.delete(
        "/v1/account/providers/facebook", headers=bearer(fresh.session)
    )
    assert response.status == 200


async def test_the_session_token_carries_auth_time_and_a_session_id(service: Service) -> None:
    browser = await signed_in(service, "google")
    claims = claims_of(browser.session or "")
    assert isinstance(claims["sid"], str) and claims["sid"]
    assert abs(claims["auth_time"] - time.time()) < 120


async def test_the_new_operations_are_in_the_openapi_document(service: Service) -> None:
    document = await (await service.client.get("/openapi.json")).json()
    paths = document["paths"]
    assert "get" in paths["/v1/account/sessions"]
    assert "delete" in paths["/v1/account/sessions"]
    assert "delete" in paths["/v1/account/sessions/{id}"]
    logout = paths["/v1/auth/logout"]["post"]
    assert [p["name"] for p in logout["parameters"]] == ["everywhere"]
    for method, path in (("delete", "/v1/account/sessions"), ("get", "/v1/account/sessions")):
        assert paths[path][method]["security"], path


@pytest.mark.parametrize("everywhere", ["yes", "1"])
async def test_logout_with_a_malformed_everywhere_is_400(service: Service, everywhere: str) -> None:
    browser = await signed_in(service, "google")
    response = await service.client.post(
        f"/v1/auth/logout?everywhere={everywhere}", headers=bearer(browser.session)
    )
    assert response.status == 400
    assert await status_of(service, browser.session) == (200, 200)


# -- account deletion, export, the audit trail --------------------------------------------


async def test_deleting_the_account_ends_everything_and_the_identity_starts_afresh(
    stored: Service,
) -> None:
    browser = await signed_in(stored, "google", "facebook")
    other = await second_browser(stored)
    account_id = claims_of(browser.session or "")["sub"]
    old = stale(stored, browser.session)
    refused = await stored.client.delete("/v1/account", headers=bearer(old))
    assert_step_up(refused, await refused.json())
    response = await browser.request("DELETE", "/v1/account", own_origin(stored))
    assert response.status == 204
    assert browser.session is None  # cookies cleared
    assert await status_of(stored, other.session) == (401, 401)
    again = Browser(stored)
    answer = await again.sign_in("google", "ada", intent="login")
    assert "error=account_not_found" in answer.headers["Location"]
    answer = await again.sign_in("google", "ada", intent="register")
    assert "/onboarding" in answer.headers["Location"]
    assert claims_of(again.session or "")["sub"] != account_id


async def test_export_holds_account_identities_sessions_and_events(service: Service) -> None:
    browser = await signed_in(service, "google", "facebook")
    await second_browser(service)
    refused = await service.client.get(
        "/v1/account/export", headers=bearer(stale(service, browser.session))
    )
    assert_step_up(refused, await refused.json())
    response = await service.client.get("/v1/account/export", headers=bearer(browser.session))
    assert response.status == 200
    assert response.headers["Cache-Control"] == "no-store"
    body = await response.json()
    assert set(body) == {"account", "sessions", "events", "grants", "passkeys"}
    assert body["grants"] == []  # no consent given to any application
    assert body["passkeys"] == []  # none added
    assert body["account"]["email"] == "ada@example.test"
    assert [p["provider"] for p in body["account"]["providers"]] == ["google", "facebook"]
    # Two browsers, two sessions: the link went on in the session that started it.
    assert len(body["sessions"]) == 2
    outcomes = [e["outcome"] for e in body["events"]]
    assert "registered" in outcomes and "linked" in outcomes
    text = json_text(body)
    assert browser.session not in text and "token" not in text.lower()


async def test_account_changes_are_audit_events(stored: Service) -> None:
    browser = await signed_in(stored, "google", "facebook")
    second = await second_browser(stored)
    sid = claims_of(second.session or "")["sid"]
    await stored.client.delete(f"/v1/account/sessions/{sid}", headers=bearer(browser.session))
    await stored.client.delete("/v1/account/sessions", headers=bearer(browser.session))
    await stored.client.delete(
        "/v1/account/providers/facebook",
        headers={**bearer(browser.session), "User-Agent": "audit-check/1.0"},
    )
    await browser.request("POST", "/v1/auth/logout", own_origin(stored))
    fresh = await second_browser(stored)
    body = await (
        await stored.client.get("/v1/account/export", headers=bearer(fresh.session))
    ).json()
    events = body["events"]
    outcomes = [e["outcome"] for e in events]
    for expected in ("session_revoked", "signed_out_everywhere", "unlinked", "signed_out"):
        assert expected in outcomes, outcomes
    unlinked = next(e for e in events if e["outcome"] == "unlinked")
    assert unlinked["provider"] == "facebook"
    assert unlinked["userAgent"] == "audit-check/1.0"
    assert unlinked["address"]


def json_text(body: object) -> str:
    return json.dumps(body)


# -- intent=reauthenticate ------------------------------------------------------------------


async def reauthenticate(
    service: Service, browser: Browser, token: str, provider: str = "google", user: str = "ada"
) -> Any:
    """The re-authentication flow in ``browser`` with ``token`` as the caller's session."""
    url = await browser.start(provider, "reauthenticate", bearer=token)
    return url, await browser.back_to_service(await browser.decide(url, user))


async def test_reauthentication_restores_account_changes_with_a_new_session(
    stored: Service,
) -> None:
    browser = await signed_in(stored, "google", "facebook")
    old = stale(stored, browser.session)
    assert (
        await stored.client.delete("/v1/account/providers/facebook", headers=bearer(old))
    ).status == 401
    again = Browser(stored)
    url, answer = await reauthenticate(stored, again, old)
    # The provider is asked to authenticate the user again (OIDC).
    assert "prompt=login" in url and "max_age=0" in url
    assert answer.status == 302 and "error=" not in answer.headers["Location"]
    fresh = again.session
    assert fresh is not None and fresh != old
    assert claims_of(fresh)["sub"] == claims_of(old)["sub"]
    assert claims_of(fresh)["auth_time"] > claims_of(old)["auth_time"]
    response = await stored.client.delete("/v1/account/providers/facebook", headers=bearer(fresh))
    assert response.status == 200
    body = await (await stored.client.get("/v1/account/export", headers=bearer(fresh))).json()
    assert "reauthenticated" in [e["outcome"] for e in body["events"]]


async def test_reauthentication_with_another_identity_is_refused_and_changes_nothing(
    service: Service,
) -> None:
    browser = await signed_in(service, "google")
    await signed_in(service, "google", user="grace")  # grace has an account too
    old = stale(service, browser.session)
    again = Browser(service)
    _, answer = await reauthenticate(service, again, old, user="grace")
    assert answer.status == 302
    location = answer.headers["Location"]
    assert "error=authentication_failed" in location
    assert "reason=reauthentication_identity_mismatch" in location
    assert again.session is None
    listed = await service.client.get("/v1/account", headers=bearer(old))
    assert (await listed.json())["email"] == "ada@example.test"


async def test_reauthentication_needs_a_signed_in_caller_and_a_linked_provider(
    service: Service,
) -> None:
    anonymous = await Browser(service).request(
        "GET",
        "/v1/auth/google?intent=reauthenticate&redirect_uri=" + service.callback("google"),
        {"Accept": "application/json"},
    )
    assert anonymous.status == 401
    browser = await signed_in(service, "google")
    unlinked = await Browser(service).request(
        "GET",
        "/v1/auth/facebook?intent=reauthenticate&redirect_uri=" + service.callback("facebook"),
        {**bearer(browser.session), "Accept": "application/json"},
    )
    assert unlinked.status == 400
    assert (await unlinked.json())["error"] == "invalid_request"


async def test_a_non_oidc_provider_gets_no_prompt_parameters(service: Service) -> None:
    url = await Browser(service).start("facebook", "login")
    assert "prompt=" not in url and "max_age=" not in url


# -- sliding sessions ---------------------------------------------------------------------


def session_cookie_of(response: Any) -> str | None:
    for header in response.headers.getall("Set-Cookie", []):
        if header.startswith("session="):
            return str(header)
    return None


async def test_a_session_used_after_half_its_lifetime_gets_a_renewed_cookie(
    make_dev_service: StartService,
) -> None:
    service = await make_dev_service({"session": {"ttl_seconds": 4, "absolute_max_seconds": 60}})
    browser = await signed_in(service, "google")
    first = browser.session or ""
    early = await browser.request("GET", "/v1/account")
    assert early.status == 200 and session_cookie_of(early) is None  # not yet due
    await asyncio.sleep(2.2)
    later = await browser.request("GET", "/v1/account")
    assert later.status == 200
    header = session_cookie_of(later)
    assert header is not None and "Max-Age=" in header
    renewed = browser.session or ""
    assert renewed != first
    assert claims_of(renewed)["sid"] == claims_of(first)["sid"]
    assert claims_of(renewed)["auth_time"] == claims_of(first)["auth_time"]
    assert claims_of(renewed)["exp"] > claims_of(first)["exp"]
    # The older token stays valid until it expires; both end with the session.
    assert await status_of(service, first) == (200, 200)
    await browser.request("POST", "/v1/auth/logout", own_origin(service))
    assert await status_of(service, first) == (401, 401)
    assert await status_of(service, renewed) == (401, 401)


async def test_renewal_stops_at_the_absolute_limit_and_can_be_switched_off(
    make_dev_service: StartService,
) -> None:
    # Past half of a 6-second lifetime, well before its end (tokens count whole seconds).
    capped = await make_dev_service({"session": {"ttl_seconds": 6, "absolute_max_seconds": 6}})
    off = await make_dev_service({"session": {"ttl_seconds": 6, "sliding": False}})
    at_limit = await signed_in(capped, "google")
    never = await signed_in(off, "google")
    await asyncio.sleep(3.2)
    for browser in (at_limit, never):
        response = await browser.request("GET", "/v1/account")
        assert response.status == 200 and session_cookie_of(response) is None


def due_for_renewal(service: Service, token: str | None) -> str:
    """The same session's token, issued long enough ago that its renewal is due now."""
    assert token is not None
    ttl = service.config.session.ttl_seconds
    issued = int(time.time()) - ttl * 3 // 4
    return reissue(service, token, iat=issued, nbf=issued, exp=issued + ttl)


async def test_only_answers_that_authenticate_by_the_cookie_renew_it(
    make_dev_service: StartService,
) -> None:
    # /metrics on the main listener too, so that its answer is one of those checked.
    service = await make_dev_service({"metrics": {"port": None}})
    browser = await signed_in(service, "google", "facebook")
    due = due_for_renewal(service, browser.session)
    public = (
        "/.well-known/jwks.json",
        "/openapi.json",
        "/metrics",
        "/health/liveness",
        "/health/readiness",
        "/demo",
        f"/v1/auth/google?redirect_uri={service.callback('google')}",  # a plain sign-in start
    )
    for path in public:
        browser.cookies["session"] = due
        response = await browser.request("GET", path, {"Accept": "application/json"})
        assert response.status < 400, (path, response.status)
        assert session_cookie_of(response) is None, path
    # The bearer token is the credential: the cookie beside it was not used, nor renewed.
    browser.cookies["session"] = due
    response = await browser.request("GET", "/v1/account", bearer(due))
    assert response.status == 200 and session_cookie_of(response) is None
    # An account answer authenticated by the cookie renews it.
    response = await browser.request("GET", "/v1/account/sessions")
    assert response.status == 200 and session_cookie_of(response) is not None
    assert browser.session != due
    # So does a sign-in start that acts for the signed-in caller (re-authentication).
    browser.cookies["session"] = due
    query = f"redirect_uri={service.callback('google')}&intent=reauthenticate"
    headers = {"Accept": "application/json", "Sec-Fetch-Site": "same-origin"}
    response = await browser.request("GET", f"/v1/auth/google?{query}", headers)
    assert response.status == 200, await response.text()
    assert session_cookie_of(response) is not None


async def test_public_documents_say_how_long_they_may_be_cached(
    make_dev_service: StartService,
) -> None:
    service = await make_dev_service({"metrics": {"port": None}})
    expected = {
        "/.well-known/jwks.json": "public, max-age=60",
        "/openapi.json": "no-cache",
        "/metrics": "no-store",
        "/health/liveness": "no-store",
        "/health/readiness": "no-store",
    }
    for path, caching in expected.items():
        response = await service.client.get(path)
        assert response.status == 200, path
        assert response.headers.get("Cache-Control") == caching, path
