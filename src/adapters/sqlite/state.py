"""Pending sign-ins (state) in SQLite."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any

from authgate.domain.model import Intent, PendingSignIn
from authgate.domain.secrets import state_lookup

from .db import Database, parse_ts, ts, utc
from .housekeeping import DEFAULT_PURGE_INTERVAL, PeriodicPurge, delete_batches


class SqliteStates:
    """:class:`~authgate.ports.state.StateStore` in a SQLite file, keyed by
    ``(lookup, binding_hash)`` (see :mod:`authgate.ports.state`). ``put`` purges expired
    entries at most once per ``purge_interval``."""

    def __init__(self, db: Database, purge_interval: dt.timedelta = DEFAULT_PURGE_INTERVAL) -> None:
        self._db = db
        self.housekeeping = PeriodicPurge("expired sign-in states", purge_interval)

    async def put(self, pending: PendingSignIn) -> None:
        async with self._db.use() as conn:
            # The same browser starting again replaces its own entry; no other row has this key.
            await conn.execute(
                """
                INSERT OR REPLACE INTO sign_in_states (lookup, provider, redirect_uri, intent,
                    code_verifier, nonce, binding_hash, created_at, expires_at, return_to,
                    account_id, session_id)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """,
                (
                    state_lookup(pending.provider, pending.state),
                    pending.provider,
                    pending.redirect_uri,
                    pending.intent.value,
                    pending.code_verifier,
                    pending.nonce,
                    pending.binding_hash,
                    ts(pending.created_at),
                    ts(pending.expires_at),
                    pending.return_to,
                    pending.account_id,
                    pending.session_id,
                ),
            )
        await self.housekeeping.maybe_run(lambda: self.purge_expired(pending.created_at))

    async def take(
        self, provider: str, state: str, binding_hash: str | None, now: dt.datetime
    ) -> PendingSignIn | None:
        lookup = state_lookup(provider, state)
        async with self._db.use() as conn:
            # One statement (and SQLite has one writer): exactly one take gets the row.
            if binding_hash is not None:
                found = await conn.execute_fetchall(
                    "DELETE FROM sign_in_states WHERE lookup = ? AND binding_hash = ? "
                    "RETURNING provider, redirect_uri, intent, code_verifier, nonce, binding_hash, "
                    "created_at, expires_at, return_to, account_id, session_id",
                    (lookup, binding_hash),
                )
            else:  # no binding cookie, admitted by configuration: the newest live entry
                found = await conn.execute_fetchall(
                    """
                    DELETE FROM sign_in_states WHERE rowid = (
                        SELECT rowid FROM sign_in_states WHERE lookup = ? AND expires_at > ?
                        ORDER BY created_at DESC LIMIT 1)
                    RETURNING provider, redirect_uri, intent, code_verifier, nonce, binding_hash,
                    created_at, expires_at, return_to, account_id, session_id
                    """,
                    (lookup, ts(now)),
                )
        rows = list(found)
        if not rows:
            return None
        pending = _pending(state, rows[0])
        return pending if pending.expires_at > utc(now) else None

    async def purge_expired(self, now: dt.datetime) -> int:
        return await delete_batches(self._db, "sign_in_states", now)


def _pending(state: str, r: Sequence[Any]) -> PendingSignIn:
    return PendingSignIn(
        state=state,
        provider=r[0],
        redirect_uri=r[1],
        intent=Intent(r[2]),
        code_verifier=r[3],
        nonce=r[4],
        binding_hash=r[5],
        created_at=parse_ts(r[6]),
        expires_at=parse_ts(r[7]),
        return_to=r[8],
        account_id=r[9],
        session_id=r[10],
    )
