"""Pending sign-ins (state) in PostgreSQL, shared by every instance."""

from __future__ import annotations

import datetime as dt
from collections.abc import AsyncIterator

from authgate.domain.model import Intent, PendingSignIn
from authgate.domain.secrets import state_lookup

from . import rows
from .housekeeping import DEFAULT_PURGE_INTERVAL, PeriodicPurge, delete_batches, total
from .pool import ConnectionPool


class PostgresStates:
    """:class:`~authgate.ports.state.StateStore` on the adapters' connection pool.

    Rows are keyed by ``(lookup, binding_hash)``: the hash of provider and state, and the hash
    of the browser's binding cookie. ``put`` triggers a purge of expired rows at most once per
    ``purge_interval``.
    """

    def __init__(
        self, pool: ConnectionPool, purge_interval: dt.timedelta = DEFAULT_PURGE_INTERVAL
    ) -> None:
        self._pool = pool
        self._last_now: dt.datetime | None = None
        self.housekeeping = PeriodicPurge("expired sign-in states", self._purge, purge_interval)

    async def put(self, pending: PendingSignIn) -> None:
        created = rows.utc(pending.created_at)
        # The same browser starting the same provider with the same state again replaces its
        # own earlier entry; nobody else's row can have this key.
        await self._pool.execute(
            """
            INSERT INTO sign_in_states (lookup, provider, redirect_uri, intent, code_verifier,
                nonce, binding_hash, created_at, expires_at, return_to, account_id, session_id)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
            ON CONFLICT (lookup, binding_hash) DO UPDATE SET
                provider = EXCLUDED.provider, redirect_uri = EXCLUDED.redirect_uri,
                intent = EXCLUDED.intent, code_verifier = EXCLUDED.code_verifier,
                nonce = EXCLUDED.nonce, created_at = EXCLUDED.created_at,
                expires_at = EXCLUDED.expires_at, return_to = EXCLUDED.return_to,
                account_id = EXCLUDED.account_id, session_id = EXCLUDED.session_id
            """,
            state_lookup(pending.provider, pending.state),
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
            pending.session_id,
        )
        self._last_now = created
        self.housekeeping.trigger()

    async def take(
        self, provider: str, state: str, binding_hash: str | None, now: dt.datetime
    ) -> PendingSignIn | None:
        lookup = state_lookup(provider, state)
        # One statement: of concurrent takes exactly one deletes the row and gets it back.
        if binding_hash is not None:
            row = await self._pool.fetchrow(
                """
                DELETE FROM sign_in_states WHERE lookup = $1 AND binding_hash = $2
                RETURNING provider, redirect_uri, intent, code_verifier, nonce, binding_hash,
                    created_at, expires_at, return_to, account_id, session_id
                """,
                lookup,
                binding_hash,
            )
        else:
            # No binding cookie (admitted by configuration): the newest live entry of any
            # browser; SKIP LOCKED keeps concurrent takes from sharing one row.
            row = await self._pool.fetchrow(
                """
                DELETE FROM sign_in_states WHERE ctid = (
                    SELECT ctid FROM sign_in_states WHERE lookup = $1 AND expires_at > $2
                    ORDER BY created_at DESC LIMIT 1 FOR UPDATE SKIP LOCKED)
                RETURNING provider, redirect_uri, intent, code_verifier, nonce, binding_hash,
                    created_at, expires_at, return_to, account_id, session_id
                """,
                lookup,
                rows.utc(now),
            )
        if row is None or row["expires_at"] <= rows.utc(now):
            return None
        return PendingSignIn(
            state=state,
            provider=row["provider"],
            redirect_uri=row["redirect_uri"],
            intent=Intent(row["intent"]),
            code_verifier=row["code_verifier"],
            nonce=row["nonce"],
            binding_hash=row["binding_hash"],
            created_at=row["created_at"],
            expires_at=row["expires_at"],
            return_to=row["return_to"],
            account_id=row["account_id"],
            session_id=row["session_id"],
        )

    async def purge_expired(self, now: dt.datetime) -> int:
        return await total(self._expired(now))

    def _expired(self, now: dt.datetime) -> AsyncIterator[int]:
        return delete_batches(self._pool, "sign_in_states", now)

    async def _purge(self) -> AsyncIterator[int]:
        # "now" as the service's clock last told us (so a test clock is honoured).
        if self._last_now is not None:
            async for deleted in self._expired(self._last_now):
                yield deleted
