"""The account lifecycle over HTTP: GET /v1/account, DELETE /v1/account/providers/{provider},
POST /v1/auth/logout — with the bearer token and with the session cookie as the credential,
and the same-origin check that protects cookie-authenticated changes (CSRF)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from joserfc import jwt
from openapi_spec_validator import validate

from tests.devidp.support import Browser, Service
from tests.support.jwt import claims_of


async def signed_in(service: Service, *providers: str, user: str = "ada") -> Browser:
    """A browser whose account (registered with the first provider) holds ``providers``."""
    browser = Browser(service)
    first, *others = providers or ("google",)
    answer = await browser.sign_in(first, user)
    assert answer.status == 302 and browser.session, answer.headers
    for provider in others:
        answer = await browser.sign_in(provider, user, intent="link")
        assert answer.status == 302, answer.headers
        assert "error=" not in answer.headers["Location"], answer.headers["Location"]
    return browser


def reissue(service: Service, token: str, **changes: Any) -> str:
    """The session token re-signed with the service's key, with some claims changed."""
    key = service.session_key()
    claims = claims_of(token) | changes
    return jwt.encode({"alg": "ES256", "kid": key.kid}, claims, key, algorithms=["ES256"])


def bearer(token: str | None) -> dict[str, str]:
    assert token is not None
    return {"Authorization": f"Bearer {token}"}


def own_origin(service: Service) -> dict[str, str]:
    return {"Origin": service.base, "Sec-Fetch-Site": "same-origin"}


# -- GET /v1/account ------------------------------------------------------------------------


async def test_account_without_credentials_is_401(service: Service) -> None:
    response = await service.client.get("/v1/account")
    assert response.status == 401
    # What a person needs to do, naming both credentials the operation takes.
    assert await response.json() == {
        "error": "unauthorized",
        "message": "sign in first: no bearer token or session cookie",
    }
    assert response.headers["WWW-Authenticate"].startswith("Bearer")


async def test_account_by_bearer_token(service: Service) -> None:
    browser = await signed_in(service, "google", "facebook")
    response = await service.client.get("/v1/account", headers=bearer(browser.session))
    assert response.status == 200
    assert response.headers["Cache-Control"] == "no-store"
    body = await response.json()
    assert set(body) == {
        "id",
        "email",
        "emailVerified",
        "name",
        "createdAt",
        "lastSignInAt",
        "providers",
    }
    assert body["id"] == claims_of(browser.session or "")["sub"]
    assert body["email"] == "ada@example.test"
    assert body["emailVerified"] is True  # the google-shaped ID token says so
    assert body["name"] == "Ada Lovelace"
    created = dt.datetime.fromisoformat(body["createdAt"])
    last = dt.datetime.fromisoformat(body["lastSignInAt"])
    assert created.tzinfo is not None and last >= created
    assert [(p["provider"], p["isPrimary"]) for p in body["providers"]] == [
        ("google", True),
        ("facebook", False),
    ]
    for p in body["providers"]:
        assert p["providerId"].startswith(f"user:{p['provider']}:")
        assert set(p) == {"provider", "providerId", "linkedAt", "isPrimary"}


async def test_email_of_unknown_verification_reads_unverified(service: Service) -> None:
    # The development provider's facebook shape answers a Graph-style profile that never says
    # whether the address is verified; Mallory's is not verified at all.
    for user in ("ada", "mallory"):
        browser = await signed_in(service, "facebook", user=user)
        body = await (await browser.request("GET", "/v1/account")).json()
        assert body["email"] == f"{user}@example.test"
        assert body["emailVerified"] is False


async def test_account_by_session_cookie(service: Service) -> None:
    browser = await signed_in(service)
    response = await browser.request("GET", "/v1/account")
    assert response.status == 200
    assert (await response.json())["providers"][0]["provider"] == "google"


