"""Provider events meet kept provider tokens: what a provider says about its user
decides what becomes of the token authgate kept for revocation. Apple's ``consent-revoked`` /
``account-delete`` unlink (or delete the account) and so revoke the kept Apple token at Apple's
``/auth/revoke`` through the outbox; RISC ``tokens-revoked`` drops the kept Google token without
sending it back (Google revoked it already); RISC ``account-disabled`` for hijacking revokes
it. A replayed event queues nothing again. Over HTTP, on SQLite and PostgreSQL."""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any

import pytest

from authgate.domain.model import Outcome
from authgate.entrypoints.app.build import RESOURCES
from tests.fakeidp import FakeIdP, FakeUser, RevocationStyle, SettableClock
from tests.fakeidp.events import apple_notification, security_event
from tests.support.stores import service_database_url
from tests.support.waiting import eventually

from .conftest import Events, MakeService, SignIn, events_config
from .provider_tokens_support import account_of, outbox_empty, outcomes, raw_rows, revoked_event
from .test_apple_notifications import link_apple, notify, providers_of
from .test_risc_events import push

ADA_APPLE = FakeUser(sub="000123.apple-ada.0456", email="ada@privaterelay.appleid.com")
ADA_GOOGLE = FakeUser(sub="ada-google-1", email="ada@example.com", name="Ada Lovelace")
KEY = {"id": "k1", "secret": secrets.token_urlsafe(32)}


