"""Passkeys over HTTP against the real app: adding one, signing in with it, managing them, and
every refusal the WebAuthn ceremonies must make (each changing nothing).

Responses come from a software authenticator (tests/support/webauthn.py) that signs with real
EC P-256 keys, so the service's library verifies real signatures."""

from __future__ import annotations

import asyncio
import base64
import json
import os
from pathlib import Path
from typing import Any

import pytest

from authgate.domain.model import Outcome, ProviderIdentity
from authgate.entrypoints.app import build as assembly
from authgate.entrypoints.app.config import ConfigError, parse
from tests.fakeidp import FakeIdP, SettableClock
from tests.support.webauthn import ES256, RS1, UP, UV, SoftAuthenticator, b64url, unb64url

from .conftest import MakeService, session_of
from .passkeys_support import (
    ADA,
    BINDING,
    BOB,
    ORIGIN,
    RP_ID,
    Passkeys,
    bearer,
    browser,
    database_url,
    start_passkeys,
)

STORES = ("memory", "sqlite", "postgres")


@pytest.fixture
async def passkeys(
    make_service: MakeService, fake_idp: FakeIdP, idp_clock: SettableClock
) -> Passkeys:
    return await start_passkeys(make_service, fake_idp, idp_clock)


@pytest.fixture(params=STORES)
async def on_every_store(
    request: pytest.FixtureRequest,
    make_service: MakeService,
    fake_idp: FakeIdP,
    idp_clock: SettableClock,
    tmp_path: Path,
) -> Passkeys:
    """The service with passkeys on each store (memory, SQLite, PostgreSQL)."""
    url = database_url(request, str(request.param), tmp_path)
    return await start_passkeys(make_service, fake_idp, idp_clock, url)


def claims_of(token: str) -> dict[str, Any]:
    payload = token.split(".")[1]
    decoded = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    assert isinstance(decoded, dict)
    return decoded


async def refused(answer: Any, status: int, code: str) -> dict[str, Any]:
    body = await answer.json()
    assert (answer.status, body["error"]) == (status, code), body
    assert "session" not in answer.cookies
    assert isinstance(body, dict)
    return body


# -- the whole path, on every store -----------------------------------------------------------


@pytest.mark.parametrize("kind", STORES)
async def test_add_a_passkey_and_sign_in_with_it(
    request: pytest.FixtureRequest,
    kind: str,
    make_service: MakeService,
    fake_idp: FakeIdP,
    idp_clock: SettableClock,
    tmp_path: Path,
) -> None:
    passkeys = await start_passkeys(
        make_service, fake_idp, idp_clock, database_url(request, kind, tmp_path)
    )
    token = await passkeys.registered()
    account = await passkeys.account_of(token)
    authenticator = SoftAuthenticator(backed_up=True)

    options, _ = await passkeys.registration_options(token)
    assert options["rp"] == {"id": RP_ID, "name": "authgate tests"}
    assert options["authenticatorSelection"] == {
        "residentKey": "required",
        "requireResidentKey": True,
        "userVerification": "required",
    }
    assert options["attestation"] == "none"
    assert options["timeout"] == 300_000
    assert options["excludeCredentials"] == []

    added = await passkeys.add(token, authenticator, name="Laptop")
    assert added["name"] == "Laptop"
    assert (added["backedUp"], added["backupEligible"]) == (True, True)
    assert added["transports"] == ["internal", "hybrid"]
    assert added["aaguid"] == "00010203-0405-0607-0809-0a0b0c0d0e0f"
    assert "lastUsedAt" not in added
    # The next creation options exclude it, so the authenticator does not make a second one.
    again, _ = await passkeys.registration_options(token)
    [excluded] = again["excludeCredentials"]
    assert excluded["id"] == b64url(next(iter(authenticator.credentials)))

    idp_clock.advance(3600)  # the provider sign-in is long stale by now
    request_options, binding = await passkeys.authentication_options()
    assert request_options["allowCredentials"] == []
    assert request_options["userVerification"] == "required"
    assert request_options["rpId"] == RP_ID
    answer = await passkeys.authenticate(authenticator.get(request_options, ORIGIN), binding)
    assert answer.status == 200, await answer.text()
    body = await answer.json()
    assert body["accountId"] == account["id"]
    assert body["redirectTo"] == "https://app.example.com/dashboard"
    assert answer.headers["Cache-Control"] == "no-store"
    cookie = answer.cookies["session"]
    assert cookie["httponly"] and cookie["secure"]
    session = cookie.value
    claims = claims_of(session)
    assert claims["sub"] == account["id"]
    assert claims["provider"] == "passkey"
    # auth_time is the verified assertion's time: the session counts as a recent sign-in.
    assert abs(claims["auth_time"] - idp_clock.timestamp()) < 2
    exported = await passkeys.client.get("/v1/account/export", headers=bearer(session))
    assert exported.status == 200
    export = await exported.json()
    [kept] = export["passkeys"]
    assert kept["passkey"]["id"] == added["id"]
    assert kept["signCount"] == 1
    assert kept["credentialId"] == excluded["id"]
    assert "challenge" not in json.dumps(export)
    sessions = await passkeys.client.get("/v1/account/sessions", headers=bearer(session))
    assert "passkey" in [s["provider"] for s in (await sessions.json())["sessions"]]
    [listed] = await passkeys.listed(session)
    assert listed["lastUsedAt"] is not None

    outcomes = [(e.provider, e.outcome) for e in await passkeys.audit()]
    assert ("passkey", Outcome.PASSKEY_ADDED) in outcomes
    assert ("passkey", Outcome.SIGNED_IN) in outcomes


