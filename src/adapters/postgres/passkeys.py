"""Passkeys and their ceremonies' challenges in PostgreSQL, shared by every instance."""

from __future__ import annotations

import datetime as dt
from collections.abc import AsyncIterator

import asyncpg

from authgate.domain.passkeys import Ceremony, Passkey, PasskeyChallenge
from authgate.ports.accounts import LastIdentityError
from authgate.ports.passkeys import PasskeyTaken

from . import rows
from .housekeeping import DEFAULT_PURGE_INTERVAL, PeriodicPurge, delete_batches, total
from .pool import ConnectionPool

_COLUMNS = (
    "id, account_id, credential_id, public_key, sign_count, transports, aaguid, "
    "backup_eligible, backed_up, name, created_at, last_used_at, added_by_session, "
    "added_from_address, added_from_user_agent"
)

_RENAME = (
    "UPDATE passkeys SET name = $3 WHERE id = $1 AND account_id = $2 "  # noqa: S608
    f"RETURNING {_COLUMNS}"
)


class PostgresPasskeys:
    """:class:`~authgate.ports.passkeys.PasskeyStore`; an account's passkeys go with it
    (``ON DELETE CASCADE``). Removing a passkey and unlinking an identity both lock the
    account's row first, so two concurrent removals cannot both leave "another one"."""

    def __init__(self, db: rows.Executor) -> None:
        self._db = db

    def bound(self, conn: rows.Executor) -> PostgresPasskeys:
        return PostgresPasskeys(conn)

    async def add(self, passkey: Passkey) -> None:
        key = rows.account_uuid(passkey.account_id)
        if key is None:
            raise KeyError(passkey.account_id)
        try:
            async with rows.connection(self._db) as conn:
                await conn.execute(
                    f"INSERT INTO passkeys ({_COLUMNS}) "  # noqa: S608 - constant columns
                    "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)",
                    passkey.id,
                    key,
                    passkey.credential_id,
                    passkey.public_key,
                    passkey.sign_count,
                    list(passkey.transports),
                    passkey.aaguid,
                    passkey.backup_eligible,
                    passkey.backed_up,
                    passkey.name,
                    rows.utc(passkey.created_at),
                    rows.utc(passkey.last_used_at) if passkey.last_used_at else None,
                    passkey.added_by_session,
                    passkey.added_from_address,
                    passkey.added_from_user_agent,
                )
        except asyncpg.UniqueViolationError as e:
            raise PasskeyTaken(passkey.id) from e
        except asyncpg.ForeignKeyViolationError as e:
            raise KeyError(passkey.account_id) from e

    async def find_by_credential(self, credential_id: bytes) -> Passkey | None:
        row = await rows.read_row(
            self._db,
            f"SELECT {_COLUMNS} FROM passkeys WHERE credential_id = $1",  # noqa: S608
            credential_id,
        )
        return _passkey(row) if row is not None else None

    async def get(self, account_id: str, passkey_id: str) -> Passkey | None:
        key = rows.account_uuid(account_id)
        if key is None:
            return None
        row = await rows.read_row(
            self._db,
            f"SELECT {_COLUMNS} FROM passkeys WHERE id = $1 AND account_id = $2",  # noqa: S608
            passkey_id,
            key,
        )
        return _passkey(row) if row is not None else None

    async def for_account(self, account_id: str) -> list[Passkey]:
        key = rows.account_uuid(account_id)
        if key is None:
            return []
        found = await self._db.fetch(
            f"SELECT {_COLUMNS} FROM passkeys "  # noqa: S608 - constant columns
            "WHERE account_id = $1 ORDER BY created_at, id",
            key,
        )
        return [_passkey(r) for r in found]

    async def rename(self, account_id: str, passkey_id: str, name: str) -> Passkey | None:
        key = rows.account_uuid(account_id)
        if key is None:
            return None
        row = await self._db.fetchrow(
            _RENAME,
            passkey_id,
            key,
            name,
        )
        return _passkey(row) if row is not None else None

    async def record_use(
        self, passkey_id: str, sign_count: int, backed_up: bool, now: dt.datetime
    ) -> bool:
        # Sent at once (its outcome decides the sign-in), in the unit's transaction. A
        # concurrent sign-in's UPDATE of the row waits for this one's commit and then checks
        # the condition again on the row as committed (READ COMMITTED): one of them wins.
        # The condition is counter_advances (authgate.domain.passkeys).
        status = await self._db.execute(
            "UPDATE passkeys SET sign_count = $2, backed_up = $3, last_used_at = $4 "
            "WHERE id = $1 AND (sign_count < $2 OR (sign_count = 0 AND $2 = 0))",
            passkey_id,
            sign_count,
            backed_up,
            rows.utc(now),
        )
        return rows.affected(status) == 1

    async def delete(self, account_id: str, passkey_id: str) -> bool:
        key = rows.account_uuid(account_id)
        if key is None:
            return False
        async with rows.connection(self._db) as conn, rows.atomic(conn):
            # The lock unlinking an identity takes too (accounts.unlink_identity).
            exists = await conn.fetchval(
                "SELECT true FROM accounts WHERE id = $1 FOR NO KEY UPDATE", key
            )
            if not exists:
                return False
            mine = [
                r["id"]
                for r in await conn.fetch(
                    "SELECT id FROM passkeys WHERE account_id = $1 FOR UPDATE", key
                )
            ]
            if passkey_id not in mine:
                return False
            if len(mine) == 1 and not await conn.fetchval(
                "SELECT EXISTS (SELECT 1 FROM identities WHERE account_id = $1)", key
            ):
                raise LastIdentityError(account_id)
            await conn.execute("DELETE FROM passkeys WHERE id = $1", passkey_id)
            return True


