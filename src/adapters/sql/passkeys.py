"""Passkeys."""

from __future__ import annotations

import datetime as dt

from authgate.domain.passkeys import Passkey
from authgate.ports.accounts import LastIdentityError
from authgate.ports.passkeys import PasskeyTaken, PasskeyUseNotRecorded

from .accounts import locked_rows
from .engine import Row, insert
from .housekeeping import Repository

_COLUMNS = (
    "id, account_id, credential_id, public_key, sign_count, transports, aaguid, "
    "backup_eligible, backed_up, name, created_at, last_used_at, added_by_session, "
    "added_from_address, added_from_user_agent"
)
_INSERT = insert("passkeys", _COLUMNS)
_RECORD_USE = (
    "UPDATE passkeys SET sign_count = $2, backed_up = $3, last_used_at = $4 "
    "WHERE id = $1 AND (sign_count < $2 OR (sign_count = 0 AND $2 = 0))"
)
# A sign-in's look-up: the passkey and whether its account has a disabled identity, one
# statement where two reads were (docs/benchmarks.md: passkeys against the floor).
_FOR_SIGN_IN = (
    f"SELECT {', '.join(f'p.{c}' for c in _COLUMNS.split(', '))}, "  # noqa: S608
    "EXISTS (SELECT 1 FROM identities i WHERE i.account_id = p.account_id "
    "AND i.disabled_reason IS NOT NULL) "
    "FROM passkeys p WHERE p.credential_id = $1"
)


class SqlPasskeys(Repository):
    """:class:`~authgate.ports.passkeys.PasskeyStore`; an account's passkeys go with it
    (``ON DELETE CASCADE``); removals lock as :func:`~.accounts.locked_rows` says."""

    async def add(self, passkey: Passkey) -> None:
        sql = self._sql
        key = sql.account_key(passkey.account_id)
        if key is None:
            raise KeyError(passkey.account_id)
        try:
            await self._db.execute(
                _INSERT,
                passkey.id,
                key,
                passkey.credential_id,
                passkey.public_key,
                passkey.sign_count,
                sql.strings(passkey.transports),
                passkey.aaguid,
                passkey.backup_eligible,
                passkey.backed_up,
                passkey.name,
                sql.time(passkey.created_at),
                sql.time(passkey.last_used_at) if passkey.last_used_at else None,
                passkey.added_by_session,
                passkey.added_from_address,
                passkey.added_from_user_agent,
            )
        except Exception as e:
            if sql.is_unique_violation(e):
                raise PasskeyTaken(passkey.id) from e
            if sql.is_foreign_key_violation(e):
                raise KeyError(passkey.account_id) from e
            raise

    async def find_by_credential(self, credential_id: bytes) -> Passkey | None:
        row = await self._db.read_row(
            f"SELECT {_COLUMNS} FROM passkeys WHERE credential_id = $1",  # noqa: S608
            credential_id,
        )
        return self._passkey(row) if row is not None else None

    async def find_for_sign_in(self, credential_id: bytes) -> tuple[Passkey, bool] | None:
        row = await self._db.read_row(_FOR_SIGN_IN, credential_id)
        return (self._passkey(row), bool(row[15])) if row is not None else None

    async def get(self, account_id: str, passkey_id: str) -> Passkey | None:
        key = self._sql.account_key(account_id)
        if key is None:
            return None
        row = await self._db.read_row(
            f"SELECT {_COLUMNS} FROM passkeys WHERE id = $1 AND account_id = $2",  # noqa: S608
            passkey_id,
            key,
        )
        return self._passkey(row) if row is not None else None

    async def for_account(self, account_id: str) -> list[Passkey]:
        return await self._of_account(
            account_id,
            f"SELECT {_COLUMNS} FROM passkeys WHERE account_id = $1 ORDER BY created_at, id",  # noqa: S608
            self._passkey,
        )

    async def rename(self, account_id: str, passkey_id: str, name: str) -> Passkey | None:
        key = self._sql.account_key(account_id)
        if key is None:
            return None
        row = await self._db.fetchrow(
            "UPDATE passkeys SET name = $3 WHERE id = $1 AND account_id = $2 "  # noqa: S608
            f"RETURNING {_COLUMNS}",
            passkey_id,
            key,
            name,
        )
        return self._passkey(row) if row is not None else None

    async def record_use(
        self, passkey_id: str, sign_count: int, backed_up: bool, now: dt.datetime
    ) -> bool:
        # Its outcome decides the sign-in: run now, or (PostgreSQL's unit of work) sent with
        # the unit's other writes in one statement that fails, nothing written, if it changed
        # no row. A concurrent sign-in's UPDATE of the row waits for this one's commit and then
        # checks the condition again on the row as committed (READ COMMITTED): one of them
        # wins. The condition is counter_advances (authgate.domain.passkeys).
        return await self._db.write_required(
            _RECORD_USE,
            [passkey_id, sign_count, backed_up, self._sql.time(now)],
            PasskeyUseNotRecorded(passkey_id),
        )

    async def delete(self, account_id: str, passkey_id: str) -> bool:
        key = self._sql.account_key(account_id)
        if key is None:
            return False
        async with self._db.atomic() as db:
            mine = await locked_rows(db, self._sql, key, "id", "passkeys")
            if mine is None:
                return False
            if passkey_id not in mine:
                return False
            if len(mine) == 1 and not await db.fetchrow(
                "SELECT true FROM identities WHERE account_id = $1 LIMIT 1", key
            ):
                raise LastIdentityError(account_id)
            await db.execute("DELETE FROM passkeys WHERE id = $1", passkey_id)
            return True

    def _passkey(self, row: Row) -> Passkey:
        sql = self._sql
        return Passkey(
            id=row[0],
            account_id=str(row[1]),
            credential_id=bytes(row[2]),
            public_key=bytes(row[3]),
            sign_count=row[4],
            transports=tuple(sql.read_strings(row[5])),
            aaguid=row[6],
            backup_eligible=bool(row[7]),
            backed_up=bool(row[8]),
            name=row[9],
            created_at=sql.read_time(row[10]),
            last_used_at=sql.read_time(row[11]) if row[11] is not None else None,
            added_by_session=row[12],
            added_from_address=row[13],
            added_from_user_agent=row[14],
        )
