"""The development identity provider: its endpoints on their own, and sign-ins through the
service's real adapters in each provider shape."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import stat
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
from joserfc import jwt
from joserfc.jwk import ECKey, KeySet

from authgate.domain.secrets import pkce_challenge as s256
from authgate.entrypoints.devidp import GrantStore
from authgate.entrypoints.devidp.grants import CodeGrant
from authgate.entrypoints.devidp.keys import ensure_apple_key_file
from tests.devidp.support import (
    APPLE_CLIENT_ID,
    FACEBOOK_SECRET,
    GOOGLE_SECRET,
    Browser,
    Service,
    form_action,
    hidden_fields,
)

GOOGLE = "authgate-dev-google"
FACEBOOK = "authgate-dev-facebook"


def authorize_query(service: Service, provider: str, client_id: str, **extra: str) -> str:
    verifier = extra.pop("verifier", "v" * 43)
    fields = {
        "client_id": client_id,
        "redirect_uri": service.callback(provider),
        "response_type": "code",
        "scope": "openid email profile",
        "state": "the-state",
        "nonce": "the-nonce",
        "code_challenge": s256(verifier),
        "code_challenge_method": "S256",
    } | extra
    return urlencode({k: v for k, v in fields.items() if v != ""})


async def code_for(
    service: Service, provider: str = "google", client_id: str = GOOGLE, **extra: str
) -> str:
    """An authorization code for Ada (query response mode)."""
    query = authorize_query(service, provider, client_id, **extra)
    response = await service.client.post(
        "/dev/idp/authorize",
        data={**{k: v[0] for k, v in parse_qs(query).items()}, "user": "ada"},
        allow_redirects=False,
    )
    assert response.status == 302, await response.text()
    answer = parse_qs(urlsplit(response.headers["Location"]).query)
    assert answer["state"] == ["the-state"]
    return answer["code"][0]


async def redeem(service: Service, code: str, **overrides: Any) -> Any:
    form = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": service.callback("google"),
        "client_id": GOOGLE,
        "client_secret": GOOGLE_SECRET,
        "code_verifier": "v" * 43,
    }
    headers = overrides.pop("headers", {})
    form.update(overrides)
    return await service.client.post(
        "/dev/idp/token", data={k: v for k, v in form.items() if v is not None}, headers=headers
    )


# -- discovery and keys ---------------------------------------------------------------------


async def test_discovery_names_the_issuer_the_service_listens_on(service: Service) -> None:
    response = await service.client.get("/dev/idp/.well-known/openid-configuration")
    assert response.status == 200
    document = await response.json()
    assert document["issuer"] == service.issuer
    assert document["issuer"] == f"http://127.0.0.1:{service.config.rest.port}/dev/idp"
    assert document["authorization_endpoint"] == f"{service.issuer}/authorize"
    for key in ("token", "userinfo"):
        assert document[f"{key}_endpoint"] == f"{service.issuer}/{key}"
    assert document["jwks_uri"] == f"{service.issuer}/jwks"
    assert document["code_challenge_methods_supported"] == ["S256"]
    assert document["response_modes_supported"] == ["query", "form_post"]


async def test_key_set_is_public_only(service: Service) -> None:
    keys = (await (await service.client.get("/dev/idp/jwks")).json())["keys"]
    assert len(keys) == 1
    assert keys[0]["kty"] == "RSA" and keys[0]["alg"] == "RS256" and keys[0]["kid"]
    assert not {"d", "p", "q", "dp", "dq", "qi"} & set(keys[0])


# -- the authorization page -----------------------------------------------------------------


async def test_authorization_page_lists_test_users_and_a_deny_button(service: Service) -> None:
    query = authorize_query(service, "google", GOOGLE, state='"><script>alert(1)</script>')
    response = await service.client.get(f"/dev/idp/authorize?{query}")
    assert response.status == 200
    assert response.content_type == "text/html"
    html = await response.text()
    assert "<h1>Sign in with Google</h1>" in html
    for name in ("Ada Lovelace", "Grace Hopper", "Alan Turing", "Mallory Unverified"):
        assert f"Continue as {name}" in html
    assert 'name="deny"' in html
    assert "<script>alert" not in html  # the request's values are escaped
    assert hidden_fields(html)["state"] == '"><script>alert(1)</script>'
    assert response.headers["X-Frame-Options"] == "DENY"
    assert "frame-ancestors 'none'" in response.headers["Content-Security-Policy"]
    assert response.headers["Referrer-Policy"] == "no-referrer"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"client_id": "someone-else"}, "unknown client_id"),
        ({"redirect_uri": "https://evil.example/callback"}, "redirect_uri is not registered"),
        ({"redirect_uri": ""}, "redirect_uri is not registered"),
    ],
)
async def test_unknown_client_or_redirect_uri_is_an_error_page_not_a_redirect(
    service: Service, change: dict[str, str], message: str
) -> None:
    fields = parse_qs(authorize_query(service, "google", GOOGLE))
    query = urlencode({k: v[0] for k, v in fields.items()} | change)
    response = await service.client.get(f"/dev/idp/authorize?{query}", allow_redirects=False)
    assert response.status == 400
    assert "Location" not in response.headers
    assert message in await response.text()


async def test_redirect_uri_of_another_provider_is_refused(service: Service) -> None:
    query = authorize_query(service, "google", GOOGLE, redirect_uri=service.callback("apple"))
    response = await service.client.get(f"/dev/idp/authorize?{query}")
    assert response.status == 400


@pytest.mark.parametrize(
    ("change", "error"),
    [
        ({"response_type": "token"}, "unsupported_response_type"),
        ({"scope": "email profile"}, "invalid_scope"),
        ({"code_challenge_method": "plain"}, "invalid_request"),
        ({"code_challenge_method": ""}, "invalid_request"),
        ({"code_challenge": "short"}, "invalid_request"),
        ({"code_challenge": ""}, "invalid_request"),
        ({"response_mode": "fragment"}, "invalid_request"),
    ],
)
async def test_invalid_requests_are_answered_at_the_redirect_uri(
    service: Service, change: dict[str, str], error: str
) -> None:
    query = authorize_query(service, "google", GOOGLE, **change)
    response = await service.client.get(f"/dev/idp/authorize?{query}", allow_redirects=False)
    assert response.status == 302
    location = response.headers["Location"]
    assert location.startswith(service.callback("google") + "?")
    answer = parse_qs(urlsplit(location).query)
    assert answer["error"] == [error]
    assert answer["state"] == ["the-state"]


async def test_apple_requires_form_post_for_name_and_email(service: Service) -> None:
    query = authorize_query(service, "apple", APPLE_CLIENT_ID, scope="name email")
    response = await service.client.get(f"/dev/idp/authorize?{query}", allow_redirects=False)
    assert response.status == 302
    assert parse_qs(urlsplit(response.headers["Location"]).query)["error"] == ["invalid_request"]


async def test_a_repeated_parameter_is_refused(service: Service) -> None:
    query = authorize_query(service, "google", GOOGLE) + "&state=another"
    response = await service.client.get(f"/dev/idp/authorize?{query}")
    assert response.status == 400
    assert "appears more than once" in await response.text()


async def test_choosing_no_listed_user_is_refused(service: Service) -> None:
    query = authorize_query(service, "google", GOOGLE)
    data = {k: v[0] for k, v in parse_qs(query).items()} | {"user": "root"}
    response = await service.client.post("/dev/idp/authorize", data=data, allow_redirects=False)
    assert response.status == 400


@pytest.mark.parametrize(
    ("provider", "client_id", "expected"),
    [
        ("google", GOOGLE, {"error": ["access_denied"]}),
        (
            "facebook",
            FACEBOOK,
            {"error": ["access_denied"], "error_reason": ["user_denied"], "error_code": ["200"]},
        ),
    ],
)
async def test_deny_redirects_with_the_provider_error(
    service: Service, provider: str, client_id: str, expected: dict[str, list[str]]
) -> None:
    scope = "openid email" if provider == "google" else "public_profile,email"
    query = authorize_query(service, provider, client_id, scope=scope)
    data = {k: v[0] for k, v in parse_qs(query).items()} | {"deny": "1"}
    response = await service.client.post("/dev/idp/authorize", data=data, allow_redirects=False)
    assert response.status == 302
    answer = parse_qs(urlsplit(response.headers["Location"]).query)
    assert "code" not in answer
    assert answer["state"] == ["the-state"]
    for key, value in expected.items():
        assert answer[key] == value


async def test_apple_deny_is_posted_back_as_user_cancelled_authorize(service: Service) -> None:
    query = authorize_query(
        service, "apple", APPLE_CLIENT_ID, scope="name email", response_mode="form_post"
    )
    data = {k: v[0] for k, v in parse_qs(query).items()} | {"deny": "1"}
    response = await service.client.post("/dev/idp/authorize", data=data)
    assert response.status == 200
    html = await response.text()
    assert form_action(html) == service.callback("apple")
    assert hidden_fields(html) == {"error": "user_cancelled_authorize", "state": "the-state"}
    assert '<script src="/dev/idp/form-post.js"></script>' in html
    script = await service.client.get("/dev/idp/form-post.js")
    assert script.content_type == "text/javascript"


# -- the token endpoint ---------------------------------------------------------------------


async def test_google_shape_token_answer_and_id_token(service: Service) -> None:
    code = await code_for(service)
    response = await redeem(service, code)
    assert response.status == 200, await response.text()
    assert response.headers["Cache-Control"] == "no-store"
    body = await response.json()
    assert body["token_type"] == "Bearer" and body["expires_in"] == 3600
    keys = KeySet.import_key_set(await (await service.client.get("/dev/idp/jwks")).json())
    token = jwt.decode(body["id_token"], keys, algorithms=["RS256"])
    claims = token.claims
    assert token.header["kid"] == keys.keys[0].kid
    assert claims["iss"] == service.issuer
    assert claims["aud"] == GOOGLE and claims["azp"] == GOOGLE
    assert claims["nonce"] == "the-nonce"
    assert claims["email"] == "ada@example.test" and claims["email_verified"] is True
    assert claims["name"] == "Ada Lovelace"
    assert claims["sub"].isdigit() and len(claims["sub"]) == 21
    assert claims["exp"] > claims["iat"]
    info = await service.client.get(
        "/dev/idp/userinfo", headers={"Authorization": f"Bearer {body['access_token']}"}
    )
    assert (await info.json())["sub"] == claims["sub"]


async def test_client_secret_basic_is_accepted_for_the_google_shape(service: Service) -> None:
    code = await code_for(service)
    basic = base64.b64encode(f"{GOOGLE}:{GOOGLE_SECRET}".encode()).decode()
    response = await redeem(
        service, code, client_secret=None, headers={"Authorization": f"Basic {basic}"}
    )
    assert response.status == 200, await response.text()


@pytest.mark.parametrize(
    ("overrides", "status", "error"),
    [
        ({"client_secret": "wrong"}, 401, "invalid_client"),
        ({"client_secret": None}, 401, "invalid_client"),
        ({"client_id": "nobody"}, 401, "invalid_client"),
        ({"code_verifier": "w" * 43}, 400, "invalid_grant"),
        ({"code_verifier": None}, 400, "invalid_grant"),
        ({"code_verifier": "short"}, 400, "invalid_grant"),
        ({"redirect_uri": "http://localhost/v1/auth/google/callback"}, 400, "invalid_grant"),
        ({"use_code": "not-a-code"}, 400, "invalid_grant"),
        ({"grant_type": "refresh_token"}, 400, "unsupported_grant_type"),
    ],
)
async def test_token_request_failures(
    service: Service, overrides: dict[str, Any], status: int, error: str
) -> None:
    code = await code_for(service)
    response = await redeem(service, overrides.pop("use_code", code), **overrides)
    assert response.status == status
    assert (await response.json())["error"] == error


async def test_a_code_is_single_use(service: Service) -> None:
    code = await code_for(service)
    assert (await redeem(service, code)).status == 200
    again = await redeem(service, code)
    assert again.status == 400
    assert (await again.json())["error"] == "invalid_grant"


async def test_a_failed_pkce_check_burns_the_code(service: Service) -> None:
    code = await code_for(service)
    assert (await redeem(service, code, code_verifier="w" * 43)).status == 400
    assert (await redeem(service, code)).status == 400


async def test_a_code_of_another_client_is_refused(service: Service) -> None:
    code = await code_for(service, "facebook", FACEBOOK, scope="public_profile email", nonce="")
    response = await redeem(service, code, redirect_uri=service.callback("facebook"))
    assert response.status == 400
    assert (await response.json())["error"] == "invalid_grant"


async def test_facebook_shape_refuses_client_secret_basic(service: Service) -> None:
    code = await code_for(service, "facebook", FACEBOOK, scope="public_profile email")
    basic = base64.b64encode(f"{FACEBOOK}:{FACEBOOK_SECRET}".encode()).decode()
    response = await redeem(
        service,
        code,
        client_id=None,
        client_secret=None,
        redirect_uri=service.callback("facebook"),
        headers={"Authorization": f"Basic {basic}"},
    )
    assert response.status == 401


async def test_form_body_is_required(service: Service) -> None:
    response = await service.client.post("/dev/idp/token", json={"grant_type": "x"})
    assert response.status == 400
    assert (await response.json())["error"] == "invalid_request"


# -- the facebook shape: no ID token, a profile request with appsecret_proof ---------------


async def facebook_token(service: Service) -> str:
    code = await code_for(service, "facebook", FACEBOOK, scope="public_profile email")
    response = await redeem(
        service,
        code,
        client_id=FACEBOOK,
        client_secret=FACEBOOK_SECRET,
        redirect_uri=service.callback("facebook"),
    )
    assert response.status == 200
    body = await response.json()
    assert "id_token" not in body and body["token_type"] == "bearer"
    token: str = body["access_token"]
    return token


def proof(token: str) -> str:
    return hmac.new(FACEBOOK_SECRET.encode(), token.encode(), hashlib.sha256).hexdigest()


async def test_profile_with_appsecret_proof(service: Service) -> None:
    token = await facebook_token(service)
    response = await service.client.get(
        f"/dev/idp/me?fields=id,name,email&appsecret_proof={proof(token)}",
        headers={"Authorization": f"Bearer {token}"},
    )
    assert response.status == 200
    body = await response.json()
    assert set(body) == {"id", "name", "email"}
    assert body["name"] == "Ada Lovelace" and body["email"] == "ada@example.test"
    assert body["id"].isdigit()


@pytest.mark.parametrize("given", ["", "0" * 64, "wrong"])
async def test_profile_without_a_valid_appsecret_proof_is_refused(
    service: Service, given: str
) -> None:
    token = await facebook_token(service)
    response = await service.client.get(
        f"/dev/idp/me?fields=id,name&appsecret_proof={given}",
        headers={"Authorization": f"Bearer {token}"},
    )
    assert response.status == 400
    assert (await response.json())["error"]["type"] == "GraphMethodException"


async def test_profile_refuses_an_unknown_token_and_a_google_token(service: Service) -> None:
    response = await service.client.get("/dev/idp/me", headers={"Authorization": "Bearer nope"})
    assert response.status == 400
    assert (await response.json())["error"]["code"] == 190
    google = (await (await redeem(service, await code_for(service))).json())["access_token"]
    response = await service.client.get(
        f"/dev/idp/me?appsecret_proof={proof(google)}",
        headers={"Authorization": f"Bearer {google}"},
    )
    assert response.status == 400


async def test_userinfo_refuses_a_missing_or_unknown_token(service: Service) -> None:
    for headers in ({}, {"Authorization": "Bearer nope"}):
        response = await service.client.get("/dev/idp/userinfo", headers=headers)
        assert response.status == 401
        assert response.headers["WWW-Authenticate"].startswith("Bearer")


# -- the apple shape: a client-secret JWT, form_post, the first-time user JSON -------------


async def apple_code(service: Service) -> str:
    query = authorize_query(
        service, "apple", APPLE_CLIENT_ID, scope="name email", response_mode="form_post"
    )
    data = {k: v[0] for k, v in parse_qs(query).items()} | {"user": "grace"}
    page = await service.client.post("/dev/idp/authorize", data=data)
    fields = hidden_fields(await page.text())
    return fields["code"]


async def redeem_apple(service: Service, secret: str) -> Any:
    return await redeem(
        service,
        await apple_code(service),
        client_id=APPLE_CLIENT_ID,
        client_secret=secret,
        redirect_uri=service.callback("apple"),
    )


async def test_apple_client_secret_jwt_is_verified(service: Service) -> None:
    response = await redeem_apple(service, service.apple_secret())
    assert response.status == 200, await response.text()
    body = await response.json()
    claims = json.loads(base64.urlsafe_b64decode(body["id_token"].split(".")[1] + "=="))
    assert claims["aud"] == APPLE_CLIENT_ID
    assert claims["email"] == "grace@example.test"
    assert claims["email_verified"] == "true"  # a string, as Apple writes it
    assert "name" not in claims


@pytest.mark.parametrize(
    "overrides",
    [
        {"key": ECKey.generate_key("P-256")},  # not the client's key
        {"kid": "OTHERKEY01"},
        {"iss": "OTHERTEAM1"},
        {"sub": "someone.else"},
        {"aud": "https://appleid.apple.com"},
        {"exp": 1_000_000, "iat": 999_000},  # long expired
        {"iat": 4_000_000_000, "exp": 4_000_000_300},  # issued in the future
        {"exp": 4_000_000_000},  # more than six months long
    ],
)
async def test_a_bad_apple_client_secret_is_refused(
    service: Service, overrides: dict[str, Any]
) -> None:
    response = await redeem_apple(service, service.apple_secret(**overrides))
    assert response.status == 401
    assert (await response.json())["error"] == "invalid_client"


async def test_apple_refuses_a_plain_secret(service: Service) -> None:
    response = await redeem_apple(service, "a-plain-secret")
    assert response.status == 401


async def test_apple_sends_the_user_json_only_the_first_time(service: Service) -> None:
    query = authorize_query(
        service, "apple", APPLE_CLIENT_ID, scope="name email", response_mode="form_post"
    )
    data = {k: v[0] for k, v in parse_qs(query).items()} | {"user": "alan"}
    first = hidden_fields(await (await service.client.post("/dev/idp/authorize", data=data)).text())
    assert json.loads(first["user"]) == {
        "name": {"firstName": "Alan", "lastName": "Turing"},
        "email": "alan@example.test",
    }
    again = hidden_fields(await (await service.client.post("/dev/idp/authorize", data=data)).text())
    assert "user" not in again and "code" in again


# -- through the service's real adapters ----------------------------------------------------


@pytest.mark.parametrize("provider", ["google", "facebook", "apple"])
async def test_register_then_sign_in_with_each_shape(service: Service, provider: str) -> None:
    browser = Browser(service)
    answer = await browser.sign_in(provider, "ada")
    assert answer.status == 302
    assert answer.headers["Location"] == f"{service.config.app.url}/onboarding"
    assert browser.session is not None
    account = await (await browser.request("GET", "/v1/account")).json()
    assert account["email"] == "ada@example.test"
    assert account["name"] == "Ada Lovelace"  # apple: from the first-time user JSON
    again = Browser(service)
    answer = await again.sign_in(provider, "ada", intent="login")
    assert answer.headers["Location"] == f"{service.config.app.url}/dashboard"
    assert (await (await again.request("GET", "/v1/account")).json())["id"] == account["id"]


async def test_each_provider_gives_one_person_a_different_identity(service: Service) -> None:
    browser = Browser(service)
    await browser.sign_in("google", "ada")
    for provider in ("facebook", "apple"):
        await browser.sign_in(provider, "ada", intent="link")
    providers = (await (await browser.request("GET", "/v1/account")).json())["providers"]
    ids = [p["providerId"].split(":", 2)[2] for p in providers]
    assert len(set(ids)) == 3


async def test_unverified_email_is_refused_by_the_oidc_shapes(service: Service) -> None:
    for provider in ("google", "apple"):
        answer = await Browser(service).sign_in(provider, "mallory")
        location = answer.headers["Location"]
        assert location.endswith("/login?error=authentication_failed&reason=email_not_verified")


async def test_denial_reaches_the_login_page(service: Service) -> None:
    browser = Browser(service)
    url = await browser.start("google")
    answer = await browser.back_to_service(await browser.decide(url, None))
    assert answer.headers["Location"] == (
        f"{service.config.app.url}/login?error=access_denied&reason=user_denied"
    )
    assert browser.session is None


async def test_a_replayed_code_gets_no_session(service: Service) -> None:
    browser = Browser(service)
    url = await browser.start("google")
    decision = await browser.decide(url, "ada")
    callback = decision.headers["Location"]
    assert (await browser.request("GET", callback)).status == 302
    replay = Browser(service)
    replay.cookies = {
        "__Host-authgate_binding": browser.cookies.get("__Host-authgate_binding", "x" * 43)
    }
    answer = await replay.request("GET", callback, {"Accept": "application/json"})
    assert answer.status == 401 and replay.session is None


async def test_nothing_secret_is_logged(service: Service, caplog: pytest.LogCaptureFixture) -> None:
    browser = Browser(service)
    url = await browser.start("facebook")
    decision = await browser.decide(url, "ada")
    code = parse_qs(urlsplit(decision.headers["Location"]).query)["code"][0]
    await browser.back_to_service(decision)
    assert browser.session is not None
    for secret in (code, browser.session, FACEBOOK_SECRET):
        assert secret not in caplog.text


# -- wiring ---------------------------------------------------------------------------------


async def test_not_mounted_unless_enabled(make_dev_service: Any, tmp_path: Path) -> None:
    ensure_apple_key_file(tmp_path / "var" / "apple.pem")  # made only with the provider on
    service = await make_dev_service({"dev": {"identity_provider": False}})
    response = await service.client.get("/dev/idp/.well-known/openid-configuration")
    assert response.status == 404


async def test_issuer_override_must_end_with_the_mount_path(make_dev_service: Any) -> None:
    from authgate.entrypoints.app.config import StartupError

    with pytest.raises(StartupError, match=r"dev\.issuer"):
        await make_dev_service({"dev": {"issuer": "http://127.0.0.1:1/elsewhere"}})


def test_issuer_follows_rest_host_and_port(tmp_path: Path) -> None:
    from authgate.entrypoints.app.development import dev_issuer
    from tests.devidp.support import dev_config_data, to_config

    data = dev_config_data(tmp_path, 9090)
    assert dev_issuer(to_config(data)) == "http://127.0.0.1:9090/dev/idp"
    data["rest"]["host"] = "0.0.0.0"
    assert dev_issuer(to_config(data)) == "http://127.0.0.1:9090/dev/idp"
    data["rest"]["host"] = "::1"
    assert dev_issuer(to_config(data)) == "http://[::1]:9090/dev/idp"
    data["dev"]["issuer"] = "https://idp.dev.example/dev/idp/"
    assert dev_issuer(to_config(data)) == "https://idp.dev.example/dev/idp"


def test_apple_key_file_is_created_once_and_private(tmp_path: Path) -> None:
    path = tmp_path / "var" / "keys" / "apple.pem"
    assert ensure_apple_key_file(path) is True
    pem = path.read_bytes()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    key = ECKey.import_key(pem)
    assert key.is_private and key.curve_name == "P-256"
    assert ensure_apple_key_file(path) is False
    assert path.read_bytes() == pem


def test_codes_expire_and_are_taken_once() -> None:
    now = [1000.0]
    store = GrantStore(lambda: now[0], code_ttl=60, token_ttl=600)
    grant = CodeGrant("c", "https://x/cb", "ada", ("openid",), None, None, 1000)
    code = store.issue_code(grant)
    assert store.take_code(code) == grant
    assert store.take_code(code) is None
    late = store.issue_code(grant)
    now[0] += 61
    assert store.take_code(late) is None
    assert store.take_code(secrets.token_urlsafe(32)) is None
