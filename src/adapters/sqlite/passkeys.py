"""Passkeys and their ceremonies' challenges in SQLite."""

from __future__ import annotations

import datetime as dt
import json
import sqlite3
from collections.abc import Sequence
from typing import Any

from authgate.domain.passkeys import Ceremony, Passkey, PasskeyChallenge
from authgate.ports.accounts import LastIdentityError
from authgate.ports.passkeys import PasskeyTaken

from .db import Database, parse_opt_ts, parse_ts, ts, utc
from .housekeeping import DEFAULT_PURGE_INTERVAL, PeriodicPurge, delete_batches

_COLUMNS = (
    "id, account_id, credential_id, public_key, sign_count, transports, aaguid, "
    "backup_eligible, backed_up, name, created_at, last_used_at, added_by_session, "
    "added_from_address, added_from_user_agent"
)


class SqlitePasskeys:
    """:class:`~authgate.ports.passkeys.PasskeyStore` in a SQLite file; an account's passkeys
    go with it (``ON DELETE CASCADE``)."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def add(self, passkey: Passkey) -> None:
        try:
            async with self._db.use() as conn:
                await conn.execute(
                    f"INSERT INTO passkeys ({_COLUMNS}) "  # noqa: S608 - constant columns
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        passkey.id,
                        passkey.account_id,
                        passkey.credential_id,
                        passkey.public_key,
                        passkey.sign_count,
                        json.dumps(list(passkey.transports)),
                        passkey.aaguid,
                        int(passkey.backup_eligible),
                        int(passkey.backed_up),
                        passkey.name,
                        ts(passkey.created_at),
                        ts(passkey.last_used_at) if passkey.last_used_at else None,
                        passkey.added_by_session,
                        passkey.added_from_address,
                        passkey.added_from_user_agent,
                    ),
                )
        except sqlite3.IntegrityError as e:
            if "UNIQUE" in str(e) or "PRIMARY KEY" in str(e):
                raise PasskeyTaken(passkey.id) from e
            raise KeyError(passkey.account_id) from e

    async def find_by_credential(self, credential_id: bytes) -> Passkey | None:
        return await self._one("WHERE credential_id = ?", (credential_id,))

    async def get(self, account_id: str, passkey_id: str) -> Passkey | None:
        return await self._one("WHERE id = ? AND account_id = ?", (passkey_id, account_id))

    async def for_account(self, account_id: str) -> list[Passkey]:
        async with self._db.use() as conn:
            found = await conn.execute_fetchall(
                f"SELECT {_COLUMNS} FROM passkeys "  # noqa: S608 - constant columns
                "WHERE account_id = ? ORDER BY created_at, id",
                (account_id,),
            )
        return [_passkey(r) for r in found]

    async def rename(self, account_id: str, passkey_id: str, name: str) -> Passkey | None:
        async with self._db.use() as conn:
            found = await conn.execute_fetchall(
                f"UPDATE passkeys SET name = ? WHERE id = ? AND account_id = ? "  # noqa: S608
                f"RETURNING {_COLUMNS}",
                (name, passkey_id, account_id),
            )
        rows = list(found)
        return _passkey(rows[0]) if rows else None

    async def record_use(
        self, passkey_id: str, sign_count: int, backed_up: bool, now: dt.datetime
    ) -> bool:
        async with self._db.use() as conn:
            # counter_advances (authgate.domain.passkeys), decided on the row it writes.
            cursor = await conn.execute(
                "UPDATE passkeys SET sign_count = ?, backed_up = ?, last_used_at = ? "
                "WHERE id = ? AND (sign_count < ? OR (sign_count = 0 AND ? = 0))",
                (sign_count, int(backed_up), ts(now), passkey_id, sign_count, sign_count),
            )
            return cursor.rowcount == 1

    async def delete(self, account_id: str, passkey_id: str) -> bool:
        async with self._db.transaction() as conn:
            mine = [
                r[0]
                for r in await conn.execute_fetchall(
                    "SELECT id FROM passkeys WHERE account_id = ?", (account_id,)
                )
            ]
            if passkey_id not in mine:
                return False
            if len(mine) == 1:
                identities = list(
                    await conn.execute_fetchall(
                        "SELECT 1 FROM identities WHERE account_id = ? LIMIT 1", (account_id,)
                    )
                )
                if not identities:
                    raise LastIdentityError(account_id)
            await conn.execute("DELETE FROM passkeys WHERE id = ?", (passkey_id,))
            return True

    async def _one(self, where: str, args: tuple[object, ...]) -> Passkey | None:
        async with self._db.use() as conn:
            found = await conn.execute_fetchall(
                f"SELECT {_COLUMNS} FROM passkeys {where}",  # noqa: S608 - our own conditions
                args,
            )
        rows = list(found)
        return _passkey(rows[0]) if rows else None


def _passkey(r: Sequence[Any]) -> Passkey:
    return Passkey(
        id=r[0],
        account_id=r[1],
        credential_id=bytes(r[2]),
        public_key=bytes(r[3]),
        sign_count=r[4],
        transports=tuple(json.loads(r[5])),
        aaguid=r[6],
        backup_eligible=bool(r[7]),
        backed_up=bool(r[8]),
        name=r[9],
        created_at=parse_ts(r[10]),
        last_used_at=parse_opt_ts(r[11]),
        added_by_session=r[12],
        added_from_address=r[13],
        added_from_user_agent=r[14],
    )


class SqlitePasskeyChallenges:
    """:class:`~authgate.ports.passkeys.PasskeyChallenges` in a SQLite file, keyed by
    ``(binding_hash, ceremony)``. ``put`` purges expired rows at most once per
    ``purge_interval``."""

    def __init__(self, db: Database, purge_interval: dt.timedelta = DEFAULT_PURGE_INTERVAL) -> None:
        self._db = db
        self.housekeeping = PeriodicPurge("expired passkey challenges", purge_interval)

    async def put(self, challenge: PasskeyChallenge) -> None:
        async with self._db.use() as conn:
            await conn.execute(
                """
                INSERT OR REPLACE INTO passkey_challenges (binding_hash, ceremony, challenge,
                    account_id, session_id, created_at, expires_at)
                VALUES (?, ?, ?, ?, ?, ?, ?)
                """,
                (
                    challenge.binding_hash,
                    challenge.ceremony.value,
                    challenge.challenge,
                    challenge.account_id,
                    challenge.session_id,
                    ts(challenge.created_at),
                    ts(challenge.expires_at),
                ),
            )
        await self.housekeeping.maybe_run(lambda: self.purge_expired(challenge.created_at))

    async def take(
        self, binding_hash: str, ceremony: Ceremony, now: dt.datetime
    ) -> PasskeyChallenge | None:
        async with self._db.use() as conn:
            # One statement (and SQLite has one writer): exactly one take gets the row.
            found = await conn.execute_fetchall(
                "DELETE FROM passkey_challenges WHERE binding_hash = ? AND ceremony = ? "
                "RETURNING challenge, account_id, session_id, created_at, expires_at",
                (binding_hash, ceremony.value),
            )
        rows = list(found)
        if not rows:
            return None
        r = rows[0]
        challenge = PasskeyChallenge(
            binding_hash=binding_hash,
            ceremony=ceremony,
            challenge=bytes(r[0]),
            account_id=r[1],
            session_id=r[2],
            created_at=parse_ts(r[3]),
            expires_at=parse_ts(r[4]),
        )
        return challenge if challenge.expires_at > utc(now) else None

    async def purge_expired(self, now: dt.datetime) -> int:
        return await delete_batches(self._db, "passkey_challenges", now)