async def test_account_with_a_tampered_cookie_or_token_is_401(service: Service) -> None:
    browser = await signed_in(service)
    token = browser.session or ""
    forged = token[:-4] + ("AAAA" if token[-4:] != "AAAA" else "BBBB")
    browser.cookies["session"] = forged
    assert (await browser.request("GET", "/v1/account")).status == 401
    response = await service.client.get("/v1/account", headers=bearer(forged))
    assert response.status == 401


async def test_account_needs_a_read_scope(service: Service) -> None:
    browser = await signed_in(service)
    token = reissue(service, browser.session or "", scope="openid")
    response = await service.client.get("/v1/account", headers=bearer(token))
    assert response.status == 403
    assert (await response.json())["error"] == "insufficient_scope"
    browser.cookies["session"] = token
    response = await browser.request("GET", "/v1/account")
    assert response.status == 403
    assert (await response.json())["error"] == "insufficient_scope"
    read_only = reissue(service, browser.session or "", scope="account:read")
    response = await service.client.get("/v1/account", headers=bearer(read_only))
    assert response.status == 200


async def test_linked_providers_takes_the_bearer_token_not_the_cookie(service: Service) -> None:
    # Spec 4.4: GET /v1/account/providers is bearer-only; pages use GET /v1/account.
    browser = await signed_in(service, "google", "apple")
    response = await browser.request("GET", "/v1/account/providers")
    assert response.status == 401
    response = await service.client.get("/v1/account/providers", headers=bearer(browser.session))
    assert response.status == 200
    body = await response.json()
    assert [p["provider"] for p in body["providers"]] == ["google", "apple"]


# -- DELETE /v1/account/providers/{provider} ------------------------------------------------


async def test_unlink_by_bearer_token(service: Service) -> None:
    browser = await signed_in(service, "google", "facebook", "apple")
    response = await service.client.delete(
        "/v1/account/providers/facebook", headers=bearer(browser.session)
    )
    assert response.status == 200
    assert response.headers["Cache-Control"] == "no-store"
    remaining = [p["provider"] for p in (await response.json())["providers"]]
    assert remaining == ["google", "apple"]
    listed = await service.client.get("/v1/account/providers", headers=bearer(browser.session))
    assert [p["provider"] for p in (await listed.json())["providers"]] == ["google", "apple"]


async def test_unlinked_identity_no_longer_signs_in(service: Service) -> None:
    browser = await signed_in(service, "google", "facebook")
    response = await browser.request(
        "DELETE", "/v1/account/providers/facebook", own_origin(service)
    )
    assert response.status == 200
    answer = await Browser(service).sign_in("facebook", intent="login")
    assert "error=account_not_found" in answer.headers["Location"]


async def test_unlinking_the_primary_provider_is_allowed_while_another_remains(
    service: Service,
) -> None:
    browser = await signed_in(service, "google", "facebook")
    response = await browser.request("DELETE", "/v1/account/providers/google", own_origin(service))
    assert response.status == 200
    assert [p["provider"] for p in (await response.json())["providers"]] == ["facebook"]
    answer = await Browser(service).sign_in("facebook", intent="login")
    assert answer.headers["Location"] == f"{service.config.app.url}/dashboard"


async def test_the_last_provider_cannot_be_unlinked(service: Service) -> None:
    browser = await signed_in(service, "google")
    response = await service.client.delete(
        "/v1/account/providers/google", headers=bearer(browser.session)
    )
    assert response.status == 409
    body = await response.json()
    assert body["error"] == "last_provider"
    assert "google" in body["message"]
    listed = await service.client.get("/v1/account/providers", headers=bearer(browser.session))
    assert [p["provider"] for p in (await listed.json())["providers"]] == ["google"]


async def test_unlinking_a_provider_that_is_not_linked_is_404(service: Service) -> None:
    browser = await signed_in(service, "google", "facebook")
    response = await service.client.delete(
        "/v1/account/providers/apple", headers=bearer(browser.session)
    )
    assert response.status == 404
    assert (await response.json())["error"] == "provider_not_linked"


