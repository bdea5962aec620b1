"""Pending sign-ins (state) in PostgreSQL, shared by every instance."""

from __future__ import annotations

import datetime as dt

import asyncpg

from authgate.domain.model import PendingSignIn
from authgate.ports.state import StateExists

from . import rows
from .housekeeping import PeriodicPurge

DEFAULT_PURGE_INTERVAL = dt.timedelta(minutes=5)


class PostgresStates:
    """:class:`~authgate.ports.state.StateStore` on an asyncpg pool.

    ``put`` triggers a purge of expired rows at most once per ``purge_interval``.
    """

    def __init__(
        self, pool: asyncpg.Pool, purge_interval: dt.timedelta = DEFAULT_PURGE_INTERVAL
    ) -> None:
        self._pool = pool
        self._last_now: dt.datetime | None = None
        self.housekeeping = PeriodicPurge("expired sign-in states", self._purge, purge_interval)

    async def put(self, pending: PendingSignIn) -> None:
        created = rows.utc(pending.created_at)
        # An expired entry does not hold its state value: it is replaced, as if purged.
        stored = await self._pool.fetchval(
            """
            INSERT INTO sign_in_states AS s (state, provider, redirect_uri, intent,
                code_verifier, nonce, binding_hash, created_at, expires_at, return_to,
                account_id)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
            ON CONFLICT (state) DO UPDATE SET
                provider = EXCLUDED.provider, redirect_uri = EXCLUDED.redirect_uri,
                intent = EXCLUDED.intent, code_verifier = EXCLUDED.code_verifier,
                nonce = EXCLUDED.nonce, binding_hash = EXCLUDED.binding_hash,
                created_at = EXCLUDED.created_at, expires_at = EXCLUDED.expires_at,
                return_to = EXCLUDED.return_to, account_id = EXCLUDED.account_id
            WHERE s.expires_at <= EXCLUDED.created_at
            RETURNING true
            """,
            pending.state,
            pending.provider,
            pending.redirect_uri,
            pending.intent.value,
            pending.code_verifier,
            pending.nonce,
            pending.binding_hash,
            created,
            rows.utc(pending.expires_at),
            pending.return_to,
            pending.account_id,
        )
        if not stored:
            raise StateExists(pending.state)
        self._last_now = created
        self.housekeeping.trigger()

    async def take(self, state: str, now: dt.datetime) -> PendingSignIn | None:
        # One statement: of concurrent takes exactly one deletes the row and gets it back.
        # An expired row is deleted too, and not returned.
        row = await self._pool.fetchrow(
            """
            DELETE FROM sign_in_states WHERE state = $1
            RETURNING state, provider, redirect_uri, intent, code_verifier, nonce,
                binding_hash, created_at, expires_at, return_to, account_id
            """,
            state,
        )
        if row is None or row["expires_at"] <= rows.utc(now):
            return None
        return rows.pending_sign_in(row)

    async def purge_expired(self, now: dt.datetime) -> int:
        status = await self._pool.execute(
            "DELETE FROM sign_in_states WHERE expires_at <= $1", rows.utc(now)
        )
        return rows.affected(status)

    async def _purge(self) -> int:
        # "now" as the service's clock last told us (so a test clock is honoured).
        return await self.purge_expired(self._last_now) if self._last_now else 0
