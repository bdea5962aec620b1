"""Provider tokens: kept sealed at sign-in, revoked at the provider after an unlink
or an account deletion, with retries, over HTTP on SQLite and PostgreSQL.

Three fake providers, one per revocation shape: ``apple`` (Apple's ``/auth/revoke``: the
refresh token with the client-secret JWT), ``google`` (Google's ``revoke``: the token alone; no
refresh token granted, so the access token) and ``corp`` (RFC 7009, client_secret_basic, the
endpoint from its discovery document).
"""

from __future__ import annotations

import json
import logging
import secrets
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import ClientResponse

from authgate.domain.model import Outcome
from authgate.entrypoints import operator
from authgate.entrypoints.app.build import RESOURCES
from tests.fakeidp import FakeIdP, FakeUser, RevocationStyle, SettableClock, Shape
from tests.support.stores import service_database_url
from tests.support.waiting import eventually

from .conftest import APP_URL, CALLBACK_URL, Client, MakeService, SignIn, load_config
from .provider_tokens_support import account_of, outcomes, raw_rows, revoked_event

PROVIDERS = ("google", "apple", "corp")
KEY_1 = {"id": "k1", "secret": secrets.token_urlsafe(32)}
KEY_2 = {"id": "k2", "secret": secrets.token_urlsafe(32)}
RETRY_MAX = 4.0
GIVE_UP_AFTER = 60.0


@pytest.fixture
async def idp(idp_clock: SettableClock) -> AsyncIterator[FakeIdP]:
    shapes = {"google": Shape.OIDC, "apple": Shape.APPLE, "corp": Shape.OIDC}
    async with FakeIdP(clock=idp_clock, providers=shapes) as fake:
        fake.google.revocation_style = RevocationStyle.GOOGLE
        fake["corp"].token_endpoint_auth = "client_secret_basic"
        fake["corp"].issue_refresh_tokens = True
        yield fake