def _passkey(row: asyncpg.Record) -> Passkey:
    return Passkey(
        id=row["id"],
        account_id=str(row["account_id"]),
        credential_id=bytes(row["credential_id"]),
        public_key=bytes(row["public_key"]),
        sign_count=row["sign_count"],
        transports=tuple(row["transports"]),
        aaguid=row["aaguid"],
        backup_eligible=row["backup_eligible"],
        backed_up=row["backed_up"],
        name=row["name"],
        created_at=row["created_at"],
        last_used_at=row["last_used_at"],
        added_by_session=row["added_by_session"],
        added_from_address=row["added_from_address"],
        added_from_user_agent=row["added_from_user_agent"],
    )


class PostgresPasskeyChallenges:
    """:class:`~authgate.ports.passkeys.PasskeyChallenges` on the adapters' pool, keyed by
    ``(binding_hash, ceremony)``. ``put`` triggers a purge of expired rows at most once per
    ``purge_interval``."""

    def __init__(
        self, pool: ConnectionPool, purge_interval: dt.timedelta = DEFAULT_PURGE_INTERVAL
    ) -> None:
        self._pool = pool
        self._last_now: dt.datetime | None = None
        self.housekeeping = PeriodicPurge("expired passkey challenges", self._purge, purge_interval)

    async def put(self, challenge: PasskeyChallenge) -> None:
        created = rows.utc(challenge.created_at)
        await self._pool.execute(
            """
            INSERT INTO passkey_challenges (binding_hash, ceremony, challenge, account_id,
                session_id, created_at, expires_at)
            VALUES ($1, $2, $3, $4, $5, $6, $7)
            ON CONFLICT (binding_hash, ceremony) DO UPDATE SET
                challenge = EXCLUDED.challenge, account_id = EXCLUDED.account_id,
                session_id = EXCLUDED.session_id, created_at = EXCLUDED.created_at,
                expires_at = EXCLUDED.expires_at
            """,
            challenge.binding_hash,
            challenge.ceremony.value,
            challenge.challenge,
            challenge.account_id,
            challenge.session_id,
            created,
            rows.utc(challenge.expires_at),
        )
        self._last_now = created
        self.housekeeping.trigger()

    async def take(
        self, binding_hash: str, ceremony: Ceremony, now: dt.datetime
    ) -> PasskeyChallenge | None:
        # One statement: of concurrent takes exactly one deletes the row and gets it back.
        row = await self._pool.fetchrow(
            """
            DELETE FROM passkey_challenges WHERE binding_hash = $1 AND ceremony = $2
            RETURNING challenge, account_id, session_id, created_at, expires_at
            """,
            binding_hash,
            ceremony.value,
        )
        if row is None or row["expires_at"] <= rows.utc(now):
            return None
        return PasskeyChallenge(
            binding_hash=binding_hash,
            ceremony=ceremony,
            challenge=bytes(row["challenge"]),
            account_id=row["account_id"],
            session_id=row["session_id"],
            created_at=row["created_at"],
            expires_at=row["expires_at"],
        )

    async def purge_expired(self, now: dt.datetime) -> int:
        return await total(self._expired(now))

    def _expired(self, now: dt.datetime) -> AsyncIterator[int]:
        return delete_batches(self._pool, "passkey_challenges", now)

    async def _purge(self) -> AsyncIterator[int]:
        if self._last_now is not None:
            async for deleted in self._expired(self._last_now):
                yield deleted