async def test_unlinking_an_unknown_provider_is_400(service: Service) -> None:
    browser = await signed_in(service, "google", "facebook")
    response = await service.client.delete(
        "/v1/account/providers/github", headers=bearer(browser.session)
    )
    assert response.status == 400
    body = await response.json()
    assert body["error"] == "invalid_provider"
    assert body["message"] == (
        "unsupported provider 'github'; valid providers: google, facebook, apple"
    )
    response = await service.client.delete(
        "/v1/account/providers/Not%20A%20Name", headers=bearer(browser.session)
    )
    assert response.status == 400
    assert (await response.json())["error"] == "invalid parameter value in path: provider"


async def test_unlink_without_credentials_is_401(service: Service) -> None:
    response = await service.client.delete("/v1/account/providers/google")
    assert response.status == 401


async def test_unlink_needs_the_manage_scope(service: Service) -> None:
    browser = await signed_in(service, "google", "facebook")
    read_only = reissue(service, browser.session or "", scope="account:read")
    response = await service.client.delete(
        "/v1/account/providers/facebook", headers=bearer(read_only)
    )
    assert response.status == 403
    assert (await response.json())["error"] == "insufficient_scope"
    browser.cookies["session"] = read_only
    response = await browser.request(
        "DELETE", "/v1/account/providers/facebook", own_origin(service)
    )
    assert response.status == 403
    assert (await response.json())["error"] == "insufficient_scope"


# -- CSRF: the session cookie as the credential ---------------------------------------------


async def test_unlink_by_cookie_from_the_service_own_page(service: Service) -> None:
    browser = await signed_in(service, "google", "facebook")
    # Chromium and Firefox send both headers on a same-origin fetch.
    response = await browser.request(
        "DELETE", "/v1/account/providers/facebook", own_origin(service)
    )
    assert response.status == 200
    # An older browser that sends Origin but no Fetch Metadata.
    await browser.sign_in("facebook", intent="link")
    response = await browser.request(
        "DELETE", "/v1/account/providers/facebook", {"Origin": service.base}
    )
    assert response.status == 200


async def test_unlink_by_cookie_from_the_application_origin(service: Service) -> None:
    browser = await signed_in(service, "google", "facebook")
    response = await browser.request(
        "DELETE", "/v1/account/providers/facebook", {"Origin": service.config.app.url}
    )
    assert response.status == 200


CROSS_SITE = [
    {},  # neither header: a non-browser client with the cookie, or a stripped request
    {"Origin": "https://evil.example"},
    {"Origin": "null"},  # sandboxed frames, data: URLs
    {"Origin": "http://127.0.0.1.evil.example"},
    {"Sec-Fetch-Site": "cross-site"},
    {"Sec-Fetch-Site": "same-site"},  # a sibling sub-domain is another origin
    {"Sec-Fetch-Site": "none"},
]


async def test_unlink_by_cookie_from_another_site_is_refused(service: Service) -> None:
    browser = await signed_in(service, "google", "facebook")
    for headers in [*CROSS_SITE, {"Origin": service.base, "Sec-Fetch-Site": "cross-site"}]:
        response = await browser.request("DELETE", "/v1/account/providers/facebook", headers)
        assert response.status == 403, headers
        # Another origin's page is refused before the operation; the service's own origin
        # reported cross-site, or no Origin at all, by the same-origin guard.
        foreign = headers.get("Origin", service.base) != service.base
        refusal = "origin_not_allowed" if foreign else "cross_site_request"
        assert (await response.json())["error"] == refusal, headers
    listed = await service.client.get("/v1/account/providers", headers=bearer(browser.session))
    assert [p["provider"] for p in (await listed.json())["providers"]] == ["google", "facebook"]


async def test_bearer_requests_need_no_origin_check(service: Service) -> None:
    # A browser never attaches an Authorization header by itself: no CSRF with the bearer.
    browser = await signed_in(service, "google", "facebook")
    response = await service.client.delete(
        "/v1/account/providers/facebook",
        headers={**bearer(browser.session), "Origin": "https://tool.example"},
    )
    assert response.status == 200