async def test_a_passkey_of_an_authenticator_without_counter_signs_in_again_and_again(
    passkeys: Passkeys,
) -> None:
    token = await passkeys.registered()
    authenticator = SoftAuthenticator(counting=False)  # synced passkeys report 0 always
    await passkeys.add(token, authenticator)
    for _ in range(3):
        assert (await passkeys.sign_in(authenticator)).status == 200


async def test_return_to_follows_the_rules_of_a_provider_sign_in(passkeys: Passkeys) -> None:
    token = await passkeys.registered()
    authenticator = SoftAuthenticator()
    await passkeys.add(token, authenticator)
    for wanted, destination in (
        ("/settings?tab=passkeys", "https://app.example.com/settings?tab=passkeys"),
        ("https://evil.example.net/", "https://app.example.com/dashboard"),
        ("//evil.example.net/", "https://app.example.com/dashboard"),
    ):
        options, binding = await passkeys.authentication_options()
        answer = await passkeys.authenticate(
            authenticator.get(options, ORIGIN), binding, returnTo=wanted
        )
        assert (await answer.json())["redirectTo"] == destination


# -- what a ceremony refuses (each changes nothing) -------------------------------------------


async def signed_up(passkeys: Passkeys) -> tuple[str, SoftAuthenticator, dict[str, Any]]:
    token = await passkeys.registered()
    authenticator = SoftAuthenticator()
    added = await passkeys.add(token, authenticator)
    return token, authenticator, added


async def unchanged(passkeys: Passkeys, token: str, added: dict[str, Any]) -> None:
    [listed] = await passkeys.listed(token)
    assert "lastUsedAt" not in listed or listed["lastUsedAt"] is None


async def test_a_wrong_origin_is_refused(passkeys: Passkeys) -> None:
    token, authenticator, added = await signed_up(passkeys)
    options, binding = await passkeys.authentication_options()
    phished = authenticator.get(options, "https://app.example.com.evil.example.net")
    body = await refused(await passkeys.authenticate(phished, binding), 400, "passkey_not_verified")
    assert "origin" in body["message"]
    await unchanged(passkeys, token, added)
    options, binding = await passkeys.registration_options(token)
    answer = await passkeys.register(
        token, SoftAuthenticator().create(options, "https://evil.example.net"), binding
    )
    await refused(answer, 400, "passkey_not_verified")
    assert len(await passkeys.listed(token)) == 1


async def test_another_rp_id_no_user_presence_or_verification_are_refused(
    passkeys: Passkeys,
) -> None:
    token, authenticator, added = await signed_up(passkeys)
    for get, words in (
        ({"rp_id": "evil.example.net"}, "RP ID"),
        ({"flags": UV}, "present"),
        ({"flags": UP}, "verified"),
    ):
        options, binding = await passkeys.authentication_options()
        answer = await passkeys.authenticate(authenticator.get(options, ORIGIN, **get), binding)
        body = await refused(answer, 400, "passkey_not_verified")
        assert words in body["message"]
    await unchanged(passkeys, token, added)
    options, binding = await passkeys.registration_options(token)
    answer = await passkeys.register(
        token, SoftAuthenticator().create(options, ORIGIN, flags=UP), binding
    )
    await refused(answer, 400, "passkey_not_verified")


async def test_a_ceremony_in_a_cross_origin_frame_is_refused(passkeys: Passkeys) -> None:
    token = await passkeys.registered()
    options, binding = await passkeys.registration_options(token)
    created = SoftAuthenticator().create(options, ORIGIN)
    client_data = json.loads(unb64url(created["response"]["clientDataJSON"]))
    created["response"]["clientDataJSON"] = b64url(
        json.dumps({**client_data, "crossOrigin": True}).encode()
    )
    answer = await passkeys.register(token, created, binding)
    assert "cross-origin" in (await refused(answer, 400, "passkey_not_verified"))["message"]
    assert await passkeys.listed(token) == []


async def test_a_replayed_assertion_is_refused(passkeys: Passkeys) -> None:
    _, authenticator, _ = await signed_up(passkeys)
    options, binding = await passkeys.authentication_options()
    assertion = authenticator.get(options, ORIGIN)
    assert (await passkeys.authenticate(assertion, binding)).status == 200
    # The same answer again: its challenge was used.
    await refused(await passkeys.authenticate(assertion, binding), 400, "invalid_challenge")
    # And against a new challenge of the same browser: it answers the old one.
    await passkeys.authentication_options(binding)
    body = await refused(
        await passkeys.authenticate(assertion, binding), 400, "passkey_not_verified"
    )
    assert "another challenge" in body["message"]


async def test_a_challenge_from_another_browser_is_refused(passkeys: Passkeys) -> None:
    token, authenticator, added = await signed_up(passkeys)
    options, binding = await passkeys.authentication_options()
    _, other_browser = await passkeys.authentication_options()
    assertion = authenticator.get(options, ORIGIN)
    # A browser that asked for nothing has no challenge; one that asked has its own.
    await refused(await passkeys.authenticate(assertion, "b" * 43), 400, "invalid_challenge")
    await refused(await passkeys.authenticate(assertion, None), 400, "invalid_challenge")
    answer = await passkeys.authenticate(assertion, other_browser)
    assert "another challenge" in (await refused(answer, 400, "passkey_not_verified"))["message"]
    await unchanged(passkeys, token, added)
    # The browser that asked can still answer: the others consumed nothing of it.
    assert (await passkeys.authenticate(assertion, binding)).status == 200


