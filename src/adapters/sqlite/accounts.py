"""Accounts and provider identities in SQLite."""

from __future__ import annotations

import datetime as dt
import json
import sqlite3
import uuid
from collections.abc import Mapping
from typing import Any

import aiosqlite

from authgate.domain.model import Account, LinkedIdentity, ProviderIdentity, VerifiedIdentity
from authgate.ports.accounts import IdentityTaken, LastIdentityError, email_verified_of

from .db import Database, parse_opt_ts, parse_ts, ts, utc

_ACCOUNT_BY_IDENTITY = """
    SELECT a.id, a.email, a.name, a.created_at, a.last_login_at, a.email_verified
    FROM identities i JOIN accounts a ON a.id = i.account_id
    WHERE i.provider = ? AND i.subject = ?
"""


def _account(row: sqlite3.Row | tuple[Any, ...]) -> Account:
    return Account(
        id=row[0],
        email=row[1],
        name=row[2],
        created_at=parse_ts(row[3]),
        last_login_at=parse_opt_ts(row[4]),
        email_verified=bool(row[5]),
    )


def _profile_json(profile: Mapping[str, Any]) -> str:
    return json.dumps(dict(profile), default=str, separators=(",", ":"))


class SqliteAccounts:
    """:class:`~authgate.ports.accounts.AccountRepository` in a SQLite file."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def find_by_identity(self, identity: ProviderIdentity) -> Account | None:
        async with self._db.use() as conn:
            rows = await conn.execute_fetchall(
                _ACCOUNT_BY_IDENTITY, (identity.provider, identity.subject)
            )
        return _account(next(iter(rows))) if rows else None

    async def get(self, account_id: str) -> Account | None:
        async with self._db.use() as conn:
            rows = await conn.execute_fetchall(
                "SELECT id, email, name, created_at, last_login_at, email_verified "
                "FROM accounts WHERE id = ?",
                (account_id,),
            )
        return _account(next(iter(rows))) if rows else None

    async def find_by_email(self, email: str) -> list[Account]:
        # A scan (no index on lower(email)): an operator's occasional look-up.
        async with self._db.use() as conn:
            rows = await conn.execute_fetchall(
                """
                SELECT id, email, name, created_at, last_login_at, email_verified
                FROM accounts
                WHERE lower(email) = lower(?1)
                   OR id IN (SELECT account_id FROM identities WHERE lower(email) = lower(?1))
                ORDER BY created_at, id
                """,
                (email,),
            )
        return [_account(r) for r in rows]

    async def create_with_identity(
        self, verified: VerifiedIdentity, now: dt.datetime
    ) -> tuple[Account, bool]:
        identity = verified.identity
        now = utc(now)
        account = Account(
            id=str(uuid.uuid4()),
            email=verified.email,
            name=verified.name,
            created_at=now,
            last_login_at=None,
            email_verified=email_verified_of(verified),
        )
        async with self._db.transaction() as conn:
            # BEGIN IMMEDIATE holds the file's write lock (against other processes too), so
            # nothing can insert the identity between this read and the inserts below; the
            # primary key on (provider, subject) stays the backstop. The account and its
            # identity commit together or not at all.
            rows = await conn.execute_fetchall(
                _ACCOUNT_BY_IDENTITY, (identity.provider, identity.subject)
            )
            if rows:
                return _account(next(iter(rows))), False
            await conn.execute(
                "INSERT INTO accounts (id, email, name, profile, created_at, email_verified) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (
                    account.id,
                    verified.email,
                    verified.name,
                    _profile_json(verified.profile),
                    ts(now),
                    account.email_verified,
                ),
            )
            await conn.execute(
                """
                INSERT INTO identities
                    (provider, subject, account_id, email, linked_at, is_primary, email_verified)
                VALUES (?, ?, ?, ?, ?, 1, ?)
                """,
                (
                    identity.provider,
                    identity.subject,
                    account.id,
                    verified.email,
                    ts(now),
                    account.email_verified,
                ),
            )
        return account, True

    async def link_identity(
        self, account_id: str, verified: VerifiedIdentity, now: dt.datetime
    ) -> None:
        identity = verified.identity
        async with self._db.transaction() as conn:
            holders = await conn.execute_fetchall(
                "SELECT account_id FROM identities WHERE provider = ? AND subject = ?",
                (identity.provider, identity.subject),
            )
            if holders:
                if next(iter(holders))[0] != account_id:
                    raise IdentityTaken(str(identity))
                return  # already this account's: idempotent
            if not await conn.execute_fetchall(
                "SELECT 1 FROM accounts WHERE id = ?", (account_id,)
            ):
                raise KeyError(account_id)
            # Within BEGIN IMMEDIATE no other writer can insert the key after the check.
            await conn.execute(
                """
                INSERT INTO identities
                    (provider, subject, account_id, email, linked_at, is_primary, email_verified)
                VALUES (?, ?, ?, ?, ?, 0, ?)
                """,
                (
                    identity.provider,
                    identity.subject,
                    account_id,
                    verified.email,
                    ts(now),
                    email_verified_of(verified),
                ),
            )

    async def delete(self, account_id: str) -> bool:
        async with self._db.transaction() as conn:
            # identities go with their account (ON DELETE CASCADE, foreign keys on)
            await conn.execute("DELETE FROM identities WHERE account_id = ?", (account_id,))
            cursor = await conn.execute("DELETE FROM accounts WHERE id = ?", (account_id,))
            return cursor.rowcount == 1

    async def unlink_identity(self, account_id: str, provider: str) -> bool:
        async with self._db.transaction() as conn:
            providers = [
                r[0]
                for r in await conn.execute_fetchall(
                    "SELECT provider FROM identities WHERE account_id = ?", (account_id,)
                )
            ]
            targets = [p for p in providers if p == provider]
            if not targets:
                return False
            if len(targets) == len(providers) and not await _has_passkey(conn, account_id):
                raise LastIdentityError(account_id)
            await conn.execute(
                "DELETE FROM identities WHERE account_id = ? AND provider = ?",
                (account_id, provider),
            )
            return True

    async def record_login(self, account_id: str, now: dt.datetime) -> None:
        async with self._db.use() as conn:
            await conn.execute(
                "UPDATE accounts SET last_login_at = ? WHERE id = ?", (ts(now), account_id)
            )

    async def list_identities(self, account_id: str) -> list[LinkedIdentity]:
        async with self._db.use() as conn:
            rows = await conn.execute_fetchall(
                _IDENTITY_SELECT + "WHERE account_id = ? "
                "ORDER BY linked_at, is_primary DESC, provider, subject",
                (account_id,),
            )
        return [_linked(r) for r in rows]

    async def get_identity(self, identity: ProviderIdentity) -> LinkedIdentity | None:
        async with self._db.use() as conn:
            rows = list(
                await conn.execute_fetchall(
                    _IDENTITY_SELECT + "WHERE provider = ? AND subject = ?",
                    (identity.provider, identity.subject),
                )
            )
        return _linked(rows[0]) if rows else None

    async def find_with_identity(
        self, identity: ProviderIdentity
    ) -> tuple[LinkedIdentity, Account] | None:
        async with self._db.use() as conn:
            rows = list(
                await conn.execute_fetchall(_WITH_IDENTITY, (identity.provider, identity.subject))
            )
        if not rows:
            return None
        row = tuple(rows[0])
        return _linked(row[:9]), _account(row[9:])

    async def set_identity_disabled(self, identity: ProviderIdentity, reason: str | None) -> bool:
        async with self._db.use() as conn:
            cursor = await conn.execute(
                "UPDATE identities SET disabled_reason = ? WHERE provider = ? AND subject = ?",
                (reason, identity.provider, identity.subject),
            )
            return cursor.rowcount == 1

    async def set_identity_email_disabled(self, identity: ProviderIdentity, disabled: bool) -> bool:
        async with self._db.use() as conn:
            cursor = await conn.execute(
                "UPDATE identities SET email_disabled = ? WHERE provider = ? AND subject = ?",
                (int(disabled), identity.provider, identity.subject),
            )
            return cursor.rowcount == 1


_IDENTITY_SELECT = """
    SELECT account_id, provider, subject, email, linked_at, is_primary, email_verified,
        disabled_reason, email_disabled
    FROM identities
