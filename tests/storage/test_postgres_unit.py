"""PostgreSQL's unit of work sends few statements and keeps all-or-nothing.

A sign-in's unit reads the account, then writes the last sign-in time, the session's record and
the audit event. The adapter sends those writes together as one statement and begins a
transaction only when a unit needs one (adapters/postgres/unit.py). These tests count the
statements the server receives (asyncpg's query logger on the pool's only connection) and
check that a failure anywhere still leaves nothing of the unit behind.
"""

from __future__ import annotations

import asyncio

import asyncpg
import pytest

from authgate.adapters.postgres import PostgresStore, open_postgres
from authgate.domain.model import Outcome, SessionRecord
from authgate.ports.accounts import IdentityRace
from authgate.ports.openid import Reused
from authgate.ports.passkeys import PasskeyUseNotRecorded
from tests.contract.test_passkeys import passkey
from tests.support.oauth_records import family, grant, refresh
from tests.support.records import T0, at, event, verified


def session(sid: str, account_id: str) -> SessionRecord:
    return SessionRecord(
        id=sid,
        account_id=account_id,
        provider="google",
        created_at=T0,
        expires_at=at(3600),
        absolute_expires_at=at(86400),
        auth_time=T0,
        client_address="127.0.0.1",
        user_agent="tests",
    )


async def test_a_login_is_two_statements_without_begin_or_commit(
    pg: PostgresStore, sent: list[str]
) -> None:
    account, _ = await pg.accounts.create_with_identity(verified(subject="known"), T0)
    await asyncio.sleep(0)  # asyncpg calls query loggers soon after a statement, not in it
    sent.clear()
    async with pg.units.begin() as tx:
        found = await tx.accounts.find_by_identity(verified(subject="known").identity)
        assert found is not None
        await tx.accounts.record_login(found.id, at(5))
        await tx.sessions.add(session("s-1", found.id))
        await tx.events.record(event(5, Outcome.SIGNED_IN, account_id=found.id))
    await asyncio.sleep(0)  # the last statement's logger call
    assert len(sent) == 2, sent
    assert sent[0].startswith("SELECT")
    assert sent[1].startswith("WITH w0 AS (UPDATE accounts"), sent[1]
    assert not any(s.startswith(("BEGIN", "COMMIT", "SAVEPOINT")) for s in sent)
    stored = await pg.accounts.get(account.id)
    assert stored is not None and stored.last_login_at == at(5)
    assert await pg.sessions.get("s-1") is not None
    assert [e.account_id for e in await pg.events.recent()] == [account.id]


async def test_a_passkey_sign_in_is_two_statements_without_begin_or_commit(
    pg: PostgresStore, sent: list[str]
) -> None:
    # What a passkey sign-in's unit does: the passkey with whether its account has a disabled
    # identity, read in one statement; then the counter's conditional update, whose outcome
    # decides the sign-in, waits with the other writes: one statement that fails unless the
    # update changed its row (the next test).
    account, _ = await pg.accounts.create_with_identity(verified(subject="known"), T0)
    key = passkey(account.id)
    await pg.passkeys.add(key)
    await asyncio.sleep(0)
    sent.clear()
    async with pg.units.begin() as tx:
        found = await tx.passkeys.find_for_sign_in(key.credential_id)
        assert found == (key, False)
        assert await tx.passkeys.record_use(key.id, 7, True, at(5))
        await tx.accounts.record_login(key.account_id, at(5))
        await tx.sessions.add(session("s-1", key.account_id))
        await tx.events.record(event(5, Outcome.SIGNED_IN, account_id=key.account_id))
    await asyncio.sleep(0)
    kinds = [s.split()[0].rstrip(";") for s in sent]
    assert kinds == ["SELECT", "WITH"], sent
    assert sent[1].startswith("WITH w0 AS (UPDATE passkeys"), sent[1]
    assert sent[1].endswith("SELECT 1 / (SELECT count(*) FROM w0)"), sent[1]
    used = await pg.passkeys.get(account.id, key.id)
    assert used is not None and used.sign_count == 7 and used.last_used_at == at(5)
    assert await pg.sessions.get("s-1") is not None
    stored = await pg.accounts.get(account.id)
    assert stored is not None and stored.last_login_at == at(5)


