"""The memory unit of work notes only what a unit writes: a unit that raises after writing
to every store, on stores holding many rows, leaves each of them exactly as it was (the same
rows, in the same order); a unit that ends normally keeps its writes, and the next unit's
failure does not undo them."""

from __future__ import annotations

import datetime as dt
from typing import Any

import attrs
import pytest

from authgate.adapters.memory import (
    MemoryAccounts,
    MemoryEvents,
    MemorySessionRecords,
    MemoryUnitOfWork,
)
from authgate.domain.model import (
    EventId,
    Outcome,
    PendingRevocation,
    ProviderIdentity,
    SealedToken,
    SessionRecord,
    StoredProviderToken,
)
from authgate.domain.openid.logout import PendingLogout
from tests.contract.test_passkeys import passkey
from tests.support.oauth_records import DAY, code, family, grant, refresh, session_client
from tests.support.records import T0, at, event, verified

ROWS = 2_000
EVENTS_KEPT = 50
LEASE = dt.timedelta(seconds=60)


class Boom(Exception):
    pass


def session(sid: str, account: str, expires_at: dt.datetime = T0 + DAY) -> SessionRecord:
    return SessionRecord(
        id=sid,
        account_id=account,
        provider="google",
        created_at=T0,
        expires_at=expires_at,
        absolute_expires_at=T0 + 30 * DAY,
        auth_time=T0,
    )


def logout(rid: str, account: str) -> PendingLogout:
    return PendingLogout(
        id=rid,
        client_id="web",
        account_id=account,
        session_id=f"sid-{rid}",
        created_at=T0,
        next_attempt_at=T0,
    )


def revocation(rid: str, account: str) -> PendingRevocation:
    return PendingRevocation(
        id=rid,
        account_id=account,
        identity=ProviderIdentity("google", f"s-{rid}"),
        sealed=SealedToken("k1", f"sealed-{rid}"),
        created_at=T0,
        next_attempt_at=T0,
    )


@attrs.define
class Held:
    """A memory unit of work over stores that hold ``ROWS`` accounts and their rows."""

    units: MemoryUnitOfWork
    accounts: MemoryAccounts
    events: MemoryEvents
    sessions: MemorySessionRecords
    ids: list[str]

    def everything(self) -> dict[str, Any]:
        """Every store's rows, in their order."""
        u = self.units
        families, tokens = u.refresh_tokens.snapshot()
        accounts, identities = self.accounts.snapshot()
        tables: dict[str, dict[Any, Any]] = {
            "accounts": accounts,
            "identities": identities,
            "sessions": self.sessions.snapshot(),
            "seen": u.seen_events.snapshot(),
            "provider_tokens": u.provider_tokens.snapshot(),
            "revocations": u.revocations.snapshot(),
            "codes": u.authorization_codes.snapshot(),
            "families": families,
            "tokens": tokens,
            "grants": u.grants.snapshot(),
            "session_clients": u.session_clients.snapshot(),
            "logouts": u.logout_outbox.snapshot(),
            "passkeys": u.passkeys.snapshot(),
        }
        held: dict[str, Any] = {name: list(t.items()) for name, t in tables.items()}
        held["events"] = self.events.snapshot()
        return held


async def _fill_one(units: MemoryUnitOfWork, n: int, account: str) -> None:
    sid = f"sid-{n}"
    await units.passkeys.add(passkey(account, credential_id=n.to_bytes(4, "big") * 8))
    await units.authorization_codes.add(code(account, f"code-{n}", session_id=sid))
    await units.refresh_tokens.start_family(
        family(account, f"fam-{n}", session_id=sid),
        refresh(account, f"rt-{n}", f"fam-{n}", session_id=sid),
    )
    await units.grants.put(grant(account))
    await units.session_clients.add(session_client(account, sid))
    await units.provider_tokens.put(
        StoredProviderToken(
            account, ProviderIdentity("google", f"s-{n}"), SealedToken("k1", "c"), T0
        )
    )
    await units.logout_outbox.add(logout(f"l-{n}", account))
    await units.revocations.add(revocation(f"r-{n}", account))