"""


# The identity (as _IDENTITY_SELECT) and its account (as _ACCOUNT_BY_IDENTITY) in one row.
_WITH_IDENTITY = """
    SELECT i.account_id, i.provider, i.subject, i.email, i.linked_at, i.is_primary,
        i.email_verified, i.disabled_reason, i.email_disabled,
        a.id, a.email, a.name, a.created_at, a.last_login_at, a.email_verified
    FROM identities i JOIN accounts a ON a.id = i.account_id
    WHERE i.provider = ? AND i.subject = ?
"""


def _linked(r: sqlite3.Row | tuple[Any, ...]) -> LinkedIdentity:
    return LinkedIdentity(
        account_id=r[0],
        identity=ProviderIdentity(r[1], r[2]),
        email=r[3],
        linked_at=parse_ts(r[4]),
        is_primary=bool(r[5]),
        email_verified=bool(r[6]),
        disabled_reason=r[7],
        email_disabled=bool(r[8]),
    )


async def _has_passkey(conn: aiosqlite.Connection, account_id: str) -> bool:
    """Whether the account holds a passkey: a sign-in method beside its identities."""
    found = await conn.execute_fetchall(
        "SELECT 1 FROM passkeys WHERE account_id = ? LIMIT 1", (account_id,)
    )
    return bool(list(found))
