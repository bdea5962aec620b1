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
from collections.abc import AsyncIterator, Awaitable, Iterator

import asyncpg
import pytest

from authgate.adapters.postgres import PostgresStore
from authgate.adapters.postgres.pool import ConnectionPool, Pool
from authgate.adapters.sql.housekeeping import PURGE_BATCH
from authgate.domain.model import EventId, SessionRecord
from tests.support.records import T0, event, pending

TIMEOUT = 1.0  # seconds: each statement of the store under test
BACKLOG = 150_000  # expired rows: a single DELETE of them takes several times TIMEOUT
# What a deleted row costs, at least: a statement trigger on the table under test sleeps this
# long per row its statement deleted, so that the single DELETE of the backlog (3 s) outlasts
# TIMEOUT on any machine, however fast, while a batch (20 ms) stays far within it on a busy
# one. The real work of a DELETE comes on top of both.
SLEEP_PER_ROW = 0.00002
LATER = T0 + dt.timedelta(days=365)  # "now" for the purges: the backlog expired before


@pytest.fixture
async def admin(clean_postgres_url: str) -> AsyncIterator[asyncpg.Connection]:
    """A connection without the tight timeout, to seed and count."""
    conn = await asyncpg.connect(clean_postgres_url)
    try:
        yield conn
    finally:
        # the slow-delete triggers go with their function: the database is shared by the run
        await conn.execute("DROP FUNCTION IF EXISTS test_slow_delete() CASCADE")
        await conn.close()


async def _send_nothing(_conn: asyncpg.Connection) -> None:
    """asyncpg's pool's reset without a statement, as the adapters' ``open_asyncpg_pool``."""


@pytest.fixture
async def tight(clean_postgres_url: str, asyncpg_pool: bool) -> AsyncIterator[PostgresStore]:
    """The adapters on a pool (ours, or asyncpg's) whose every statement times out after
    ``TIMEOUT``; purges run at every trigger."""
    pool: ConnectionPool
    if asyncpg_pool:
        pool = await asyncpg.create_pool(
            clean_postgres_url,
            min_size=0,
            max_size=2,
            reset=_send_nothing,
            timeout=10,
            command_timeout=TIMEOUT,
        )
    else:

        def connect() -> Awaitable[asyncpg.Connection]:
            return asyncpg.connect(clean_postgres_url, timeout=10, command_timeout=TIMEOUT)

        pool = Pool(connect, min_size=0, max_size=2)
    store = PostgresStore(pool, purge_interval=dt.timedelta(0))
    try:
        yield store
    finally:
        await store.close()


async def _seed(admin: asyncpg.Connection, insert: str) -> None:
    """``insert`` (``$1``: a time before ``LATER``, ``$2``: ``BACKLOG``), then fresh
    statistics, as autovacuum would give a table that large, and the table's deletes made to
    cost at least ``SLEEP_PER_ROW`` a row."""
    await admin.execute(insert, T0, BACKLOG)
    await admin.execute("ANALYZE")
    table = insert.split("INSERT INTO", 1)[1].split()[0]
    await admin.execute(
        f"""
        CREATE OR REPLACE FUNCTION test_slow_delete() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            PERFORM pg_sleep((SELECT count(*) FROM gone) * {SLEEP_PER_ROW});
            RETURN NULL;
        END $$;
        CREATE TRIGGER test_slow_delete AFTER DELETE ON {table}
            REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION test_slow_delete();
        """
    )


async def _single_delete_times_out(store: PostgresStore, statement: str) -> None:
    """What the purge was: one DELETE of the whole backlog. It fails under the timeout (and,
    cancelled, deletes nothing), so the backlog is larger than one statement can purge."""
    async with store.pool.acquire() as conn:
        with pytest.raises(TimeoutError):
            await conn.execute(statement, LATER)


async def _count(admin: asyncpg.Connection, table: str) -> int:
    return int(await admin.fetchval(f"SELECT count(*) FROM {table}"))


class _Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


@pytest.fixture
def storage_log() -> Iterator[list[str]]:
    """The lines of ``authgate.storage``, read by a handler on that logger itself: what other
    tests left of the logging configuration (a library's dictConfig that disabled existing
    loggers, a level) must not hide them."""
    logger = logging.getLogger("authgate.storage")
    handler, saved = _Lines(), (logger.level, logger.disabled)
    logger.setLevel(logging.INFO)
    logger.disabled = False
    logger.addHandler(handler)
    try:
        yield handler.messages
    finally:
        logger.removeHandler(handler)
        logger.setLevel(saved[0])
        logger.disabled = saved[1]


def _one_purge_line(lines: list[str], what: str) -> str:
    assert not [line for line in lines if "failed" in line], lines
    [line] = [line for line in lines if what in line]
    return line


async def test_a_backlog_of_expired_sign_ins_is_purged_in_batches(
    tight: PostgresStore, admin: asyncpg.Connection, storage_log: list[str]
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

    await tight.states.put(pending("live", created=LATER))  # triggers the purge
    await tight.housekeeping_idle()
    assert await _count(admin, "sign_in_states") == 1
    batches = BACKLOG // PURGE_BATCH + 1
    assert _one_purge_line(storage_log, "sign-in states").startswith(
        f"purged {BACKLOG} expired sign-in states in {batches} batches"
    )


@pytest.mark.slow
async def test_a_backlog_of_expired_sessions_is_purged_in_batches(
    tight: PostgresStore, admin: asyncpg.Connection, storage_log: list[str]
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

    hour = dt.timedelta(hours=1)
    live = SessionRecord("live", "acct-1", "google", LATER, LATER + hour, LATER + hour, LATER)
    await tight.sessions.add(live)  # triggers the purge
    await tight.housekeeping_idle()
    assert await _count(admin, "sessions") == 1
    assert f"purged {BACKLOG} expired sessions" in _one_purge_line(storage_log, "sessions")


@pytest.mark.slow
async def test_a_backlog_of_old_sign_in_events_is_purged_in_batches(
    tight: PostgresStore, admin: asyncpg.Connection, storage_log: list[str]
) -> None:
    await _seed(
        admin,
        """
        INSERT INTO sign_in_events (at, provider, outcome, account_id)
        SELECT $1, 'google', 'signed_in', 'acct-' || i % 1000 FROM generate_series(1, $2) AS i
        """,
    )
    await _single_delete_times_out(tight, "DELETE FROM sign_in_events WHERE at < $1")

    # An event past the retention (90 days) after the backlog: its time sets the cutoff.
    await tight.events.record(event((LATER - T0).total_seconds()))
    await tight.housekeeping_idle()
    assert await _count(admin, "sign_in_events") == 1
    assert f"purged {BACKLOG} old sign-in events" in _one_purge_line(storage_log, "events")


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