async def test_an_expired_challenge_is_refused(passkeys: Passkeys) -> None:
    token, authenticator, added = await signed_up(passkeys)
    options, binding = await passkeys.authentication_options()
    passkeys.clock.advance(301)
    answer = await passkeys.authenticate(authenticator.get(options, ORIGIN), binding)
    await refused(answer, 400, "invalid_challenge")
    await unchanged(passkeys, token, added)


async def test_the_ceremonies_cannot_be_mixed_up(passkeys: Passkeys) -> None:
    token, authenticator, added = await signed_up(passkeys)
    # A registration challenge answered as a sign-in: no authentication challenge waits.
    options, binding = await passkeys.registration_options(token)
    assertion = authenticator.get(options, ORIGIN, challenge=options["challenge"], rp_id=RP_ID)
    await refused(await passkeys.authenticate(assertion, binding), 400, "invalid_challenge")
    # An assertion whose client data says webauthn.create, for the right challenge.
    options, binding = await passkeys.authentication_options()
    wrong_type = authenticator.get(options, ORIGIN, ceremony_type="webauthn.create")
    body = await refused(
        await passkeys.authenticate(wrong_type, binding), 400, "passkey_not_verified"
    )
    assert "ceremony" in body["message"]
    # An authentication challenge answered as a registration.
    options, binding = await passkeys.authentication_options()
    created = SoftAuthenticator().create(
        {"rp": {"id": RP_ID}, "user": {"id": "eA"}, "challenge": options["challenge"]}, ORIGIN
    )
    await refused(await passkeys.register(token, created, binding), 400, "invalid_challenge")
    assert len(await passkeys.listed(token)) == 1
    await unchanged(passkeys, token, added)


async def test_a_credential_of_another_account_is_refused(passkeys: Passkeys) -> None:
    ada, ada_key, _ = await signed_up(passkeys)
    bob = await passkeys.registered(BOB)
    bob_key = SoftAuthenticator()
    await passkeys.add(bob, bob_key)
    [ada_credential] = ada_key.credentials.values()
    [bob_credential] = bob_key.credentials.values()
    # Bob's credential id, signed with Ada's key: the signature is not Bob's key's.
    options, binding = await passkeys.authentication_options()
    forged = ada_key.get(options, ORIGIN, credential=ada_credential)
    forged["id"] = forged["rawId"] = b64url(bob_credential.credential_id)
    forged["response"]["userHandle"] = b64url(bob_credential.user_handle)
    body = await refused(await passkeys.authenticate(forged, binding), 400, "passkey_not_verified")
    assert "signature" in body["message"]
    # Ada's credential presenting Bob's account as its user.
    options, binding = await passkeys.authentication_options()
    claimed = ada_key.get(options, ORIGIN)
    claimed["response"]["userHandle"] = b64url(bob_credential.user_handle)
    body = await refused(await passkeys.authenticate(claimed, binding), 400, "passkey_not_verified")
    assert "user handle" in body["message"]
    # Ada's credential registered again, to Bob's account: it is registered already.
    options, binding = await passkeys.registration_options(bob)
    copied = ada_key.create(options, ORIGIN, credential=ada_credential)
    await refused(await passkeys.register(bob, copied, binding), 409, "passkey_already_registered")
    assert len(await passkeys.listed(bob)) == 1
    assert len(await passkeys.listed(ada)) == 1


# -- the WebAuthn steps the library leaves to its caller ---------------------------------------


async def test_a_key_of_an_algorithm_that_was_not_offered_is_refused(passkeys: Passkeys) -> None:
    token = await passkeys.registered()
    options, binding = await passkeys.registration_options(token)
    offered = {p["alg"] for p in options["pubKeyCredParams"]}
    assert ES256 in offered and RS1 not in offered
    sha1 = SoftAuthenticator().create(options, ORIGIN, algorithm=RS1)
    body = await refused(await passkeys.register(token, sha1, binding), 400, "passkey_not_verified")
    assert "algorithm" in body["message"]
    assert await passkeys.listed(token) == []


async def test_a_credential_id_over_1023_bytes_is_refused(passkeys: Passkeys) -> None:
    token = await passkeys.registered()
    options, binding = await passkeys.registration_options(token)
    long = SoftAuthenticator().create(options, ORIGIN, credential_id=os.urandom(1024))
    body = await refused(await passkeys.register(token, long, binding), 400, "passkey_not_verified")
    assert "1,023 bytes" in body["message"]
    assert await passkeys.listed(token) == []
    # 1,023 bytes is the most, and such a passkey signs in.
    longest = SoftAuthenticator()
    options, binding = await passkeys.registration_options(token)
    created = longest.create(options, ORIGIN, credential_id=os.urandom(1023))
    assert (await passkeys.register(token, created, binding)).status == 201
    assert (await passkeys.sign_in(longest)).status == 200