@pytest.mark.parametrize("gone", [False, True], ids=["counter behind", "passkey removed"])
async def test_a_passkey_use_not_recorded_fails_the_unit_and_writes_nothing(
    pg: PostgresStore, clean_postgres_url: str, asyncpg_pool: bool, gone: bool
) -> None:
    account, _ = await pg.accounts.create_with_identity(verified(subject="known"), T0)
    key = passkey(account.id, sign_count=7)
    await pg.passkeys.add(key)
    other = await open_postgres(clean_postgres_url, 1, 1, 5.0, asyncpg_pool=asyncpg_pool)
    try:
        with pytest.raises(PasskeyUseNotRecorded):
            async with pg.units.begin() as tx:
                assert await tx.passkeys.find_for_sign_in(key.credential_id) == (key, False)
                if gone:  # removed by another instance between the read and the unit's writes
                    await other.passkeys.add(passkey(account.id, 2))
                    assert await other.passkeys.delete(account.id, key.id)
                assert await tx.passkeys.record_use(key.id, 8 if gone else 7, True, at(5))
                await tx.accounts.record_login(key.account_id, at(5))
                await tx.sessions.add(session("s-1", key.account_id))
                await tx.events.record(event(5, Outcome.SIGNED_IN, account_id=key.account_id))
    finally:
        await other.close()
    assert await pg.sessions.get("s-1") is None
    assert await pg.events.recent() == []
    stored = await pg.accounts.get(account.id)
    assert stored is not None and stored.last_login_at is None
    assert await pg.passkeys.get(account.id, key.id) == (None if gone else key)


async def test_a_passkey_use_waits_for_the_transaction_a_later_statement_opens(
    pg: PostgresStore, sent: list[str]
) -> None:
    # A locking read after the use (a step-up's session) begins the transaction: the waiting
    # writes go first, in it, and a use not recorded fails the unit there.
    account, _ = await pg.accounts.create_with_identity(verified(subject="known"), T0)
    key = passkey(account.id, sign_count=7)
    await pg.passkeys.add(key)
    await pg.sessions.add(session("s-0", account.id))
    with pytest.raises(PasskeyUseNotRecorded):
        async with pg.units.begin() as tx:
            assert await tx.passkeys.record_use(key.id, 7, True, at(5))
            await tx.accounts.record_login(key.account_id, at(5))
            await tx.sessions.get("s-0", for_change=True)
    stored = await pg.accounts.get(account.id)
    assert stored is not None and stored.last_login_at is None
    async with pg.units.begin() as tx:
        assert await tx.passkeys.record_use(key.id, 8, True, at(6))
        assert await tx.sessions.get("s-0", for_change=True) is not None
    used = await pg.passkeys.get(account.id, key.id)
    assert used is not None and used.sign_count == 8


async def test_a_registration_is_two_statements_without_begin_or_commit(
    pg: PostgresStore, sent: list[str]
) -> None:
    # The new account and its identity wait with the other writes: one combined statement.
    async with pg.units.begin() as tx:
        assert await tx.accounts.find_with_identity(verified(subject="new").identity) is None
        account, created = await tx.accounts.create_with_identity(verified(subject="new"), T0)
        await tx.accounts.record_login(account.id, at(1))
        await tx.sessions.add(session("s-new", account.id))
        await tx.events.record(event(0, Outcome.REGISTERED, account_id=account.id))
    assert created
    await asyncio.sleep(0)  # the last statement's logger call
    kinds = [s.split()[0] for s in sent]
    assert kinds == ["SELECT", "WITH"], sent
    assert sent[1].startswith("WITH w0 AS (INSERT INTO accounts"), sent[1]
    assert "UPDATE accounts" not in sent[1]  # the insert carries the last sign-in time
    assert [i.identity.subject for i in await pg.accounts.list_identities(account.id)] == ["new"]
    stored = await pg.accounts.get(account.id)
    assert stored is not None and stored.last_login_at == at(1)
    assert await pg.sessions.get("s-new") is not None


async def test_a_registration_that_lost_the_race_writes_nothing_and_says_so(
    pg: PostgresStore, clean_postgres_url: str, asyncpg_pool: bool
) -> None:
    # Another instance created the identity between this unit's look-up and its writes.
    other = await open_postgres(clean_postgres_url, 1, 1, 5.0, asyncpg_pool=asyncpg_pool)
    with pytest.raises(IdentityRace):
        async with pg.units.begin() as tx:
            assert await tx.accounts.find_with_identity(verified(subject="race").identity) is None
            winner, _ = await other.accounts.create_with_identity(verified(subject="race"), T0)
            account, created = await tx.accounts.create_with_identity(verified(subject="race"), T0)
            await tx.accounts.record_login(account.id, at(1))
            await tx.sessions.add(session("s-race", account.id))
            await tx.events.record(event(1, Outcome.REGISTERED, account_id=account.id))
    assert created and account.id != winner.id
    assert await pg.accounts.get(account.id) is None
    assert await pg.sessions.get("s-race") is None
    assert await pg.events.recent() == []
    # the connection went back to the pool clean: the next unit works
    async with pg.units.begin() as tx:
        found = await tx.accounts.find_with_identity(verified(subject="race").identity)
    assert found is not None and found[1].id == winner.id
    await other.close()


