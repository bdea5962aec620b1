"""The one active-token check (services/openid/access.py), condition by condition, as
userinfo and introspection see it over HTTP on memory, SQLite and PostgreSQL: an access token
is active only while its signature and ``exp`` verify, its client is registered, its session
is live, its family is live and its account exists; a refresh token while it is current, with
the same conditions. Each way of making one inactive takes effect at once."""

from __future__ import annotations

import datetime as dt
import secrets

import attrs

from authgate.domain.openid.records import RefreshToken, token_digest
from tests.fakeidp import FakeUser
from tests.openid_resource.conftest import Provider

BOB = FakeUser(sub="bob-1", email="bob@example.com", name="Bob B")


async def test_an_issued_token_is_active(provider: Provider) -> None:
    person = await provider.sign_in(BOB)
    issued = await provider.issue(person)
    assert issued.refresh_token is not None
    assert await provider.active(issued.access_token)
    assert await provider.active(issued.refresh_token)


async def test_expiry_ends_an_access_token(provider: Provider) -> None:
    person = await provider.sign_in(BOB)
    issued = await provider.issue(person, lifetime=dt.timedelta(seconds=60))
    # The clock is real time plus an offset and exp is a whole second: 55 s in leaves room for
    # the truncated fraction and a slow machine between the two requests.
    provider.clock.advance(55)
    assert await provider.active(issued.access_token)
    provider.clock.advance(6)
    assert not await provider.active(issued.access_token)


async def test_a_revoked_session_ends_its_tokens_at_once(provider: Provider) -> None:
    person = await provider.sign_in(BOB)
    issued = await provider.issue(person)
    assert issued.refresh_token is not None
    # Found live (and so cached as live on this instance) first.
    assert await provider.active(issued.access_token)
    ended = await provider.client.delete(
        f"/v1/account/sessions/{person.session_id}",
        headers={"Authorization": f"Bearer {person.session_token}"},
    )
    assert ended.status == 204
    assert not await provider.active(issued.access_token)
    assert not await provider.active(issued.refresh_token)


async def test_a_revoked_family_ends_its_tokens_at_once(provider: Provider) -> None:
    person = await provider.sign_in(BOB)
    issued = await provider.issue(person)
    sibling = await provider.issue(person)  # another family of the same session and client
    assert issued.refresh_token is not None
    assert await provider.active(issued.access_token)
    async with provider.resources.stores.units.begin() as tx:
        assert await tx.refresh_tokens.revoke_family(issued.family_id, provider.clock.now())
    assert not await provider.active(issued.access_token)
    assert not await provider.active(issued.refresh_token)
    assert await provider.active(sibling.access_token)


async def test_a_deleted_account_ends_its_tokens_at_once(provider: Provider) -> None:
    person = await provider.sign_in(BOB)
    issued = await provider.issue(person)
    assert issued.refresh_token is not None
    assert await provider.active(issued.access_token)
    deleted = await provider.client.delete(
        "/v1/account", headers={"Authorization": f"Bearer {person.session_token}"}
    )
    assert deleted.status == 204
    assert not await provider.active(issued.access_token)
    assert not await provider.active(issued.refresh_token)


async def test_a_missing_account_alone_makes_a_token_inactive(provider: Provider) -> None:
    """The account check on its own: a token naming the session and a live family of another
    account, whose own account (its sub) does not exist."""
    person = await provider.sign_in(BOB)
    issued = await provider.issue(person)
    ghost = provider.access_token(attrs.evolve(issued.claims, subject="no-such-account"))
    assert await provider.active(issued.access_token)
    assert not await provider.active(ghost)


async def test_a_client_no_longer_registered_has_no_active_token(provider: Provider) -> None:
    person = await provider.sign_in(BOB)
    issued = await provider.issue(person, client_id="gone")
    assert issued.refresh_token is not None
    assert not await provider.active(issued.access_token)
    assert not await provider.active(issued.refresh_token)


async def test_a_rotated_or_expired_refresh_token_is_inactive(provider: Provider) -> None:
    person = await provider.sign_in(BOB)
    issued = await provider.issue(person)
    assert issued.refresh_token is not None
    now = provider.clock.now()
    successor = secrets.token_urlsafe(32)
    async with provider.resources.stores.units.begin() as tx:
        old = await tx.refresh_tokens.get(token_digest(issued.refresh_token))
        assert old is not None
        new = RefreshToken(
            token_hash=token_digest(successor),
            family_id=old.family_id,
            client_id=old.client_id,
            account_id=old.account_id,
            session_id=old.session_id,
            scopes=old.scopes,
            auth_time=old.auth_time,
            created_at=now,
            expires_at=now + dt.timedelta(hours=1),
        )
        assert await tx.refresh_tokens.rotate(old.token_hash, new, now) is not None
    assert not await provider.active(issued.refresh_token)
    assert await provider.active(successor)
    # The access token of the family stays active: rotation is no revocation.
    assert await provider.active(issued.access_token)
    provider.clock.advance(dt.timedelta(hours=1, seconds=1).total_seconds())
    assert not await provider.active(successor)
