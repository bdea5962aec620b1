"""Dynamic client registration (RFC 7591) and its management (RFC 7592) over HTTP, on memory,
SQLite and PostgreSQL: what a registration answers and keeps, the initial access token spent
once, the refusals of RFC 7591 section 3.2.2 and RFC 6750, and a registered client's use of
the provider (the code flow with PKCE of a public native client, as MCP clients register;
a confidential one with its generated secret; the person's applications page)."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from authgate.domain.openid.records import token_digest
from authgate.services.openid.registration import ClientIdTaken
from tests.openid.harness import Request

from .conftest import NATIVE_REDIRECT, WEB_REDIRECT, Registrar

NATIVE: dict[str, Any] = {
    "client_name": "Desk <Agent>",
    "redirect_uris": [NATIVE_REDIRECT],
    "token_endpoint_auth_method": "none",
    "grant_types": ["authorization_code", "refresh_token"],
    "response_types": ["code"],
    "scope": "openid profile offline_access",
    "software_id": "ignored-member",
}
WEB: dict[str, Any] = {"client_name": "Registered web", "redirect_uris": [WEB_REDIRECT]}


def bearer_error(challenge: str) -> str:
    assert challenge.startswith('Bearer realm="authgate"'), challenge
    return challenge


async def test_a_public_native_client_registers_and_signs_a_person_in_with_pkce(
    registrar: Registrar,
) -> None:
    body = await registrar.register(NATIVE)
    client_id = body["client_id"]
    assert "client_secret" not in body and "client_secret_expires_at" not in body
    assert len(body["registration_access_token"]) >= 32
    assert body["registration_client_uri"] == f"https://api.example.com/oauth2/register/{client_id}"
    assert abs(body["client_id_issued_at"] - registrar.op.clock.timestamp()) < 5
    assert body["redirect_uris"] == [NATIVE_REDIRECT]
    assert body["token_endpoint_auth_method"] == "none"
    assert body["grant_types"] == ["authorization_code", "refresh_token"]
    assert body["response_types"] == ["code"]
    assert body["scope"] == "openid profile offline_access"
    assert "software_id" not in body  # an unknown member is ignored, not kept

    op = registrar.op
    await op.sign_in()
    # A native app listens where the system lets it: any loopback port.
    request = Request(
        client_id=client_id,
        redirect_uri="http://127.0.0.1:51004/callback",
        scope="openid offline_access",
        extra={"prompt": "consent"},
    )
    page = await op.authorize(request)
    html = await page.text()
    assert page.status == 200, html
    assert "Desk &lt;Agent&gt;" in html  # a stored client is never first party
    answer = await op.answer(await op.consent(page))
    tokens = await op.tokens(request, answer, client_id=client_id, secret=None)
    claims = await op.verify_id_token(tokens["id_token"], client_id=client_id, nonce=request.nonce)
    assert claims["aud"] == client_id
    refreshed = await op.token(
        {"grant_type": "refresh_token", "refresh_token": tokens["refresh_token"]},
        client_id=client_id,
        secret=None,
    )
    assert refreshed.status == 200, await refreshed.text()

    # Without its verifier the code is refused: PKCE binds it.
    again = Request(client_id=client_id, redirect_uri=NATIVE_REDIRECT, scope="openid")
    code = await op.code(again)
    stolen = await op.token(
        {"grant_type": "authorization_code", "code": code.code, "redirect_uri": NATIVE_REDIRECT},
        client_id=client_id,
        secret=None,
    )
    assert stolen.status == 400


async def test_a_confidential_client_gets_a_secret_once_and_authenticates_with_it(
    registrar: Registrar,
) -> None:
    body = await registrar.register(WEB)
    client_id, secret = body["client_id"], body["client_secret"]
    assert len(secret) >= 32 and body["client_secret_expires_at"] == 0
    assert body["token_endpoint_auth_method"] == "client_secret_basic"  # RFC 7591's default
    assert body["grant_types"] == ["authorization_code"]
    assert body["scope"] == "openid profile email offline_access"

    async with registrar.resources.stores.units.read() as tx:
        stored = await tx.stored_clients.get(client_id)
    assert stored is not None and stored.origin == "registration"
    # Only digests are kept: neither the secret nor the registration access token.
    assert stored.registration_token_hash == token_digest(body["registration_access_token"])
    assert all(secret.encode() not in d.digest + d.salt for d in stored.secrets)

    op = registrar.op
    await op.sign_in()
    request = Request(client_id=client_id, redirect_uri=WEB_REDIRECT)
    answer = await op.answer(await op.consent(await op.authorize(request)))
    wrong = await op.redeem(request, answer, client_id=client_id, secret="x" * 43)
    assert wrong.status == 401
    answer = await op.code(request)  # consented now
    tokens = await op.tokens(request, answer, client_id=client_id, secret=secret)
    await op.verify_id_token(tokens["id_token"], client_id=client_id, nonce=request.nonce)
    # Its grant types are its registration's: no refresh_token grant was asked for.
    assert "refresh_token" not in tokens

    # The person's applications page names it (the directory finds stored clients).
    apps = await op.client.get(
        "/v1/account/apps", headers={"Authorization": f"Bearer {op.session}"}
    )
    assert apps.status == 200, await apps.text()
    listed = {a["clientId"]: a["name"] for a in (await apps.json())["apps"]}
    assert listed[client_id] == "Registered web"


async def test_an_initial_access_token_is_needed_and_good_for_one_registration(
    registrar: Registrar,
) -> None:
    none = await registrar.post(NATIVE)
    assert none.status == 401
    assert none.headers["WWW-Authenticate"] == 'Bearer realm="authgate"'
    assert none.headers["Cache-Control"] == "no-store"

    token = await registrar.initial_token()
    first = await registrar.post(NATIVE, token)
    assert first.status == 201, await first.text()
    second = await registrar.post(NATIVE, token)
    assert second.status == 401
    assert (await second.json())["error"] == "invalid_token"
    assert 'error="invalid_token"' in bearer_error(second.headers["WWW-Authenticate"])

    unknown = await registrar.post(NATIVE, "not-a-token-we-made")
    assert unknown.status == 401

    short = await registrar.initial_token(dt.timedelta(minutes=5))
    registrar.op.clock.advance(6 * 60)
    expired = await registrar.post(NATIVE, short)
    assert expired.status == 401
    async with registrar.resources.stores.units.read() as tx:
        assert len(await tx.stored_clients.all()) == 1


async def test_a_refused_registration_leaves_its_token_unspent(registrar: Registrar) -> None:
    token = await registrar.initial_token()
    refused = await registrar.post({**NATIVE, "redirect_uris": ["http://example.com/cb"]}, token)
    assert refused.status == 400
    accepted = await registrar.post(NATIVE, token)
    assert accepted.status == 201, await accepted.text()


@pytest.mark.parametrize(
    ("metadata", "error", "words"),
    [
        ({**WEB, "redirect_uris": ["http://example.com/cb"]}, "invalid_redirect_uri", "loopback"),
        ({**WEB, "redirect_uris": ["https://a.example/cb#x"]}, "invalid_redirect_uri", "fragment"),
        # A private-use scheme is a native (public) app's, never a confidential client's.
        ({**WEB, "redirect_uris": ["com.example.app:/cb"]}, "invalid_redirect_uri", "native"),
        ({**WEB, "redirect_uris": []}, "invalid_redirect_uri", "at least one"),
        ({"client_name": "x"}, "invalid_redirect_uri", "at least one"),
        ({**WEB, "redirect_uris": "https://a.example/cb"}, "invalid_client_metadata", "array"),
        (
            {**WEB, "grant_types": ["client_credentials"]},
            "invalid_client_metadata",
            "client_credentials is not offered",
        ),
        ({**WEB, "grant_types": ["password"]}, "invalid_client_metadata", "'password'"),
        (
            {**NATIVE, "grant_types": ["client_credentials"]},
            "invalid_client_metadata",
            "confidential",
        ),
        ({**WEB, "scope": "admin"}, "invalid_client_metadata", "names none"),
        ({**WEB, "response_types": ["token"]}, "invalid_client_metadata", "only code"),
        (
            {**WEB, "token_endpoint_auth_method": "client_secret_jwt"},
            "invalid_client_metadata",
            "client_secret_jwt",
        ),
        # URLs the service itself would call are the operator's to set.
        (
            {**WEB, "backchannel_logout_uri": "https://internal.example/logout"},
            "invalid_client_metadata",
            "operator",
        ),
        (
            {**WEB, "resources": ["https://api.example.net"]},
            "invalid_client_metadata",
            "not offered",
        ),
        ({**WEB, "logo_uri": "http://a.example/logo.png"}, "invalid_client_metadata", "https"),
        ({**WEB, "client_name": "x" * 101}, "invalid_client_metadata", "printable"),
        (["not", "an", "object"], "invalid_client_metadata", "JSON object"),
    ],
)
async def test_refused_metadata_is_named_in_rfc_7591_errors(
    registrar: Registrar, metadata: Any, error: str, words: str
) -> None:
    answer = await registrar.post(metadata, await registrar.initial_token())
    body = await answer.json()
    assert answer.status == 400, body
    assert body["error"] == error
    assert words in body["error_description"]
    assert answer.headers["Cache-Control"] == "no-store"


async def test_the_client_reads_updates_and_deletes_its_registration(
    registrar: Registrar,
) -> None:
    body = await registrar.register(WEB)
    client_id = body["client_id"]
    read = await registrar.manage("GET", body)
    assert read.status == 200
    shown = await read.json()
    assert shown["client_id"] == client_id and shown["client_name"] == "Registered web"
    assert "client_secret" not in shown and "registration_access_token" not in shown

    for token in ("wrong", body["registration_access_token"] + "x"):
        refused = await registrar.manage("GET", body, token=token)
        assert refused.status == 401
        assert (await refused.json())["error"] == "invalid_token"
    # Another client's token opens nothing, and an unknown client is refused alike.
    other = await registrar.register(NATIVE)
    assert (
        await registrar.manage("GET", body, token=other["registration_access_token"])
    ).status == 401
    unknown = {
        "client_id": "nobody",
        "registration_access_token": body["registration_access_token"],
    }
    assert (await registrar.manage("GET", unknown)).status == 401

    changed = {
        "client_id": client_id,
        "client_name": "Renamed",
        "redirect_uris": [WEB_REDIRECT + "2"],
    }
    updated = await registrar.manage("PUT", body, json=changed)
    assert updated.status == 200, await updated.text()
    assert (await updated.json())["redirect_uris"] == [WEB_REDIRECT + "2"]
    assert "client_secret" not in await updated.json()  # the secret stays as it was
    mismatch = await registrar.manage("PUT", body, json={**changed, "client_id": "other"})
    assert mismatch.status == 400
    assert (await mismatch.json())["error"] == "invalid_request"
    bad_secret = await registrar.manage("PUT", body, json={**changed, "client_secret": "no"})
    assert (await bad_secret.json())["error"] == "invalid_client_metadata"

    op = registrar.op
    await op.sign_in()
    request = Request(client_id=client_id, redirect_uri=WEB_REDIRECT + "2")
    answer = await op.answer(await op.consent(await op.authorize(request)))
    tokens = await op.tokens(request, answer, client_id=client_id, secret=body["client_secret"])

    deleted = await registrar.manage("DELETE", body)
    assert deleted.status == 204
    assert (await registrar.manage("GET", body)).status == 401
    # Its tokens stop working and its grant is gone with it.
    info = await op.client.get(
        "/oauth2/userinfo", headers={"Authorization": f"Bearer {tokens['access_token']}"}
    )
    assert info.status == 401
    account_id = (
        await op.verify_id_token(tokens["id_token"], client_id=client_id, nonce=request.nonce)
    )["sub"]
    async with registrar.resources.stores.units.read() as tx:
        assert await tx.grants.get(account_id, client_id) is None
        families = await tx.refresh_tokens.for_account(account_id)
    assert families and all(f.revoked_at is not None for f in families if f.client_id == client_id)
    token = await op.token(
        {"grant_type": "authorization_code", "code": "x", "redirect_uri": WEB_REDIRECT},
        client_id=client_id,
        secret=body["client_secret"],
    )
    assert token.status == 401


async def test_discovery_names_the_registration_endpoint_only_when_enabled(
    registrar: Registrar, start_registrar: Any
) -> None:
    for path in ("/.well-known/openid-configuration", "/.well-known/oauth-authorization-server"):
        document = await (await registrar.op.client.get(path)).json()
        assert document["registration_endpoint"] == "https://api.example.com/oauth2/register"
    off = await start_registrar(registration={"enabled": False})
    document = await (await off.op.client.get("/.well-known/openid-configuration")).json()
    assert "registration_endpoint" not in document
    assert (await off.post(NATIVE, "anything")).status == 404


async def test_open_registration_needs_no_token_and_is_rate_limited(start_registrar: Any) -> None:
    registrar = await start_registrar(
        registration={"policy": "open"}, ratelimit={"registration": "2/minute"}
    )
    for _ in range(2):
        answer = await registrar.post(NATIVE)
        assert answer.status == 201, await answer.text()
    over = await registrar.post(NATIVE)
    assert over.status == 429
    assert (await over.json())["error"] == "temporarily_unavailable"
    assert int(over.headers["Retry-After"]) > 0


async def test_the_policy_limits_what_a_registrant_may_ask_for(start_registrar: Any) -> None:
    registrar = await start_registrar(
        registration={
            "confidential_clients": False,
            "scopes": ["openid"],
        }
    )
    confidential = await registrar.post(WEB, await registrar.initial_token())
    assert (await confidential.json())["error"] == "invalid_client_metadata"
    public = {**NATIVE, "scope": None, "grant_types": ["authorization_code"]}
    body = await registrar.register(public)
    assert body["scope"] == "openid"  # the default: every scope the policy allows
    # A scope beyond the policy is dropped, not refused: the answer says what was registered.
    narrowed = await registrar.register({**NATIVE, "scope": "openid admin offline_access"})
    assert narrowed["scope"] == "openid"


async def test_the_operator_may_allow_client_credentials(start_registrar: Any) -> None:
    registrar = await start_registrar(
        registration={"grant_types": ["authorization_code", "client_credentials"]}
    )
    body = await registrar.register({"grant_types": ["client_credentials"], "client_name": "M2M"})
    assert body["grant_types"] == ["client_credentials"]
    assert "response_types" not in body  # none without the code grant
    assert "redirect_uris" not in body and len(body["client_secret"]) >= 32


async def test_a_configured_client_id_cannot_be_taken(registrar: Registrar) -> None:
    with pytest.raises(ClientIdTaken):
        await registrar.administration.add(WEB, client_id="web")
    # The configuration's client is the one every endpoint finds.
    opened = registrar.resources.openid
    assert opened is not None
    found = await opened.clients.find("web")
    assert found is not None and found.origin == "configuration"


async def test_an_open_registration_ignores_other_authorization_schemes(
    start_registrar: Any,
) -> None:
    registrar = await start_registrar(registration={"policy": "open"})
    answer = await registrar.op.client.post(
        "/oauth2/register", json=NATIVE, headers={"Authorization": "Basic eDp5"}
    )
    assert answer.status == 201, await answer.text()
    guarded = await start_registrar()
    refused = await guarded.op.client.post(
        "/oauth2/register", json=NATIVE, headers={"Authorization": "Basic eDp5"}
    )
    assert refused.status == 401
