"""Housekeeping on the real PostgreSQL keeps up with a backlog larger than one statement can
delete within the statement timeout.

The store under test runs every statement under a tight timeout (asyncpg's
``command_timeout``, as the service's ``database.timeout_seconds``), and each table gets an
expired backlog that a single ``DELETE`` cannot remove within it: each test first shows that
statement failing on the same rows, then the purge removing them all in batches, leaving the
live rows, with one log line for the run. Seeding a backlog takes seconds: the sign-in states
(the shared mechanism) run in every run, the other tables' wiring with the `slow` tests.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import AsyncIterator, Awaitable

import asyncpg
import pytest

from authgate.adapters.postgres import PostgresStore
from authgate.adapters.postgres.housekeeping import PURGE_BATCH
from authgate.adapters.postgres.pool import Pool
from authgate.domain.model import EventId, SessionRecord
from tests.support.records import T0, event, pending

TIMEOUT = 0.1  # seconds: each statement of the store under test
BACKLOG = 150_000  # expired rows: a single DELETE of them takes several times TIMEOUT
LATER = T0 + dt.timedelta(days=365)  # "now" for the purges: the backlog expired before


@pytest.fixture
async def admin(clean_postgres_url: str) -> AsyncIterator[asyncpg.Connection]:
    """A connection without the tight timeout, to seed and count."""
    conn = await asyncpg.connect(clean_postgres_url)
    try:
        yield conn
    finally:
        await conn.close()


@pytest.fixture
async def tight(clean_postgres_url: str) -> AsyncIterator[PostgresStore]:
    """The adapters on a pool whose every statement times out after ``TIMEOUT``; purges run
    at every trigger."""

    def connect() -> Awaitable[asyncpg.Connection]:
        return asyncpg.connect(clean_postgres_url, timeout=10, command_timeout=TIMEOUT)

    store = PostgresStore(Pool(connect, min_size=0, max_size=2), purge_interval=dt.timedelta(0))
    try:
        yield store
    finally:
        await store.close()


async def _seed(admin: asyncpg.Connection, insert: str) -> None:
    """``insert`` (``$1``: a time before ``LATER``, ``$2``: ``BACKLOG``), then fresh
    statistics, as autovacuum would give a table that large."""
    await admin.execute(insert, T0, BACKLOG)
    await admin.execute("ANALYZE")


async def _single_delete_times_out(store: PostgresStore, statement: str) -> None:
    """What the purge was: one DELETE of the whole backlog. It fails under the timeout (and,
    cancelled, deletes nothing), so the backlog is larger than one statement can purge."""
    async with store.pool.acquire() as conn:
        with pytest.raises(TimeoutError):
            await conn.execute(statement, LATER)


async def _count(admin: asyncpg.Connection, table: str) -> int:
    return int(await admin.fetchval(f"SELECT count(*) FROM {table}"))


def _one_purge_line(caplog: pytest.LogCaptureFixture, what: str) -> str:
    lines = [r.getMessage() for r in caplog.records if r.name == "authgate.storage"]
    assert not [line for line in lines if "failed" in line], lines
    [line] = [line for line in lines if what in line]
    return line


async def test_a_backlog_of_expired_sign_ins_is_purged_in_batches(
    tight: PostgresStore, admin: asyncpg.Connection, caplog: pytest.LogCaptureFixture
) -> None:
    await _seed(
        admin,
        """
        INSERT INTO sign_in_states (lookup, binding_hash, provider, redirect_uri, intent,
            created_at, expires_at)
        SELECT 'old-' || i, 'b', 'google', 'https://cb.example', 'login', $1, $1
        FROM generate_series(1, $2) AS i
        """,
    )
    await _single_delete_times_out(tight, "DELETE FROM sign_in_states WHERE expires_at <= $1")
    assert await _count(admin, "sign_in_states") == BACKLOG

    caplog.set_level(logging.INFO, "authgate.storage")
    await tight.states.put(pending("live", created=LATER))  # triggers the purge
    await tight.housekeeping_idle()
    assert await _count(admin, "sign_in_states") == 1
    batches = BACKLOG // PURGE_BATCH + 1
    assert _one_purge_line(caplog, "sign-in states").startswith(
        f"purged {BACKLOG} expired sign-in states in {batches} batches"
    )


@pytest.mark.slow
async def test_a_backlog_of_expired_sessions_is_purged_in_batches(
    tight: PostgresStore, admin: asyncpg.Connection, caplog: pytest.LogCaptureFixture
) -> None:
    await _seed(
        admin,
        """
        INSERT INTO sessions (id, account_id, provider, created_at, expires_at,
            absolute_expires_at, auth_time)
        SELECT 'old-' || i, 'acct-' || i % 1000, 'google', $1, $1, $1, $1
        FROM generate_series(1, $2) AS i
        """,
    )
    await _single_delete_times_out(tight, "DELETE FROM sessions WHERE expires_at <= $1")

    caplog.set_level(logging.INFO, "authgate.storage")
    hour = dt.timedelta(hours=1)
    live = SessionRecord("live", "acct-1", "google", LATER, LATER + hour, LATER + hour, LATER)
    await tight.sessions.add(live)  # triggers the purge
    await tight.housekeeping_idle()
    assert await _count(admin, "sessions") == 1
    assert f"purged {BACKLOG} expired sessions" in _one_purge_line(caplog, "sessions")


@pytest.mark.slow
async def test_a_backlog_of_old_sign_in_events_is_purged_in_batches(
    tight: PostgresStore, admin: asyncpg.Connection, caplog: pytest.LogCaptureFixture
) -> None:
    await _seed(
        admin,
        """
        INSERT INTO sign_in_events (at, provider, outcome, account_id)
        SELECT $1, 'google', 'signed_in', 'acct-' || i % 1000 FROM generate_series(1, $2) AS i
        """,
    )
    await _single_delete_times_out(tight, "DELETE FROM sign_in_events WHERE at < $1")

    caplog.set_level(logging.INFO, "authgate.storage")
    # An event past the retention (90 days) after the backlog: its time sets the cutoff.
    await tight.events.record(event((LATER - T0).total_seconds()))
    await tight.housekeeping_idle()
    assert await _count(admin, "sign_in_events") == 1
    assert f"purged {BACKLOG} old sign-in events" in _one_purge_line(caplog, "events")


@pytest.mark.slow
async def test_a_backlog_of_expired_event_ids_shrinks_by_a_batch_at_each_event(
    tight: PostgresStore, admin: asyncpg.Connection
) -> None:
    """Seen event ids are dropped inside the event's own transaction: each new event removes
    one bounded batch, so it succeeds under the timeout and the backlog shrinks."""
    await _seed(
        admin,
        """
        INSERT INTO provider_event_ids (issuer, jti, seen_at, expires_at)
        SELECT 'https://issuer.example', 'old-' || i, $1, $1 FROM generate_series(1, $2) AS i
        """,
    )
    await _single_delete_times_out(tight, "DELETE FROM provider_event_ids WHERE expires_at <= $1")

    async def first_sight(jti: str) -> bool:
        async with tight.units.begin() as tx:
            seen = EventId("https://issuer.example", jti, LATER + dt.timedelta(hours=1))
            return await tx.seen_events.first_sight(seen, LATER)

    for n in range(1, 4):
        assert await first_sight(f"new-{n}")
        assert await _count(admin, "provider_event_ids") == BACKLOG - n * PURGE_BATCH + n
    assert not await first_sight("new-1")  # still remembered: only expired ids go