async def test_a_backup_state_without_backup_eligibility_is_refused(passkeys: Passkeys) -> None:
    token = await passkeys.registered()
    options, binding = await passkeys.registration_options(token)
    odd = SoftAuthenticator(backup_eligible=False, backed_up=True).create(options, ORIGIN)
    body = await refused(await passkeys.register(token, odd, binding), 400, "passkey_not_verified")
    assert "backup state" in body["message"]
    assert await passkeys.listed(token) == []

    authenticator = SoftAuthenticator(backup_eligible=True, backed_up=False)
    added = await passkeys.add(token, authenticator)
    authenticator.backup_eligible, authenticator.backed_up = False, True
    body = await refused(await passkeys.sign_in(authenticator), 400, "passkey_not_verified")
    assert "backup state" in body["message"]
    # Eligibility is the authenticator's for good: a credential that changes it is refused.
    authenticator.backup_eligible, authenticator.backed_up = False, False
    body = await refused(await passkeys.sign_in(authenticator), 400, "passkey_not_verified")
    assert "backup eligibility" in body["message"]
    await unchanged(passkeys, token, added)
    # Eligible, and now backed up (synced): a sign-in, and the list says so.
    authenticator.backup_eligible, authenticator.backed_up = True, True
    assert (await passkeys.sign_in(authenticator)).status == 200
    [listed] = await passkeys.listed(token)
    assert listed["backedUp"] is True


async def test_a_discoverable_sign_in_needs_the_user_handle_of_the_passkeys_account(
    passkeys: Passkeys,
) -> None:
    token, authenticator, added = await signed_up(passkeys)
    for handle, reason in ((None, "no user handle"), (b"someone-else", "user handle")):
        options, binding = await passkeys.authentication_options()
        assertion = authenticator.get(options, ORIGIN, user_handle=handle)
        body = await refused(
            await passkeys.authenticate(assertion, binding), 400, "passkey_not_verified"
        )
        assert reason in body["message"]
    await unchanged(passkeys, token, added)
    assert (await passkeys.sign_in(authenticator)).status == 200


async def test_a_removed_passkey_no_longer_signs_in(passkeys: Passkeys) -> None:
    token, authenticator, added = await signed_up(passkeys)
    await passkeys.add(token, SoftAuthenticator())  # another one, so that this may go
    answer = await passkeys.client.delete(
        f"/v1/account/passkeys/{added['id']}", headers=bearer(token)
    )
    assert answer.status == 204
    await refused(await passkeys.sign_in(authenticator), 401, "unknown_passkey")
    assert [e.outcome for e in await passkeys.audit()].count(Outcome.PASSKEY_REMOVED) == 1
    # Removing a passkey ended no session.
    assert (await passkeys.client.get("/v1/account", headers=bearer(token))).status == 200


async def status(passkeys: Passkeys, token: str) -> int:
    """What the session gets from GET /v1/account (200 live, 401 ended)."""
    return (await passkeys.client.get("/v1/account", headers=bearer(token))).status


async def test_removing_a_passkey_ends_the_sessions_it_signed_in(on_every_store: Passkeys) -> None:
    passkeys = on_every_store
    token, first_key, first = await signed_up(passkeys)
    second_key = SoftAuthenticator()
    second = await passkeys.add(token, second_key)
    by_first = [(await passkeys.sign_in(first_key)).cookies["session"].value for _ in range(2)]
    by_second = (await passkeys.sign_in(second_key)).cookies["session"].value
    listed = await passkeys.client.get("/v1/account/sessions", headers=bearer(token))
    signed_with = {s["passkeyId"] for s in (await listed.json())["sessions"] if "passkeyId" in s}
    assert signed_with == {first["id"], second["id"]}

    answer = await passkeys.client.delete(
        f"/v1/account/passkeys/{first['id']}", headers=bearer(token)
    )
    assert answer.status == 204
    assert [await status(passkeys, s) for s in by_first] == [401, 401]
    assert await status(passkeys, by_second) == 200
    assert await status(passkeys, token) == 200  # the google session that removed it

    # A session removing the passkey it signed in with stays, as after unlinking a provider.
    again = (await passkeys.sign_in(second_key)).cookies["session"].value
    answer = await passkeys.client.delete(
        f"/v1/account/passkeys/{second['id']}", headers=bearer(again)
    )
    assert answer.status == 204
    assert await status(passkeys, again) == 200
    assert await status(passkeys, by_second) == 401


async def test_the_list_and_the_export_say_when_and_from_which_session_a_passkey_was_added(
    passkeys: Passkeys,
) -> None:
    token = await passkeys.registered()
    options, binding = await passkeys.registration_options(token)
    created = SoftAuthenticator().create(options, ORIGIN)
    laptop = {"User-Agent": "Mozilla/5.0 (X11; Linux x86_64) Firefox/128.0"}
    answer = await passkeys.client.post(
        "/v1/account/passkeys/registration",
        json=created,
        headers={**bearer(token), "Cookie": f"__Host-authgate_binding={binding}", **laptop},
    )
    assert answer.status == 201, await answer.text()
    added = await answer.json()
    sid = claims_of(token)["sid"]
    assert added["addedBySession"] == sid
    assert added["addedFromUserAgent"] == laptop["User-Agent"]
    assert added["addedFromAddress"] == "127.0.0.1"
    [listed] = await passkeys.listed(token)
    assert {k: listed[k] for k in ("addedBySession", "addedFromUserAgent", "addedFromAddress")} == {
        k: added[k] for k in ("addedBySession", "addedFromUserAgent", "addedFromAddress")
    }
    exported = await passkeys.client.get("/v1/account/export", headers=bearer(token))
    export = await exported.json()
    [kept] = export["passkeys"]
    assert kept["passkey"]["addedBySession"] == sid
    assert kept["passkey"]["addedFromUserAgent"] == laptop["User-Agent"]
    assert kept["passkey"]["createdAt"] == added["createdAt"]
    assert sid in [s["id"] for s in export["sessions"]]


