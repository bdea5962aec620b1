"""Pending sign-ins (state) in SQLite."""

from __future__ import annotations

import datetime as dt

from authgate.domain.model import Intent, PendingSignIn
from authgate.ports.state import StateExists

from .db import Database, parse_ts, ts, utc
from .housekeeping import PeriodicPurge

DEFAULT_PURGE_INTERVAL = dt.timedelta(minutes=5)


class SqliteStates:
    """:class:`~authgate.ports.state.StateStore` in a SQLite file. ``put`` purges expired
    entries at most once per ``purge_interval``."""

    def __init__(self, db: Database, purge_interval: dt.timedelta = DEFAULT_PURGE_INTERVAL) -> None:
        self._db = db
        self.housekeeping = PeriodicPurge("expired sign-in states", purge_interval)

    async def put(self, pending: PendingSignIn) -> None:
        created = ts(pending.created_at)
        async with self._db.use() as conn:
            # An expired entry does not hold its state value: it is replaced, as if purged.
            cursor = await conn.execute(
                """
                INSERT INTO sign_in_states (state, provider, redirect_uri, intent,
                    code_verifier, nonce, binding_hash, created_at, expires_at, return_to,
                    account_id)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (state) DO UPDATE SET
                    provider = excluded.provider, redirect_uri = excluded.redirect_uri,
                    intent = excluded.intent, code_verifier = excluded.code_verifier,
                    nonce = excluded.nonce, binding_hash = excluded.binding_hash,
                    created_at = excluded.created_at, expires_at = excluded.expires_at,
                    return_to = excluded.return_to, account_id = excluded.account_id
                WHERE sign_in_states.expires_at <= excluded.created_at
                """,
                (
                    pending.state,
                    pending.provider,
                    pending.redirect_uri,
                    pending.intent.value,
                    pending.code_verifier,
                    pending.nonce,
                    pending.binding_hash,
                    created,
                    ts(pending.expires_at),
                    pending.return_to,
                    pending.account_id,
                ),
            )
            stored = cursor.rowcount == 1
        if not stored:
            raise StateExists(pending.state)
        await self.housekeeping.maybe_run(lambda: self.purge_expired(pending.created_at))

    async def take(self, state: str, now: dt.datetime) -> PendingSignIn | None:
        async with self._db.use() as conn:
            # One statement: of concurrent takes exactly one deletes the row and gets it back.
            rows = list(
                await conn.execute_fetchall(
                    """
                    DELETE FROM sign_in_states WHERE state = ?
                    RETURNING state, provider, redirect_uri, intent, code_verifier, nonce,
                        binding_hash, created_at, expires_at, return_to, account_id
                    """,
                    (state,),
                )
            )
        if not rows:
            return None
        r = rows[0]
        pending = PendingSignIn(
            state=r[0],
            provider=r[1],
            redirect_uri=r[2],
            intent=Intent(r[3]),
            code_verifier=r[4],
            nonce=r[5],
            binding_hash=r[6],
            created_at=parse_ts(r[7]),
            expires_at=parse_ts(r[8]),
            return_to=r[9],
            account_id=r[10],
        )
        return pending if pending.expires_at > utc(now) else None

    async def purge_expired(self, now: dt.datetime) -> int:
        async with self._db.use() as conn:
            cursor = await conn.execute(
                "DELETE FROM sign_in_states WHERE expires_at <= ?", (ts(now),)
            )
            return cursor.rowcount