async def test_bearer_wins_over_the_cookie(service: Service) -> None:
    ada = await signed_in(service, "google", "facebook")
    grace = await signed_in(service, "google", "facebook", user="grace")
    # Grace's cookie, Ada's token: the token decides whose account answers.
    response = await grace.request("GET", "/v1/account", bearer(ada.session))
    assert (await response.json())["email"] == "ada@example.test"


# -- POST /v1/auth/logout -------------------------------------------------------------------


async def test_logout_clears_the_session_and_binding_cookies(service: Service) -> None:
    browser = await signed_in(service, "google")
    await browser.start("facebook", "link")  # leaves a binding cookie behind
    assert "__Host-authgate_binding" in browser.cookies
    response = await browser.request("POST", "/v1/auth/logout", own_origin(service))
    assert response.status == 204
    assert response.headers["Cache-Control"] == "no-store"
    set_cookies = response.headers.getall("Set-Cookie")
    session = next(c for c in set_cookies if c.startswith("session="))
    binding = next(c for c in set_cookies if c.startswith("__Host-authgate_binding="))
    for header, path in ((session, "Path=/;"), (binding, "Path=/;")):
        assert "Max-Age=0" in header and "HttpOnly" in header and "Secure" in header
        assert path in header + ";"
    assert 'session="";' in session or "session=;" in session
    assert browser.cookies == {}
    assert (await browser.request("GET", "/v1/account")).status == 401


async def test_logout_revokes_a_copied_token(service: Service) -> None:
    # Sessions have a server-side record: signing out ends the session, not just the cookie.
    browser = await signed_in(service, "google")
    token = browser.session
    await browser.request("POST", "/v1/auth/logout", own_origin(service))
    response = await service.client.get("/v1/account", headers=bearer(token))
    assert response.status == 401
    assert (await response.json())["error"] == "unauthorized"


async def test_logout_without_cookies_is_harmless(service: Service) -> None:
    response = await service.client.post("/v1/auth/logout")
    assert response.status == 204


async def test_logout_from_another_site_is_refused(service: Service) -> None:
    browser = await signed_in(service, "google")
    for headers in CROSS_SITE:
        response = await browser.request("POST", "/v1/auth/logout", headers)
        assert response.status == 403, headers
        assert "Set-Cookie" not in response.headers
    assert (await browser.request("GET", "/v1/account")).status == 200


# -- the OpenAPI document -------------------------------------------------------------------


async def test_operations_are_in_the_openapi_document(service: Service) -> None:
    document = await (await service.client.get("/openapi.json")).json()
    validate(document)
    schemes = document["components"]["securitySchemes"]
    assert schemes["sessionCookie"] == {"type": "apiKey", "in": "cookie", "name": "session"}
    assert schemes["bearerAuth"]["scheme"] == "bearer"
    both: list[dict[str, list[str]]] = [{"bearerAuth": []}, {"sessionCookie": []}]
    account = document["paths"]["/v1/account"]["get"]
    assert account["security"] == both
    assert set(account["responses"]) >= {"200", "401", "403", "404"}
    schema = account["responses"]["200"]["content"]["application/json"]["schema"]
    assert set(schema["properties"]) == {
        "id",
        "email",
        "emailVerified",
        "name",
        "createdAt",
        "lastSignInAt",
        "providers",
    }
    assert set(schema["required"]) == {"id", "createdAt", "providers", "emailVerified"}
    assert schema["properties"]["emailVerified"]["type"] == "boolean"
    unlink = document["paths"]["/v1/account/providers/{provider}"]["delete"]
    assert unlink["security"] == both
    assert set(unlink["responses"]) >= {"200", "400", "401", "403", "404", "409"}
    assert unlink["parameters"][0]["in"] == "path"
    logout = document["paths"]["/v1/auth/logout"]["post"]
    assert "security" not in logout
    assert set(logout["responses"]) >= {"204", "403"}
    assert document["paths"]["/v1/account/providers"]["get"]["security"] == [{"bearerAuth": []}]