async def test_signing_out_everywhere_else_may_remove_the_passkeys_those_sessions_added(
    on_every_store: Passkeys,
) -> None:
    """Whoever held another session (a stolen one) could have added a passkey of their own:
    signing out everywhere else with remove_passkeys=true removes it with their sessions."""
    passkeys = on_every_store
    mine = await passkeys.registered()
    stolen = await passkeys.registered()  # a second session of the same account
    planted_key, own_key = SoftAuthenticator(), SoftAuthenticator()
    planted = await passkeys.add(stolen, planted_key)
    own = await passkeys.add(mine, own_key)
    by_planted = (await passkeys.sign_in(planted_key)).cookies["session"].value

    answer = await passkeys.client.delete(
        "/v1/account/sessions", params={"remove_passkeys": "true"}, headers=bearer(mine)
    )
    assert answer.status == 204, await answer.text()
    assert [await status(passkeys, s) for s in (mine, stolen, by_planted)] == [200, 401, 401]
    assert [p["id"] for p in await passkeys.listed(mine)] == [own["id"]]
    await refused(await passkeys.sign_in(planted_key), 401, "unknown_passkey")
    removed = [e for e in await passkeys.audit() if e.outcome is Outcome.PASSKEY_REMOVED]
    assert [e.detail.split(":")[0] for e in removed] == [planted["id"]]
    assert (await passkeys.sign_in(own_key)).status == 200


async def test_signing_out_everywhere_else_keeps_passkeys_unless_asked_and_the_callers_own(
    passkeys: Passkeys,
) -> None:
    mine = await passkeys.registered()
    other = await passkeys.registered()
    kept = await passkeys.add(other, SoftAuthenticator())
    answer = await passkeys.client.delete("/v1/account/sessions", headers=bearer(mine))
    assert answer.status == 204
    assert await status(passkeys, other) == 401
    assert [p["id"] for p in await passkeys.listed(mine)] == [kept["id"]]

    # The passkey the caller's own session signed in with is the caller's: it stays.
    bob = await passkeys.registered(BOB)
    bob_key = SoftAuthenticator()
    bobs = await passkeys.add(bob, bob_key)
    signed_in = (await passkeys.sign_in(bob_key)).cookies["session"].value
    answer = await passkeys.client.delete(
        "/v1/account/sessions", params={"remove_passkeys": "true"}, headers=bearer(signed_in)
    )
    assert answer.status == 204
    assert await status(passkeys, bob) == 401
    assert [p["id"] for p in await passkeys.listed(signed_in)] == [bobs["id"]]


async def test_signing_out_everywhere_else_never_removes_the_last_sign_in_method(
    on_every_store: Passkeys,
) -> None:
    passkeys = on_every_store
    mine = await passkeys.registered()  # through google
    link = await passkeys.signin.complete("apple", user=ADA, intent="link", bearer=mine)
    assert link.status == 302 and "error=" not in link.headers["Location"]
    other = session_of(await passkeys.signin.complete("apple", user=ADA))
    added = await passkeys.add(other, SoftAuthenticator())
    # Each session unlinks its own provider (and stays): the passkey is the only method left.
    for token, provider in ((mine, "google"), (other, "apple")):
        answer = await passkeys.client.delete(
            f"/v1/account/providers/{provider}", headers=bearer(token)
        )
        assert answer.status == 200, await answer.text()
    answer = await passkeys.client.delete(
        "/v1/account/sessions", params={"remove_passkeys": "true"}, headers=bearer(mine)
    )
    await refused(answer, 409, "last_sign_in_method")
    assert await status(passkeys, other) == 200  # nothing changed
    assert [p["id"] for p in await passkeys.listed(mine)] == [added["id"]]


async def test_the_sessions_list_says_whether_a_sign_in_proved_its_time(
    passkeys: Passkeys,
) -> None:
    """A page may offer a passkey after a sign-in that proved nothing (docs/passkeys.md)."""

    async def current(token: str) -> dict[str, Any]:
        answer = await passkeys.client.get("/v1/account/sessions", headers=bearer(token))
        [mine] = [s for s in (await answer.json())["sessions"] if s["current"]]
        assert isinstance(mine, dict)
        return mine

    google, authenticator, added = await signed_up(passkeys)  # an ID token's signed auth_time
    assert (await current(google))["authTimeProven"] is True
    by_passkey = (await passkeys.sign_in(authenticator)).cookies["session"].value
    assert (await current(by_passkey))["authTimeProven"] is True
    assert (await current(by_passkey))["passkeyId"] == added["id"]
    # The facebook shape has no ID token: its sign-in says nothing of when Bob logged in.
    facebook = session_of(await passkeys.signin.complete("facebook", user=BOB, intent="register"))
    assert (await current(facebook))["authTimeProven"] is False


async def test_a_malformed_response_is_refused(passkeys: Passkeys) -> None:
    token, authenticator, added = await signed_up(passkeys)
    options, binding = await passkeys.authentication_options()
    broken = authenticator.get(options, ORIGIN)
    broken["response"]["authenticatorData"] = "not*base64url"
    await refused(await passkeys.authenticate(broken, binding), 400, "invalid_passkey_response")
    options, binding = await passkeys.authentication_options()
    short = authenticator.get(options, ORIGIN)
    short["response"]["authenticatorData"] = b64url(b"\x00" * 10)
    await refused(await passkeys.authenticate(short, binding), 400, "invalid_passkey_response")
    options, binding = await passkeys.authentication_options()
    missing = authenticator.get(options, ORIGIN)
    del missing["response"]["signature"]
    await refused(await passkeys.authenticate(missing, binding), 400, "invalid_body")
    options, binding = await passkeys.registration_options(token)
    created = SoftAuthenticator().create(options, ORIGIN)
    created["response"]["attestationObject"] = b64url(b"\xa1\x01")  # CBOR, not an attestation
    await refused(await passkeys.register(token, created, binding), 400, "invalid_passkey_response")
    await unchanged(passkeys, token, added)
    assert len(await passkeys.listed(token)) == 1