@pytest.fixture
async def held() -> Held:
    accounts, events, sessions = MemoryAccounts(), MemoryEvents(EVENTS_KEPT), MemorySessionRecords()
    units = MemoryUnitOfWork(accounts, events, sessions)
    ids = []
    for n in range(ROWS):
        account, _ = await accounts.create_with_identity(verified(subject=f"s-{n}"), T0)
        ids.append(account.id)
        await sessions.add(session(f"sid-{n}", account.id))
        await _fill_one(units, n, account.id)
    for n in range(EVENTS_KEPT):
        await events.record(event(n, Outcome.SIGNED_IN, account_id=ids[n]))
    return Held(units, accounts, events, sessions, ids)


async def _write_everywhere(held: Held) -> None:
    """Writes of every kind to every store, as a unit would make them."""
    first, second, third = held.ids[:3]
    async with held.units.begin() as tx:
        new, _ = await tx.accounts.create_with_identity(verified(subject="new"), at(1))
        await tx.accounts.record_login(first, at(2))
        await tx.accounts.link_identity(first, verified("apple", "a-1"), at(2))
        await tx.accounts.unlink_identity(third, "google")  # a passkey remains
        await tx.accounts.delete(second)  # cascades to its codes, tokens, grants, clients, passkeys
        for n in range(EVENTS_KEPT + 5):  # more than the log keeps: its oldest go
            await tx.events.record(event(100 + n, Outcome.REGISTERED, account_id=new.id))
        await tx.sessions.add(session("sid-new", new.id))
        await tx.sessions.revoke_all(first, at(3))
        await tx.seen_events.first_sight(_event_id("jti-1"), at(3))
        await tx.provider_tokens.take(first)
        await tx.revocations.claim(at(4), LEASE, 5)
        await tx.revocations.complete("r-10")
        await tx.authorization_codes.redeem("code-0", at(5))
        await tx.refresh_tokens.rotate(
            "rt-0", refresh(first, "rt-0b", "fam-0", session_id="sid-0"), at(6)
        )
        await tx.refresh_tokens.revoke_for_account(third, at(6))
        await tx.grants.touch(first, "web", at(7))
        await tx.grants.remove(third, "web")
        await tx.session_clients.take_expired(T0 + 2 * DAY, 3)
        await tx.logout_outbox.retry("l-0", 1, at(9), "unreachable")
        await tx.passkeys.rename(first, (await tx.passkeys.for_account(first))[0].id, "Renamed")
        raise Boom


def _event_id(jti: str) -> EventId:
    return EventId(issuer="https://idp.example", jti=jti, expires_at=T0 + DAY)


async def test_a_unit_that_raises_leaves_every_store_exactly_as_it_was(held: Held) -> None:
    before = held.everything()
    with pytest.raises(Boom):
        await _write_everywhere(held)
    after = held.everything()
    for name, rows in before.items():
        assert after[name] == rows, name
    for _, kept in before["passkeys"]:  # and the index by credential
        assert await held.units.passkeys.find_by_credential(kept.credential_id) == kept


async def test_a_committed_unit_stays_when_the_next_one_fails(held: Held) -> None:
    first = held.ids[0]
    async with held.units.begin() as tx:
        await tx.accounts.record_login(first, at(1))
        await tx.sessions.add(session("sid-kept", first))
    committed = held.everything()
    with pytest.raises(Boom):
        async with held.units.begin() as tx:
            await tx.accounts.record_login(first, at(2))
            await tx.accounts.delete(held.ids[1])
            await tx.sessions.purge_expired(T0 + 2 * DAY)
            raise Boom
    assert held.everything() == committed
    account = await held.accounts.get(first)
    assert account is not None and account.last_login_at == at(1)


async def test_writes_of_a_failed_unit_are_seen_inside_it(held: Held) -> None:
    first = held.ids[0]
    with pytest.raises(Boom):
        async with held.units.begin() as tx:
            await tx.accounts.delete(first)
            assert await tx.accounts.get(first) is None
            assert await tx.passkeys.for_account(first) == []
            raise Boom
    assert await held.accounts.get(first) is not None
    assert len(await held.units.passkeys.for_account(first)) == 1
