"""The outboxes (back-channel logouts, provider token revocations) and the sealed provider
tokens: one table each, whatever its rows hold."""

from __future__ import annotations

import datetime as dt
from typing import Any, ClassVar, Generic

from authgate.domain.model import (
    PendingRevocation,
    ProviderIdentity,
    SealedToken,
    StoredProviderToken,
)
from authgate.domain.openid.logout import PendingLogout
from authgate.ports.outbox import P

from .engine import Row, insert
from .housekeeping import Repository

_SCHEDULE = ("created_at", "next_attempt_at", "attempts")
"""An outbox row's last columns: when it was made, when it is due, the attempts made."""


class SqlOutbox(Repository, Generic[P]):
    """:class:`~authgate.ports.outbox.Outbox` in a table with the columns ``_columns`` (``id``
    first) and ``leased_until`` and ``last_error``; in a unit of work ``add`` waits to be sent
    with the unit's other writes; a claim is one statement (:meth:`~.engine.Dialect.claim`)."""

    _table: ClassVar[str]
    _columns: ClassVar[tuple[str, ...]]

    def _values(self, pending: P) -> tuple[Any, ...]:
        """The row's values in the order of ``_columns`` (:data:`_SCHEDULE` last)."""
        raise NotImplementedError

    def _schedule(self, pending: P) -> tuple[object, object, int]:
        time = self._sql.time
        return time(pending.created_at), time(pending.next_attempt_at), pending.attempts

    def _read_schedule(self, row: Row) -> tuple[dt.datetime, dt.datetime, int]:
        read = self._sql.read_time
        return read(row[-3]), read(row[-2]), int(row[-1])

    def _pending(self, row: Row) -> P:
        raise NotImplementedError

    async def add(self, pending: P) -> None:
        await self._db.write(insert(self._table, ", ".join(self._columns)), *self._values(pending))

    async def due(self, now: dt.datetime) -> bool:
        found = await self._db.fetchrow(
            f"SELECT 1 FROM {self._table} WHERE next_attempt_at <= $1 "  # noqa: S608
            "AND (leased_until IS NULL OR leased_until <= $1) LIMIT 1",
            self._sql.time(now),
        )
        return found is not None

    async def claim(self, now: dt.datetime, lease: dt.timedelta, limit: int) -> list[P]:
        time = self._sql.time
        found = await self._db.fetch(
            self._sql.claim(self._table, self._columns), time(now), time(now + lease), limit
        )
        return sorted((self._pending(r) for r in found), key=lambda p: (p.next_attempt_at, p.id))

    async def complete(self, pending_id: str) -> None:
        await self._db.execute(f"DELETE FROM {self._table} WHERE id = $1", pending_id)  # noqa: S608

    async def retry(
        self, pending_id: str, attempts: int, next_attempt_at: dt.datetime, error: str
    ) -> None:
        await self._db.execute(
            f"UPDATE {self._table} SET attempts = $1, next_attempt_at = $2, "  # noqa: S608
            "leased_until = NULL, last_error = $3 WHERE id = $4",
            attempts,
            self._sql.time(next_attempt_at),
            error,
            pending_id,
        )

    async def pending(self) -> list[P]:
        found = await self._db.fetch(
            f"SELECT {', '.join(self._columns)} FROM {self._table} "  # noqa: S608
            "ORDER BY created_at, id"
        )
        return [self._pending(r) for r in found]


class SqlLogoutOutbox(SqlOutbox[PendingLogout]):
    """:class:`~authgate.ports.openid.LogoutOutbox` (``backchannel_logouts``)."""

    _table = "backchannel_logouts"
    _columns = ("id", "client_id", "account_id", "session_id", *_SCHEDULE)

    def _values(self, pending: PendingLogout) -> tuple[Any, ...]:
        p = pending
        return (p.id, p.client_id, p.account_id, p.session_id, *self._schedule(p))

    def _pending(self, row: Row) -> PendingLogout:
        return PendingLogout(row[0], row[1], row[2], row[3], *self._read_schedule(row))


class SqlRevocationOutbox(SqlOutbox[PendingRevocation]):
    """:class:`~authgate.ports.provider_tokens.RevocationOutbox`
    (``provider_token_revocations``)."""

    _table = "provider_token_revocations"
    _columns = ("id", "account_id", "provider", "subject", "key_id", "ciphertext", *_SCHEDULE)

    def _values(self, pending: PendingRevocation) -> tuple[Any, ...]:
        p = pending
        return (
            p.id,
            p.account_id,
            p.identity.provider,
            p.identity.subject,
            p.sealed.key_id,
            p.sealed.ciphertext,
            *self._schedule(p),
        )

    def _pending(self, row: Row) -> PendingRevocation:
        return PendingRevocation(
            row[0],
            row[1],
            ProviderIdentity(row[2], row[3]),
            SealedToken(row[4], row[5]),
            *self._read_schedule(row),
        )


_TOKEN_COLUMNS = "account_id, provider, subject, key_id, ciphertext, updated_at"  # noqa: S105
_PUT_TOKEN = insert("provider_tokens", _TOKEN_COLUMNS, "account_id, provider")
_SELECT = f"SELECT {_TOKEN_COLUMNS} FROM provider_tokens"  # noqa: S608 - constant columns


class SqlProviderTokens(Repository):
    """:class:`~authgate.ports.provider_tokens.ProviderTokenStore`: the sealed tokens of
    provider identities, one per account and provider."""

    async def put(self, stored: StoredProviderToken) -> None:
        # In a sign-in's unit of work it is sent with the unit's other writes.
        await self._db.write(
            _PUT_TOKEN,
            stored.account_id,
            stored.identity.provider,
            stored.identity.subject,
            stored.sealed.key_id,
            stored.sealed.ciphertext,
            self._sql.time(stored.updated_at),
        )

    async def take(self, account_id: str, provider: str | None = None) -> list[StoredProviderToken]:
        found = await self._db.fetch(
            "DELETE FROM provider_tokens WHERE account_id = $1 "  # noqa: S608 - constant columns
            f"AND (CAST($2 AS TEXT) IS NULL OR provider = $2) RETURNING {_TOKEN_COLUMNS}",
            account_id,
            provider,
        )
        return sorted((self._stored(r) for r in found), key=lambda t: t.identity.provider)

    async def for_account(self, account_id: str) -> list[StoredProviderToken]:
        found = await self._db.fetch(
            f"{_SELECT} WHERE account_id = $1 ORDER BY provider", account_id
        )
        return [self._stored(r) for r in found]

    async def sealed_under_other_keys(self, key_id: str, limit: int) -> list[StoredProviderToken]:
        found = await self._db.fetch(
            f"{_SELECT} WHERE key_id <> $1 ORDER BY account_id, provider LIMIT $2", key_id, limit
        )
        return [self._stored(r) for r in found]

    async def replace_sealed(self, stored: StoredProviderToken, old_key_id: str) -> bool:
        changed = await self._db.execute(
            "UPDATE provider_tokens SET key_id = $1, ciphertext = $2 "
            "WHERE account_id = $3 AND provider = $4 AND key_id = $5",
            stored.sealed.key_id,
            stored.sealed.ciphertext,
            stored.account_id,
            stored.identity.provider,
            old_key_id,
        )
        return changed == 1

    def _stored(self, row: Row) -> StoredProviderToken:
        return StoredProviderToken(
            account_id=row[0],
            identity=ProviderIdentity(row[1], row[2]),
            sealed=SealedToken(row[3], row[4]),
            updated_at=self._sql.read_time(row[5]),
        )