async def test_a_cloned_authenticator_is_refused_and_audited(passkeys: Passkeys) -> None:
    token, authenticator, added = await signed_up(passkeys)
    assert (await passkeys.sign_in(authenticator, sign_count=5)).status == 200
    # The clone's counter is behind the original's (or equal: a replayed counter).
    for behind in (3, 5):
        body = await refused(
            await passkeys.sign_in(authenticator, sign_count=behind), 400, "passkey_not_verified"
        )
        assert "cloned" in body["message"]
    events = await passkeys.audit()
    regressed = [e for e in events if e.outcome is Outcome.PASSKEY_COUNTER_REGRESSED]
    assert len(regressed) == 2
    assert regressed[0].account_id == (await passkeys.account_of(token))["id"]
    [listed] = await passkeys.listed(token)
    exported = await passkeys.client.get("/v1/account/export", headers=bearer(token))
    assert (await exported.json())["passkeys"][0]["signCount"] == 5
    assert listed["id"] == added["id"]
    assert (await passkeys.sign_in(authenticator, sign_count=6)).status == 200


@pytest.mark.parametrize("kind", STORES)
async def test_concurrent_sign_ins_with_one_counter_value_one_wins(
    request: pytest.FixtureRequest,
    kind: str,
    make_service: MakeService,
    fake_idp: FakeIdP,
    idp_clock: SettableClock,
    tmp_path: Path,
) -> None:
    """A clone racing its original (or one assertion replayed at once from several browsers):
    the counter is checked and written in one conditional statement, so of the sign-ins that
    report the same counter exactly one gets a session."""
    passkeys = await start_passkeys(
        make_service,
        fake_idp,
        idp_clock,
        database_url(request, kind, tmp_path),
        ratelimit={"passkeys": "1000/minute"},
    )
    token, authenticator, _ = await signed_up(passkeys)
    assert (await passkeys.sign_in(authenticator, sign_count=4)).status == 200
    racing = []
    for _ in range(8):  # each from a browser of its own, with a challenge of its own
        options, binding = await passkeys.authentication_options()
        racing.append((authenticator.get(options, ORIGIN, sign_count=5), binding))
    answers = await asyncio.gather(*(passkeys.authenticate(a, b) for a, b in racing))
    assert sorted(a.status for a in answers) == [200] + [400] * 7
    for answer in answers:
        if answer.status == 400:
            body = await refused(answer, 400, "passkey_not_verified")
            assert "cloned" in body["message"]
    exported = await passkeys.client.get("/v1/account/export", headers=bearer(token))
    export = await exported.json()
    assert export["passkeys"][0]["signCount"] == 5
    signed_in = [s for s in export["sessions"] if s["provider"] == "passkey"]
    assert len(signed_in) == 2  # the sign-in at 4, and the one winner at 5
    events = await passkeys.audit()
    assert [e.outcome for e in events].count(Outcome.PASSKEY_COUNTER_REGRESSED) == 7


# -- the account's rules ----------------------------------------------------------------------


async def test_the_last_sign_in_method_counts_providers_and_passkeys(passkeys: Passkeys) -> None:
    token = await passkeys.registered()
    # Only a provider: it stays.
    answer = await passkeys.client.delete("/v1/account/providers/google", headers=bearer(token))
    await refused(answer, 409, "last_provider")
    first = await passkeys.add(token, SoftAuthenticator())
    # A passkey remains: the last provider may go.
    answer = await passkeys.client.delete("/v1/account/providers/google", headers=bearer(token))
    assert answer.status == 200, await answer.text()
    assert (await answer.json())["providers"] == []
    answer = await passkeys.client.delete(
        f"/v1/account/passkeys/{first['id']}", headers=bearer(token)
    )
    await refused(answer, 409, "last_sign_in_method")
    second = await passkeys.add(token, SoftAuthenticator())
    answer = await passkeys.client.delete(
        f"/v1/account/passkeys/{first['id']}", headers=bearer(token)
    )
    assert answer.status == 204
    assert [p["id"] for p in await passkeys.listed(token)] == [second["id"]]


async def test_adding_and_removing_need_a_recent_sign_in(passkeys: Passkeys) -> None:
    token, authenticator, added = await signed_up(passkeys)
    passkeys.clock.advance(601)
    for method, path in (
        ("POST", "/v1/account/passkeys/registration/options"),
        ("DELETE", f"/v1/account/passkeys/{added['id']}"),
    ):
        answer = await passkeys.client.request(method, path, headers=bearer(token))
        await refused(answer, 401, "reauthentication_required")
        assert "insufficient_user_authentication" in answer.headers["WWW-Authenticate"]
    # Renaming and listing need none; a passkey sign-in is a recent one.
    answer = await passkeys.client.patch(
        f"/v1/account/passkeys/{added['id']}", json={"name": " Phone "}, headers=bearer(token)
    )
    assert (await answer.json())["name"] == "Phone"
    fresh = (await passkeys.sign_in(authenticator)).cookies["session"].value
    options, _ = await passkeys.registration_options(fresh)
    assert options["excludeCredentials"]