@pytest.fixture(params=["sqlite", "postgres"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return service_database_url(request, request.param, tmp_path)


def overrides(idp: FakeIdP, database_url: str, keys: list[dict[str, str]]) -> dict[str, Any]:
    providers = {p: idp.config(p) for p in PROVIDERS}
    providers["google"]["revocation_auth"] = "none"  # Google's shape (auto for its issuer)
    return {
        "app": {"url": APP_URL, "callback_urls": [CALLBACK_URL.format(name=p) for p in PROVIDERS]},
        "database": {"url": database_url},
        "providers": providers,
        "provider_tokens": {
            "keys": keys,
            "retry_initial_seconds": 1,
            "retry_max_seconds": RETRY_MAX,
            "give_up_after_seconds": GIVE_UP_AFTER,
            "poll_seconds": 0.05,
            "lease_seconds": 5,
        },
    }


@pytest.fixture
async def signin(
    make_service: MakeService, idp: FakeIdP, idp_clock: SettableClock, database_url: str
) -> SignIn:
    client = await make_service(overrides(idp, database_url, [KEY_1]), clock=idp_clock)
    return SignIn(client, idp, idp_clock)


# -- helpers --------------------------------------------------------------------------------


def session_token(response: ClientResponse) -> str:
    assert response.status == 302, response.status
    assert "error=" not in response.headers["Location"], response.headers["Location"]
    for header in response.headers.getall("Set-Cookie", []):
        if header.startswith("session="):
            return header.split(";")[0].removeprefix("session=")
    raise AssertionError("the callback set no session cookie")


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def register(signin: SignIn, provider: str, sub: str) -> str:
    return session_token(await signin.complete(provider, user=FakeUser(sub=sub), intent="register"))


async def link(signin: SignIn, token: str, provider: str, sub: str) -> None:
    response = await signin.client.get(
        f"/v1/auth/{provider}",
        params={"redirect_uri": CALLBACK_URL.format(name=provider), "intent": "link"},
        headers={**bearer(token), "Accept": "application/json"},
    )
    assert response.status == 200, await response.text()
    binding = response.cookies["__Host-authgate_binding"].value
    details = await response.json()
    back = await signin.idp.authorize(details["authorizationUrl"], user=FakeUser(sub=sub))
    linked = await signin.callback(provider, back.params, binding=binding, method=back.method)
    assert "error=" not in linked.headers["Location"], linked.headers["Location"]


async def unlink(client: Client, token: str, provider: str) -> None:
    response = await client.delete(f"/v1/account/providers/{provider}", headers=bearer(token))
    assert response.status == 200, await response.text()


# -- tests ----------------------------------------------------------------------------------


async def test_sign_in_keeps_the_token_sealed_and_replaces_it_at_each_sign_in(
    signin: SignIn, idp: FakeIdP, database_url: str
) -> None:
    token = await register(signin, "apple", "apple-1")
    account_id = account_of(token)
    [refresh_token] = idp.apple.refresh_tokens
    [row] = await raw_rows(database_url, "provider_tokens")
    assert (str(row["account_id"]), row["provider"], row["subject"]) == (
        account_id,
        "apple",
        "apple-1",
    )
    assert row["key_id"] == "k1"
    stored = json.dumps(row, default=str)
    assert refresh_token not in stored
    assert row["ciphertext"].count(".") == 4  # a JWE, nothing readable

    await signin.complete("apple", user=FakeUser(sub="apple-1"))
    [again] = await raw_rows(database_url, "provider_tokens")
    assert again["ciphertext"] != row["ciphertext"]  # the newer token replaced it
    for issued in idp.apple.refresh_tokens:
        assert issued not in json.dumps(again, default=str)


async def test_unlink_revokes_each_shape_with_its_token_and_client_authentication(
    signin: SignIn, idp: FakeIdP, database_url: str
) -> None:
    token = await register(signin, "corp", "corp-1")
    account_id = account_of(token)
    await link(signin, token, "apple", "apple-2")
    await link(signin, token, "google", "google-2")
    [apple_refresh] = idp.apple.refresh_tokens
    [google_access] = idp.google.access_tokens  # Google granted no refresh token
    assert len(await raw_rows(database_url, "provider_tokens")) == 3

    await unlink(signin.client, token, "apple")
    await eventually(lambda: len(idp.apple.revocations) == 1, what="apple revocation")
    [apple] = idp.apple.revocations
    assert (apple.token, apple.hint, apple.known) == (apple_refresh, "refresh_token", True)
    assert apple.form_keys == {"client_id", "client_secret", "token", "token_type_hint"}
    assert idp.apple.client_secret_claims[-1]["sub"] == idp.apple.client_id  # the JWT verified

    await unlink(signin.client, token, "google")
    await eventually(lambda: len(idp.google.revocations) == 1, what="google revocation")
    [google] = idp.google.revocations
    assert (google.token, google.known) == (google_access, True)
    assert google.form_keys == {"token"} and google.authorization is None

    async def both_audited() -> bool:
        found = await outcomes(signin.client, account_id)
        return revoked_event("apple") in found and revoked_event("google") in found

    await eventually(both_audited, what="revocations in the audit trail")
    await eventually(
        lambda: _empty(raw_rows(database_url, "provider_token_revocations")), what="outbox"
    )
    [left] = await raw_rows(database_url, "provider_tokens")
    assert left["provider"] == "corp"


async def test_deleting_the_account_revokes_every_token(
    signin: SignIn, idp: FakeIdP, database_url: str
) -> None:
    token = await register(signin, "corp", "corp-3")
    account_id = account_of(token)
    await link(signin, token, "apple", "apple-3")
    [corp_refresh] = idp["corp"].refresh_tokens
    [apple_refresh] = idp.apple.refresh_tokens

    response = await signin.client.delete("/v1/account", headers=bearer(token))
    assert response.status == 204, await response.text()
    await eventually(lambda: len(idp["corp"].revocations) == 1, what="corp revocation")
    await eventually(lambda: len(idp.apple.revocations) == 1, what="apple revocation")
    [corp] = idp["corp"].revocations
    assert (corp.token, corp.hint, corp.known) == (corp_refresh, "refresh_token", True)
    assert corp.authorization is not None and corp.authorization.startswith("Basic ")
    assert "client_secret" not in corp.form_keys
    assert idp.apple.revocations[0].token == apple_refresh
    assert await raw_rows(database_url, "provider_tokens") == []

    async def audited() -> bool:
        found = await outcomes(signin.client, account_id)
        return revoked_event("corp") in found and revoked_event("apple") in found

    await eventually(audited, what="revocations in the audit trail")


async def test_a_provider_that_is_down_gets_the_revocation_once_it_is_back(
    signin: SignIn, idp: FakeIdP, idp_clock: SettableClock, database_url: str
) -> None:
    token = await register(signin, "google", "google-4")
    await link(signin, token, "apple", "apple-4")
    [apple_refresh] = idp.apple.refresh_tokens
    idp.apple.revocation_down = True

    await unlink(signin.client, token, "apple")
    await eventually(lambda: idp.apple.hits["revoke"] >= 1, what="a first attempt")

    async def retried_later() -> bool:
        rows = await raw_rows(database_url, "provider_token_revocations")
        return len(rows) == 1 and rows[0]["attempts"] == 1 and rows[0]["leased_until"] is None

    await eventually(retried_later, what="the failed attempt recorded")
    [row] = await raw_rows(database_url, "provider_token_revocations")
    assert apple_refresh not in json.dumps(row, default=str)  # sealed in the outbox too
    assert "503" in row["last_error"]
    idp_clock.advance(1.5)  # the second attempt is due, still down
    await eventually(lambda: idp.apple.hits["revoke"] >= 2, what="a second attempt")
    assert idp.apple.revocations == []

    idp.apple.revocation_down = False
    idp_clock.advance(RETRY_MAX)
    await eventually(lambda: len(idp.apple.revocations) == 1, what="the revocation delivered")
    assert idp.apple.revocations[0].token == apple_refresh
    await eventually(
        lambda: _empty(raw_rows(database_url, "provider_token_revocations")), what="outbox"
    )
    found = await outcomes(signin.client, account_of(token))
    assert revoked_event("apple") in found


async def test_a_token_the_provider_no_longer_knows_counts_as_revoked(
    signin: SignIn, idp: FakeIdP
) -> None:
    token = await register(signin, "apple", "apple-8")
    await link(signin, token, "google", "google-8")
    [google_access] = idp.google.access_tokens
    assert idp.google.revoke(google_access)  # the user revoked access at Google meanwhile
    await unlink(signin.client, token, "google")
    await eventually(lambda: len(idp.google.revocations) == 1, what="google revocation")
    assert idp.google.revocations[0].known is False  # Google answered 400 invalid_token

    async def audited() -> list[str | None]:
        events = await signin.client.app[RESOURCES].stores.events.for_account(account_of(token))
        return [e.detail for e in events if e.outcome is Outcome.PROVIDER_TOKEN_REVOKED]

    await eventually(audited, what="the revocation audited")
    [detail] = await audited()
    assert detail is not None and "no longer knew" in detail


async def test_a_revocation_is_given_up_after_the_maximum_age_with_an_audit_event(
    signin: SignIn, idp: FakeIdP, idp_clock: SettableClock, database_url: str
) -> None:
    token = await register(signin, "google", "google-5")
    await link(signin, token, "apple", "apple-5")
    idp.apple.revocation_down = True
    await unlink(signin.client, token, "apple")
    await eventually(lambda: idp.apple.hits["revoke"] >= 1, what="a first attempt")
    idp_clock.advance(GIVE_UP_AFTER + 1)
    failed = ("apple", Outcome.PROVIDER_TOKEN_REVOCATION_FAILED.value)

    async def given_up() -> bool:
        return failed in await outcomes(signin.client, account_of(token))

    await eventually(given_up, what="the revocation given up")
    assert await raw_rows(database_url, "provider_token_revocations") == []
    assert idp.apple.revocations == []


async def test_key_rotation_old_tokens_still_revocable_and_rekey_retires_the_old_key(
    make_service: MakeService,
    idp: FakeIdP,
    idp_clock: SettableClock,
    database_url: str,
    tmp_path: Path,
) -> None:
    first = SignIn(
        await make_service(overrides(idp, database_url, [KEY_1]), clock=idp_clock),
        idp,
        idp_clock,
    )
    token = await register(first, "google", "google-6")
    await link(first, token, "apple", "apple-6")
    await link(first, token, "corp", "corp-6")
    [apple_refresh] = idp.apple.refresh_tokens
    [corp_refresh] = idp["corp"].refresh_tokens
    await first.client.close()

    # Rotation: the new key first, the old one still listed.
    rotated = overrides(idp, database_url, [KEY_2, KEY_1])
    second = SignIn(await make_service(rotated, clock=idp_clock), idp, idp_clock)
    await register(second, "corp", "corp-6b")
    keys = sorted(
        (r["subject"], r["key_id"]) for r in await raw_rows(database_url, "provider_tokens")
    )
    assert keys == [("apple-6", "k1"), ("corp-6", "k1"), ("corp-6b", "k2"), ("google-6", "k1")]
    await unlink(second.client, token, "apple")  # sealed under the old key
    await eventually(lambda: len(idp.apple.revocations) == 1, what="apple revocation")
    assert idp.apple.revocations[0].token == apple_refresh

    # `authgate provider-tokens rekey` re-seals the rest under k2; then k1 can go.
    assert await operator.rekey_provider_tokens(load_config(tmp_path, rotated)) == 0
    rows = await raw_rows(database_url, "provider_tokens")
    assert {r["key_id"] for r in rows} == {"k2"} and len(rows) == 3
    await second.client.close()
    third = SignIn(
        await make_service(overrides(idp, database_url, [KEY_2]), clock=idp_clock),
        idp,
        idp_clock,
    )
    await unlink(third.client, token, "corp")
    await eventually(lambda: len(idp["corp"].revocations) == 1, what="corp revocation")
    assert idp["corp"].revocations[0].token == corp_refresh


async def test_no_provider_token_in_responses_logs_or_the_export(
    signin: SignIn, idp: FakeIdP, database_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    bodies: list[str] = []
    callback = await signin.complete("apple", user=FakeUser(sub="apple-7"), intent="register")
    bodies.append(str(callback.headers))
    token = session_token(callback)
    await link(signin, token, "google", "google-7")
    for path in ("/v1/account", "/v1/account/providers", "/v1/account/export"):
        response = await signin.client.get(path, headers=bearer(token))
        assert response.status == 200, path
        bodies.append(await response.text())
    await unlink(signin.client, token, "google")
    await eventually(lambda: len(idp.google.revocations) == 1, what="google revocation")
    export = await signin.client.get("/v1/account/export", headers=bearer(token))
    bodies.append(await export.text())
    events = await signin.client.app[RESOURCES].stores.events.for_account(account_of(token))
    issued = [*idp.apple.refresh_tokens, *idp.apple.access_tokens, *idp.google.access_tokens]
    issued += [r.token for r in idp.google.revocations]
    assert issued
    seen = "\n".join([*bodies, caplog.text, repr(events), *(e.detail or "" for e in events)])
    for value in issued:
        assert value not in seen


async def _empty(rows: Any) -> bool:
    return not await rows


async def test_two_instances_on_one_database_send_each_revocation_once(
    make_service: MakeService, idp: FakeIdP, idp_clock: SettableClock, database_url: str
) -> None:
    settings = overrides(idp, database_url, [KEY_1])
    a = SignIn(await make_service(settings, clock=idp_clock), idp, idp_clock)
    b = SignIn(await make_service(settings, clock=idp_clock), idp, idp_clock)
    tokens = [await register(a, "apple", f"apple-9-{i}") for i in range(8)]
    issued = set(idp.apple.refresh_tokens)
    for i, token in enumerate(tokens):  # half on each instance; both workers poll
        client = (a if i % 2 else b).client
        response = await client.delete("/v1/account", headers=bearer(token))
        assert response.status == 204, await response.text()
    await eventually(lambda: len(idp.apple.revocations) >= len(tokens), what="all revoked")
    await eventually(
        lambda: _empty(raw_rows(database_url, "provider_token_revocations")), what="outbox"
    )
    sent = [r.token for r in idp.apple.revocations]
    assert sorted(sent) == sorted(issued)  # each once: a second send would repeat a token
    assert all(r.known for r in idp.apple.revocations)