async def test_a_write_that_fails_at_the_end_takes_the_others_with_it(
    pg: PostgresStore,
) -> None:
    account, _ = await pg.accounts.create_with_identity(verified(subject="u"), T0)
    await pg.sessions.add(session("taken", account.id))
    with pytest.raises(asyncpg.UniqueViolationError):
        async with pg.units.begin() as tx:
            await tx.accounts.record_login(account.id, at(9))
            await tx.events.record(event(9, Outcome.SIGNED_IN, account_id=account.id))
            await tx.sessions.add(session("taken", account.id))  # its id is taken
    stored = await pg.accounts.get(account.id)
    assert stored is not None and stored.last_login_at is None
    assert await pg.events.recent() == []


async def test_a_registration_whose_last_write_fails_leaves_no_account(
    pg: PostgresStore,
) -> None:
    other, _ = await pg.accounts.create_with_identity(verified(subject="other"), T0)
    await pg.sessions.add(session("taken", other.id))
    with pytest.raises(asyncpg.UniqueViolationError):
        async with pg.units.begin() as tx:
            account, _ = await tx.accounts.create_with_identity(verified(subject="new"), T0)
            await tx.accounts.record_login(account.id, T0)
            await tx.sessions.add(session("taken", account.id))  # fails at the commit
    assert await pg.accounts.find_by_identity(verified(subject="new").identity) is None
    assert await pg.accounts.get(account.id) is None
    # the connection went back to the pool clean: the next unit works
    async with pg.units.begin() as tx:
        again, created = await tx.accounts.create_with_identity(verified(subject="new"), T0)
    assert created and await pg.accounts.get(again.id) is not None


async def test_a_failure_after_a_savepoint_rolls_back_every_write_of_the_unit(
    pg: PostgresStore,
) -> None:
    account, _ = await pg.accounts.create_with_identity(verified(subject="u"), T0)
    await pg.sessions.add(session("taken", account.id))
    with pytest.raises(asyncpg.UniqueViolationError):
        async with pg.units.begin() as tx:
            await tx.accounts.record_login(account.id, at(9))
            await tx.accounts.link_identity(account.id, verified("facebook", "fb-1"), at(9))
            await tx.sessions.add(session("taken", account.id))
    stored = await pg.accounts.get(account.id)
    assert stored is not None and stored.last_login_at is None
    assert len(await pg.accounts.list_identities(account.id)) == 1


async def test_a_statement_after_waiting_writes_sees_them(pg: PostgresStore) -> None:
    account, _ = await pg.accounts.create_with_identity(verified(subject="u"), T0)
    async with pg.units.begin() as tx:
        await tx.sessions.add(session("s-2", account.id))
        await tx.accounts.record_login(account.id, at(1))
        found = await tx.sessions.get("s-2")
        assert found is not None and found.account_id == account.id
        again = await tx.accounts.get(account.id)
        assert again is not None and again.last_login_at == at(1)
        # the same statement twice in one unit: in the order written, the last one stays
        await tx.accounts.record_login(account.id, at(2))
        await tx.accounts.record_login(account.id, at(3))
    stored = await pg.accounts.get(account.id)
    assert stored is not None and stored.last_login_at == at(3)


async def test_a_unit_that_raises_before_its_end_writes_nothing(pg: PostgresStore) -> None:
    account, _ = await pg.accounts.create_with_identity(verified(subject="u"), T0)

    class Boom(Exception):
        pass

    with pytest.raises(Boom):
        async with pg.units.begin() as tx:
            await tx.accounts.record_login(account.id, at(1))
            await tx.events.record(event(1, Outcome.SIGNED_IN, account_id=account.id))
            raise Boom
    stored = await pg.accounts.get(account.id)
    assert stored is not None and stored.last_login_at is None
    assert await pg.events.recent() == []