async def test_a_registration_challenge_belongs_to_the_session_that_asked(
    passkeys: Passkeys,
) -> None:
    ada = await passkeys.registered()
    bob = await passkeys.registered(BOB)
    options, binding = await passkeys.registration_options(ada)
    created = SoftAuthenticator().create(options, ORIGIN)
    await refused(await passkeys.register(bob, created, binding), 400, "invalid_challenge")
    assert await passkeys.listed(bob) == []
    assert await passkeys.listed(ada) == []


async def test_renaming(passkeys: Passkeys) -> None:
    token, _, added = await signed_up(passkeys)
    other = await passkeys.registered(BOB)
    path = f"/v1/account/passkeys/{added['id']}"
    for name in ("", "x" * 65, "tab\there"):
        answer = await passkeys.client.patch(path, json={"name": name}, headers=bearer(token))
        await refused(answer, 400, "invalid_request")
    answer = await passkeys.client.patch(path, json={"name": "mine"}, headers=bearer(other))
    await refused(answer, 404, "passkey_not_found")
    answer = await passkeys.client.delete(path, headers=bearer(other))
    await refused(answer, 404, "passkey_not_found")
    [listed] = await passkeys.listed(token)
    assert listed["name"] == "Passkey"


async def test_deleting_the_account_deletes_its_passkeys(passkeys: Passkeys) -> None:
    token, authenticator, _ = await signed_up(passkeys)
    assert (await passkeys.client.delete("/v1/account", headers=bearer(token))).status == 204
    await refused(await passkeys.sign_in(authenticator), 401, "unknown_passkey")


async def test_a_disabled_account_is_refused_like_a_provider_sign_in(passkeys: Passkeys) -> None:
    token, authenticator, added = await signed_up(passkeys)
    resources = passkeys.client.app[assembly.RESOURCES]
    await resources.stores.accounts.set_identity_disabled(
        ProviderIdentity("google", ADA.sub), "account-disabled"
    )
    body = await refused(await passkeys.sign_in(authenticator), 403, "access_denied")
    assert body["message"] == "sign-in to this account is disabled"
    await unchanged(passkeys, token, added)


async def test_adding_a_passkey_ends_no_session_and_is_audited(passkeys: Passkeys) -> None:
    token = await passkeys.registered()
    other = await passkeys.registered()  # a second session of the same account
    await passkeys.add(token, SoftAuthenticator())
    for session in (token, other):
        assert (await passkeys.client.get("/v1/account", headers=bearer(session))).status == 200
    [event] = [e for e in await passkeys.audit() if e.outcome is Outcome.PASSKEY_ADDED]
    assert event.provider == "passkey"


def assertion_shape() -> dict[str, Any]:
    """A well-formed assertion (of a credential nobody registered)."""
    authenticator = SoftAuthenticator()
    authenticator.create({"rp": {"id": RP_ID}, "user": {"id": "eA"}, "challenge": "eA"}, ORIGIN)
    return authenticator.get({"challenge": "eA"}, ORIGIN)


# -- limits ------------------------------------------------------------------------------------


async def test_the_ceremonies_are_rate_limited_per_client(
    make_service: MakeService, fake_idp: FakeIdP, idp_clock: SettableClock
) -> None:
    passkeys = await start_passkeys(
        make_service, fake_idp, idp_clock, ratelimit={"passkeys": "3/minute"}
    )
    for _ in range(3):
        await passkeys.authentication_options()
    answer = await passkeys.client.post("/v1/passkeys/authentication/options")
    await refused(answer, 429, "rate_limited")
    assert int(answer.headers["Retry-After"]) > 0
    answer = await passkeys.client.post("/v1/passkeys/authentication", json=assertion_shape())
    await refused(answer, 429, "rate_limited")


async def test_a_flood_of_options_cannot_grow_the_memory_store(
    make_service: MakeService, fake_idp: FakeIdP, idp_clock: SettableClock
) -> None:
    passkeys = await start_passkeys(
        make_service,
        fake_idp,
        idp_clock,
        passkeys={"memory_max_challenges": 3},
        ratelimit={"passkeys": "100/minute"},
    )
    browsers = [(await passkeys.authentication_options())[1] for _ in range(3)]
    answer = await passkeys.client.post("/v1/passkeys/authentication/options")
    await refused(answer, 503, "temporarily_unavailable")
    # A browser asking again replaces its own challenge; expired ones make room.
    await passkeys.authentication_options(browsers[0])
    idp_clock.advance(301)
    await passkeys.authentication_options()


# -- configuration -----------------------------------------------------------------------------


def test_an_rp_id_that_does_not_cover_an_allowed_origin_stops_start_up() -> None:
    text = """
rest: {port: 8080, public_url: "https://api.example.com"}
otel: {service: {name: t}, sdk: {disabled: true}}
app: {url: "https://app.example.com", allowed_origins: ["https://app.example.com", "https://other.example.org"]}
passkeys: {enabled: true, rp_id: example.com}
"""
    with pytest.raises(ConfigError) as raised:
        parse(text)
    message = str(raised.value)
    assert "\n" not in message
    assert message.startswith("passkeys.rp_id: 'example.com' does not cover the allowed origin")
    assert "https://other.example.org" in message
    # By default: the service's own host, which the application's origin is not under.
    with pytest.raises(ConfigError, match=r"^passkeys\.rp_id: 'api\.example\.com' does not"):
        parse(text.replace("rp_id: example.com", "rp_name: x"))
    config = parse(text.replace(', "https://other.example.org"', ""))
    assert config.passkeys.rp_id == "example.com"