@pytest.fixture(params=["sqlite", "postgres"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return service_database_url(request, request.param, tmp_path)


async def start(
    make_service: MakeService,
    fake: FakeIdP,
    clock: SettableClock,
    database_url: str,
    **provider_events: Any,
) -> Events:
    """The service with every event receiver on and provider tokens kept (Google revoked in
    Google's shape: the token alone)."""
    extra: dict[str, Any] = {
        "provider_tokens": {
            "keys": [KEY],
            "retry_initial_seconds": 1,
            "retry_max_seconds": 4,
            "poll_seconds": 0.05,
            "lease_seconds": 5,
        }
    }
    if provider_events:
        extra["provider_events"] = provider_events
    config = events_config(fake, database_url, extra)
    config["providers"]["google"]["revocation_auth"] = "none"
    fake.google.revocation_style = RevocationStyle.GOOGLE
    client = await make_service(config, clock=clock)
    return Events(SignIn(client, fake, clock), fake)


@pytest.fixture
async def events(
    make_service: MakeService, fake_idp: FakeIdP, idp_clock: SettableClock, database_url: str
) -> Events:
    return await start(make_service, fake_idp, idp_clock, database_url)


async def kept(database_url: str) -> list[tuple[str, str]]:
    """(provider, subject) of every kept provider token, as the database holds them."""
    rows = await raw_rows(database_url, "provider_tokens")
    return sorted((r["provider"], r["subject"]) for r in rows)


async def ada_with_google_and_apple(events: Events) -> str:
    """Ada registered with Google and linked Apple; her Google session's token."""
    google = await events.signed_in("google", ADA_GOOGLE)
    await link_apple(events, google, ADA_APPLE)
    return google


async def audit_details(events: Events, account_id: str, outcome: Outcome) -> list[str | None]:
    found = await events.client.app[RESOURCES].stores.events.for_account(account_id)
    return [e.detail for e in found if e.outcome is outcome]


# -- Apple --------------------------------------------------------------------------------


@pytest.mark.parametrize("revoked_at_apple_first", [False, True])
async def test_consent_revoked_unlinks_apple_and_revokes_its_kept_token_at_apple(
    events: Events, database_url: str, revoked_at_apple_first: bool
) -> None:
    apple = events.idp.apple
    google = await ada_with_google_and_apple(events)
    account_id = account_of(google)
    [refresh_token] = apple.refresh_tokens
    assert await kept(database_url) == [("apple", ADA_APPLE.sub), ("google", ADA_GOOGLE.sub)]
    if revoked_at_apple_first:  # what the user did at Apple, which Apple then notifies
        assert apple.revoke(refresh_token)
    secrets_before = len(apple.client_secret_claims)

    body = apple_notification(apple, "consent-revoked", ADA_APPLE.sub)
    assert await notify(events, body) == (200, None)

    assert await providers_of(events, google) == ["google"]
    await eventually(lambda: len(apple.revocations) == 1, what="the revocation at Apple")
    [sent] = apple.revocations
    assert (sent.token, sent.hint) == (refresh_token, "refresh_token")
    assert sent.known is not revoked_at_apple_first
    assert sent.form_keys == {"client_id", "client_secret", "token", "token_type_hint"}
    # The fake verified the client-secret JWT the revocation carried.
    assert len(apple.client_secret_claims) == secrets_before + 1
    assert apple.client_secret_claims[-1]["sub"] == apple.client_id

    async def audited() -> bool:
        return revoked_event("apple") in await outcomes(events.client, account_id)

    await eventually(audited, what="provider_token_revoked in the audit trail")
    await eventually(lambda: outbox_empty(database_url), what="the outbox emptied")
    assert await kept(database_url) == [("google", ADA_GOOGLE.sub)]
    assert events.idp.google.revocations == []  # Google's token is not Apple's business


async def test_account_delete_of_the_only_sign_in_method_revokes_every_kept_token(
    events: Events, database_url: str
) -> None:
    apple = events.idp.apple
    token = await events.signed_in("apple", ADA_APPLE)
    account_id = account_of(token)
    [refresh_token] = apple.refresh_tokens
    assert await kept(database_url) == [("apple", ADA_APPLE.sub)]

    body = apple_notification(apple, "account-delete", ADA_APPLE.sub)
    assert await notify(events, body) == (200, None)

    assert await events.status(token) == 401
    assert await raw_rows(database_url, "accounts") == []
    await eventually(lambda: len(apple.revocations) == 1, what="the revocation at Apple")
    assert (apple.revocations[0].token, apple.revocations[0].known) == (refresh_token, True)
    assert await kept(database_url) == []

    async def audited() -> bool:
        return revoked_event("apple") in await outcomes(events.client, account_id)

    await eventually(audited, what="provider_token_revoked in the audit trail")
    await eventually(lambda: outbox_empty(database_url), what="the outbox emptied")


@pytest.mark.parametrize("event_type", ["consent-revoked", "account-delete"])
async def test_with_deletion_switched_off_the_only_identity_keeps_its_token(
    make_service: MakeService,
    fake_idp: FakeIdP,
    idp_clock: SettableClock,
    database_url: str,
    event_type: str,
) -> None:
    events = await start(
        make_service,
        fake_idp,
        idp_clock,
        database_url,
        delete_account_when_last_identity=False,
    )
    token = await events.signed_in("apple", ADA_APPLE)
    [before] = await raw_rows(database_url, "provider_tokens")

    body = apple_notification(fake_idp.apple, event_type, ADA_APPLE.sub)
    assert await notify(events, body) == (200, None)

    assert await events.status(token) == 401  # signed out ...
    # ... but the identity is kept, and so is its token: nothing was queued, nothing is sent.
    assert await raw_rows(database_url, "provider_tokens") == [before]
    assert await outbox_empty(database_url)
    assert fake_idp.apple.revocations == []
    details = await audit_details(events, account_of(token), Outcome.PROVIDER_SIGNED_OUT)
    assert details == [f"{event_type}: only sign-in method, kept"]


async def test_a_replayed_notification_queues_no_revocation_again(
    events: Events, database_url: str
) -> None:
    apple = events.idp.apple
    google = await ada_with_google_and_apple(events)
    body = apple_notification(apple, "consent-revoked", ADA_APPLE.sub)
    assert (await notify(events, body))[0] == 200
    await eventually(lambda: len(apple.revocations) == 1, what="the revocation at Apple")
    await eventually(lambda: outbox_empty(database_url), what="the outbox emptied")
    await link_apple(events, google, ADA_APPLE)  # Ada links Apple again: a new token kept
    [newer] = apple.refresh_tokens  # the first was revoked at Apple
    assert newer != apple.revocations[0].token
    rows = await raw_rows(database_url, "provider_tokens")
    assert [r["provider"] for r in rows].count("apple") == 1

    assert (await notify(events, body))[0] == 200  # the same notification delivered again

    assert await providers_of(events, google) == ["google", "apple"]
    assert await outbox_empty(database_url)
    assert await raw_rows(database_url, "provider_tokens") == rows  # the new token stays
    assert len(apple.revocations) == 1
    revoked = await audit_details(events, account_of(google), Outcome.PROVIDER_TOKEN_REVOKED)
    assert len(revoked) == 1


# -- Google RISC --------------------------------------------------------------------------


async def test_risc_tokens_revoked_drops_the_kept_google_token_without_revoking_it(
    events: Events, database_url: str
) -> None:
    google_fake = events.idp.google
    google = await ada_with_google_and_apple(events)
    assert await kept(database_url) == [("apple", ADA_APPLE.sub), ("google", ADA_GOOGLE.sub)]

    token = security_event(
        google_fake,
        "https://schemas.openid.net/secevent/oauth/event-type/tokens-revoked",
        ADA_GOOGLE.sub,
    )
    assert await push(events, token) == (202, None)

    assert await events.status(google) == 401
    # Dropped in the event's transaction, nothing queued: Google revoked it already.
    assert await kept(database_url) == [("apple", ADA_APPLE.sub)]
    assert await outbox_empty(database_url)
    assert google_fake.revocations == [] and events.idp.apple.revocations == []
    details = await audit_details(events, account_of(google), Outcome.PROVIDER_SIGNED_OUT)
    # One session: linking Apple went on in the session that started it.
    assert details == ["tokens-revoked: 1; kept token dropped"]

    # The next sign-in through Google keeps its new token; the event replayed drops nothing.
    await events.signin.complete("google", user=ADA_GOOGLE)
    assert await kept(database_url) == [("apple", ADA_APPLE.sub), ("google", ADA_GOOGLE.sub)]
    assert await push(events, token) == (202, None)
    assert await kept(database_url) == [("apple", ADA_APPLE.sub), ("google", ADA_GOOGLE.sub)]


async def test_risc_sessions_revoked_keeps_the_token(events: Events, database_url: str) -> None:
    await ada_with_google_and_apple(events)
    token = security_event(events.idp.google, "sessions-revoked", ADA_GOOGLE.sub)
    assert await push(events, token) == (202, None)
    assert await kept(database_url) == [("apple", ADA_APPLE.sub), ("google", ADA_GOOGLE.sub)]
    assert await outbox_empty(database_url)


async def test_risc_hijacking_revokes_the_kept_google_token_once(
    events: Events, database_url: str
) -> None:
    google_fake = events.idp.google
    google = await ada_with_google_and_apple(events)
    account_id = account_of(google)
    [access_token] = google_fake.access_tokens  # Google granted no refresh token

    disabled = security_event(google_fake, "account-disabled", ADA_GOOGLE.sub, reason="hijacking")
    assert await push(events, disabled) == (202, None)

    await eventually(lambda: len(google_fake.revocations) == 1, what="the revocation at Google")
    [sent] = google_fake.revocations
    assert (sent.token, sent.form_keys, sent.authorization) == (access_token, {"token"}, None)

    async def audited() -> bool:
        return revoked_event("google") in await outcomes(events.client, account_id)

    await eventually(audited, what="provider_token_revoked in the audit trail")
    await eventually(lambda: outbox_empty(database_url), what="the outbox emptied")
    assert await kept(database_url) == [("apple", ADA_APPLE.sub)]  # Apple's is not at stake
    assert events.idp.apple.revocations == []

    # Enabled again, Ada signs in: a new token is kept; the replayed event queues nothing.
    enabled = security_event(google_fake, "account-enabled", ADA_GOOGLE.sub)
    assert (await push(events, enabled))[0] == 202
    await events.signin.complete("google", user=ADA_GOOGLE)
    assert await kept(database_url) == [("apple", ADA_APPLE.sub), ("google", ADA_GOOGLE.sub)]
    assert await push(events, disabled) == (202, None)
    assert await outbox_empty(database_url)
    assert await kept(database_url) == [("apple", ADA_APPLE.sub), ("google", ADA_GOOGLE.sub)]
    assert len(google_fake.revocations) == 1


async def test_risc_disabling_for_another_reason_keeps_the_token(
    events: Events, database_url: str
) -> None:
    await ada_with_google_and_apple(events)
    token = security_event(
        events.idp.google, "account-disabled", ADA_GOOGLE.sub, reason="bulk-account"
    )
    assert await push(events, token) == (202, None)
    assert await kept(database_url) == [("apple", ADA_APPLE.sub), ("google", ADA_GOOGLE.sub)]
    assert await outbox_empty(database_url)
    assert events.idp.google.revocations == []