async def test_a_refresh_is_two_statements_without_begin_or_commit(
    pg: PostgresStore, sent: list[str]
) -> None:
    # What the refresh_token grant's unit does: the presented token, its family and its
    # session's liveness in one read; then its replacement (the token marked replaced, the
    # family's expiry, the new token) waits with the grant's touch: one statement that fails
    # unless the marking changed the row (the next test). It was six statements, BEGIN and
    # COMMIT included: the token's read, the session's, the rotation's statement and the
    # touch's each a round trip of their own.
    account, _ = await pg.accounts.create_with_identity(verified(subject="known"), T0)
    await pg.sessions.add(session("sid-1", account.id))
    await pg.refresh_tokens.start_family(family(account.id), refresh(account.id, "rt-1"))
    await pg.grants.put(grant(account.id))
    # The purges those writes started run in the background: over before the count.
    await pg.refresh_tokens.housekeeping.wait()
    await pg.sessions.housekeeping.wait()
    await asyncio.sleep(0)
    sent.clear()
    new = refresh(account.id, "rt-2", created_at=at(5))
    async with pg.units.begin() as tx:
        found = await tx.refresh_tokens.presented("rt-1", at(5))
        assert found is not None and found[1]
        assert await tx.refresh_tokens.replace("rt-1", new, at(5), RuntimeError("stale"))
        await tx.grants.touch(account.id, "web", at(5))
    await asyncio.sleep(0)
    kinds = [s.split()[0].rstrip(";") for s in sent]
    assert kinds == ["SELECT", "WITH"], sent
    assert sent[1].startswith("WITH w0 AS (UPDATE oauth_refresh_tokens"), sent[1]
    assert sent[1].endswith("SELECT 1 / (SELECT count(*) FROM w0)"), sent[1]
    old = await pg.refresh_tokens.get("rt-1")
    assert old is not None and old.replaced_at == at(5)
    assert await pg.refresh_tokens.get("rt-2") == new
    touched = await pg.grants.get(account.id, "web")
    assert touched is not None and touched.last_used_at == at(5)


async def test_a_refresh_of_a_replaced_token_fails_the_unit_and_writes_nothing(
    pg: PostgresStore,
) -> None:
    account, _ = await pg.accounts.create_with_identity(verified(subject="known"), T0)
    await pg.refresh_tokens.start_family(family(account.id), refresh(account.id, "rt-1"))
    await pg.grants.put(grant(account.id))
    await pg.refresh_tokens.rotate("rt-1", refresh(account.id, "rt-2"), at(1))

    class Stale(Exception):
        pass

    with pytest.raises(Stale):
        async with pg.units.begin() as tx:
            assert await tx.refresh_tokens.replace(
                "rt-1", refresh(account.id, "rt-x"), at(5), Stale()
            )
            await tx.grants.touch(account.id, "web", at(5))
    assert await pg.refresh_tokens.get("rt-x") is None
    untouched = await pg.grants.get(account.id, "web")
    assert untouched is not None and untouched.last_used_at is None
    assert await pg.refresh_tokens.is_family_live("fam-1", at(5))  # rotate revokes, not this


async def test_a_replayed_refresh_token_still_revokes_its_family_in_seven_statements(
    pg: PostgresStore, sent: list[str]
) -> None:
    # The grant's rare path: the combined write fails (the token was replaced already), then
    # rotate, in a unit of its own, tells the reuse and revokes the family: seven statements,
    # as many as before the common path was folded.
    account, _ = await pg.accounts.create_with_identity(verified(subject="known"), T0)
    await pg.sessions.add(session("sid-1", account.id))
    await pg.refresh_tokens.start_family(family(account.id), refresh(account.id, "rt-1"))
    await pg.grants.put(grant(account.id))
    await pg.refresh_tokens.rotate("rt-1", refresh(account.id, "rt-2"), at(1))
    await pg.refresh_tokens.housekeeping.wait()
    await pg.sessions.housekeeping.wait()
    await asyncio.sleep(0)
    sent.clear()

    class Stale(Exception):
        pass

    new = refresh(account.id, "rt-x", created_at=at(5))
    with pytest.raises(Stale):
        async with pg.units.begin() as tx:
            assert await tx.refresh_tokens.presented("rt-1", at(5)) is not None
            assert await tx.refresh_tokens.replace("rt-1", new, at(5), Stale())
            await tx.grants.touch(account.id, "web", at(5))
    async with pg.units.begin() as tx:
        assert isinstance(await tx.refresh_tokens.rotate("rt-1", new, at(5)), Reused)
    await asyncio.sleep(0)
    kinds = [s.split()[0].rstrip(";") for s in sent]
    assert kinds == ["SELECT", "WITH", "BEGIN", "WITH", "SELECT", "UPDATE", "COMMIT"], sent
    assert not await pg.refresh_tokens.is_family_live("fam-1", at(6))