def test_passkeys_are_off_unless_enabled(tmp_path: Path) -> None:
    from authgate.entrypoints.app.build import document

    text = "rest: {port: 8080}\notel: {service: {name: t}, sdk: {disabled: true}}\n"
    assert not [p for p in document(parse(text))["paths"] if "passkeys" in p]
    on = document(parse(text + "passkeys: {enabled: true}\napp: {url: 'http://127.0.0.1:8080'}\n"))
    assert {p for p in on["paths"] if "passkeys" in p} == {
        "/v1/account/passkeys/registration/options",
        "/v1/account/passkeys/registration",
        "/v1/passkeys/authentication/options",
        "/v1/passkeys/authentication",
        "/v1/account/passkeys",
        "/v1/account/passkeys/{id}",
    }


async def test_passkey_sign_ins_are_counted_in_the_metrics(
    make_service: MakeService, fake_idp: FakeIdP, idp_clock: SettableClock
) -> None:
    from tests.app.test_metrics import scrape, value

    passkeys = await start_passkeys(make_service, fake_idp, idp_clock, metrics={"port": None})
    token, authenticator, _ = await signed_up(passkeys)
    assert (await passkeys.sign_in(authenticator, sign_count=4)).status == 200
    assert (await passkeys.sign_in(authenticator, sign_count=2)).status == 400
    samples = await scrape(passkeys.client)
    signed_in = {"provider": "passkey", "outcome": "signed_in", "reason": "none"}
    assert value(samples, "authgate_sign_ins_total", **signed_in) == 1
    cloned = {"provider": "passkey", "outcome": "failed", "reason": "passkey_counter_regressed"}
    assert value(samples, "authgate_sign_ins_total", **cloned) == 1
    assert value(samples, "authgate_sessions_issued_total", provider="passkey") == 1
    assert token


async def test_a_challenge_asked_of_one_instance_is_answered_at_another(
    make_service: MakeService,
    fake_idp: FakeIdP,
    idp_clock: SettableClock,
    clean_postgres_url: str,
) -> None:
    # Two instances on one PostgreSQL database (and one key file): the challenge is shared.
    first = await start_passkeys(make_service, fake_idp, idp_clock, clean_postgres_url)
    second = await start_passkeys(make_service, fake_idp, idp_clock, clean_postgres_url)
    token = await first.registered()
    authenticator = SoftAuthenticator()
    options, binding = await first.registration_options(token)
    answer = await second.register(token, authenticator.create(options, ORIGIN), binding)
    assert answer.status == 201, await answer.text()
    options, binding = await first.authentication_options()
    signed = await second.authenticate(authenticator.get(options, ORIGIN), binding)
    assert signed.status == 200, await signed.text()
    options, binding = await second.authentication_options()
    assert (await first.authenticate(authenticator.get(options, ORIGIN), binding)).status == 200
    listed = [p["id"] for p in await first.listed(token)]
    assert len(listed) == 1
    assert listed == [p["id"] for p in await second.listed(token)]


async def test_a_passkey_step_up_in_a_signed_in_browser_keeps_one_session(
    on_every_store: Passkeys,
) -> None:
    passkeys = on_every_store
    token = await passkeys.registered()
    authenticator = SoftAuthenticator()
    await passkeys.add(token, authenticator)
    passkeys.clock.advance(3600)  # the provider sign-in is stale: a step-up is needed
    options, binding = await passkeys.authentication_options()
    answer = await passkeys.client.post(
        "/v1/passkeys/authentication",
        json=authenticator.get(options, ORIGIN),
        headers={**browser(binding), "Cookie": f"session={token}; {BINDING}={binding}"},
    )
    assert answer.status == 200, await answer.text()
    stepped_up = answer.cookies["session"].value
    assert claims_of(stepped_up)["sid"] == claims_of(token)["sid"]
    assert claims_of(stepped_up)["auth_time"] > claims_of(token)["auth_time"]
    sessions = await passkeys.client.get("/v1/account/sessions", headers=bearer(stepped_up))
    assert len((await sessions.json())["sessions"]) == 1
    exported = await passkeys.client.get("/v1/account/export", headers=bearer(stepped_up))
    assert exported.status == 200


async def test_an_account_that_cannot_prove_a_login_may_add_its_first_passkey(
    passkeys: Passkeys,
) -> None:
    """Signed up through facebook (it signs no login time), the account can gain a way to
    prove one only by adding a passkey: right after that sign-in, not later."""
    token = session_of(await passkeys.signin.complete("facebook", user=ADA, intent="register"))
    assert claims_of(token)["auth_time"] == 0
    added = await passkeys.add(token, SoftAuthenticator())
    assert added["name"]
    # Now it can prove a login: the next change needs the passkey, not a recent sign-in.
    late = session_of(await passkeys.signin.complete("facebook", user=ADA, intent="login"))
    answer = await passkeys.client.post(
        "/v1/account/passkeys/registration/options", headers=bearer(late)
    )
    assert answer.status == 401
    assert (await answer.json())["error"] == "reauthentication_required"


async def test_an_old_sign_in_that_proved_nothing_adds_no_passkey(passkeys: Passkeys) -> None:
    token = session_of(await passkeys.signin.complete("facebook", user=ADA, intent="register"))
    passkeys.clock.advance(601)
    answer = await passkeys.client.post(
        "/v1/account/passkeys/registration/options", headers=bearer(token)
    )
    assert answer.status == 401
