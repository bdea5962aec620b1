"""Accounts and provider identities in PostgreSQL.

Every method is one transaction (or one statement). Race safety comes from the primary key on
``identities (provider, subject)``, never from a check-then-insert.
"""

from __future__ import annotations

import datetime as dt
import uuid

import asyncpg

from authgate.domain.model import Account, LinkedIdentity, ProviderIdentity, VerifiedIdentity
from authgate.ports.accounts import IdentityTaken, LastIdentityError, email_verified_of

from . import rows
from .unit import UnitConnection

_ACCOUNT_BY_IDENTITY = """
    SELECT a.id, a.email, a.name, a.created_at, a.last_login_at, a.email_verified
    FROM identities i JOIN accounts a ON a.id = i.account_id
    WHERE i.provider = $1 AND i.subject = $2
"""

# One statement, one round trip: the account and its primary identity. The identity's insert
# waits for a concurrent uncommitted insert of the same key, then does nothing if that one
# committed: ``won`` is false and the account must go. (The foreign key is checked at the end
# of the statement, when the account is there.)
_CREATEWITH_IDENTITY = """
    WITH account AS (
        INSERT INTO accounts (id, email, name, profile, created_at, email_verified)
        VALUES ($1, $2, $3, $4::jsonb, $5, $6)
        RETURNING id, email, name, created_at, last_login_at, email_verified
    ), identity AS (
        INSERT INTO identities (
            provider, subject, account_id, email, linked_at, is_primary, email_verified
        )
        SELECT $7, $8, id, email, created_at, true, email_verified FROM account
        ON CONFLICT (provider, subject) DO NOTHING
        RETURNING true
    )
    SELECT id, email, name, created_at, last_login_at, email_verified,
        EXISTS (SELECT FROM identity) AS won
    FROM account
"""

# A unit of work's creation (_create_in_unit): two of its waiting writes.
_INSERT_ACCOUNT = """
    INSERT INTO accounts (id, email, name, profile, created_at, email_verified, last_login_at)
    VALUES ($1, $2, $3, $4::jsonb, $5, $6, $7)
"""
_INSERT_PRIMARY_IDENTITY = """
    INSERT INTO identities (
        provider, subject, account_id, email, linked_at, is_primary, email_verified
    )
    VALUES ($1, $2, $3, $4, $5, true, $6)
"""
IDENTITY_KEY = "identities_pkey"  # what a lost race of _INSERT_PRIMARY_IDENTITY violates

# An attempt that lost a race retries; a handful of rounds is plenty (each loser sees a winner).
_ATTEMPTS = 5


class PostgresAccounts:
    """:class:`~authgate.ports.accounts.AccountRepository` on an asyncpg pool, or on the
    connection of a unit of work (:class:`~.unit.UnitConnection`: its transactions then nest
    as savepoints, and a lost race deletes only its own attempt's account)."""

    def __init__(self, db: rows.Executor) -> None:
        self._db = db
        # accounts created in this unit of work whose insert may still wait: their arguments
        self._waiting_accounts: dict[uuid.UUID, list[object]] = {}

    @property
    def created_in_unit(self) -> bool:
        """Whether this unit of work's repository sent (or holds) an account creation."""
        return bool(self._waiting_accounts)

    async def find_by_identity(self, identity: ProviderIdentity) -> Account | None:
        row = await rows.read_row(
            self._db, _ACCOUNT_BY_IDENTITY, identity.provider, identity.subject
        )
        return rows.account(row) if row is not None else None

    async def get(self, account_id: str) -> Account | None:
        key = rows.account_uuid(account_id)
        if key is None:
            return None
        row = await rows.read_row(
            self._db,
            "SELECT id, email, name, created_at, last_login_at, email_verified "
            "FROM accounts WHERE id = $1",
            key,
        )
        return rows.account(row) if row is not None else None

    async def find_by_email(self, email: str) -> list[Account]:
        # A scan (no index on lower(email)): an operator's occasional look-up.
        found = await self._db.fetch(
            """
            SELECT id, email, name, created_at, last_login_at, email_verified
            FROM accounts
            WHERE lower(email) = lower($1)
               OR id IN (SELECT account_id FROM identities WHERE lower(email) = lower($1))
            ORDER BY created_at, id
            """,
            email,
        )
        return [rows.account(r) for r in found]

    async def create_with_identity(
        self, verified: VerifiedIdentity, now: dt.datetime
    ) -> tuple[Account, bool]:
        identity = verified.identity
        now = rows.utc(now)
        if isinstance(self._db, UnitConnection):
            return await self._create_in_unit(self._db, verified, now)
        for _ in range(_ATTEMPTS):
            async with rows.connection(self._db) as conn:
                # The account and its identity commit together or not at all: a loser of the
                # race deletes its account in the same transaction, so no account is ever
                # seen without its identity.
                async with rows.atomic(conn):
                    created = await conn.fetchrow(
                        _CREATEWITH_IDENTITY,
                        uuid.uuid4(),
                        verified.email,
                        verified.name,
                        rows.profile_json(verified.profile),
                        now,
                        email_verified_of(verified),
                        identity.provider,
                        identity.subject,
                    )
                    assert created is not None
                    if created["won"]:
                        return rows.account(created), True
                    await conn.execute("DELETE FROM accounts WHERE id = $1", created["id"])
                winner = await conn.fetchrow(
                    _ACCOUNT_BY_IDENTITY, identity.provider, identity.subject
                )
                if winner is not None:
                    return rows.account(winner), False
            # The holder vanished between the conflict and the read (unlinked): try again.
        raise RuntimeError(f"could not create or find the account of {identity}")

    async def _create_in_unit(
        self, unit: UnitConnection, verified: VerifiedIdentity, now: dt.datetime
    ) -> tuple[Account, bool]:
        """The account and its primary identity as two of the unit's waiting writes, sent in
        its one combined statement (no BEGIN or COMMIT of their own). The identity's plain
        INSERT waits for a concurrent uncommitted insert of the same key and fails if that
        one committed: the whole statement, and so the whole unit, then writes nothing, and
        the unit of work raises IdentityRace. (The foreign key is checked at the end of the
        statement, when the account is there.)"""
        key = uuid.uuid4()
        email_verified = email_verified_of(verified)
        identity = verified.identity
        account_args: list[object] = [
            key,
            verified.email,
            verified.name,
            rows.profile_json(verified.profile),
            now,
            email_verified,
            None,  # last_login_at: record_login sets it here while the insert waits
        ]
        await unit.write_amendable(_INSERT_ACCOUNT, account_args)
        await unit.write(
            _INSERT_PRIMARY_IDENTITY,
            identity.provider,
            identity.subject,
            key,
            verified.email,
            now,
            email_verified,
        )
        self._waiting_accounts[key] = account_args
        account = Account(
            id=str(key),
            email=verified.email,
            name=verified.name,
            created_at=now,
            last_login_at=None,
            email_verified=email_verified,
        )
        return account, True

    async def link_identity(
        self, account_id: str, verified: VerifiedIdentity, now: dt.datetime
    ) -> None:
        key = rows.account_uuid(account_id)
        if key is None:
            raise KeyError(account_id)
        identity = verified.identity
        async with rows.connection(self._db) as conn:
            for _ in range(_ATTEMPTS):
                try:
                    inserted = await conn.fetchval(
                        """
                        INSERT INTO identities (
                            provider, subject, account_id, email, linked_at, is_primary,
                            email_verified
                        )
                        VALUES ($1, $2, $3, $4, $5, false, $6)
                        ON CONFLICT (provider, subject) DO NOTHING
                        RETURNING true
                        """,
                        identity.provider,
                        identity.subject,
                        key,
                        verified.email,
                        rows.utc(now),
                        email_verified_of(verified),
                    )
                except asyncpg.ForeignKeyViolationError:
                    raise KeyError(account_id) from None
                if inserted:
                    return
                holder = await conn.fetchval(
                    "SELECT account_id FROM identities WHERE provider = $1 AND subject = $2",
                    identity.provider,
                    identity.subject,
                )
                if holder is not None:
                    if holder != key:
                        raise IdentityTaken(str(identity))
                    return  # already this account's: idempotent
        raise RuntimeError(f"could not link {identity}")

    async def unlink_identity(self, account_id: str, provider: str) -> bool:
        key = rows.account_uuid(account_id)
        if key is None:
            return False
        async with rows.connection(self._db) as conn, conn.transaction():
            # Serialises unlinks of one account: two concurrent unlinks of its last two
            # identities must not both see "another one remains". NO KEY UPDATE does not
            # block inserting identities (their foreign key takes KEY SHARE).
            exists = await conn.fetchval(
                "SELECT true FROM accounts WHERE id = $1 FOR NO KEY UPDATE", key
            )
            if not exists:
                return False
            providers = await conn.fetch(
                "SELECT provider FROM identities WHERE account_id = $1 FOR UPDATE", key
            )
            targets = [r for r in providers if r["provider"] == provider]
            if not targets:
                return False
            if len(targets) == len(providers) and not await conn.fetchval(
                "SELECT EXISTS (SELECT 1 FROM passkeys WHERE account_id = $1)", key
            ):
                raise LastIdentityError(account_id)
            await conn.execute(
                "DELETE FROM identities WHERE account_id = $1 AND provider = $2", key, provider
            )
            return True

    async def delete(self, account_id: str) -> bool:
        key = rows.account_uuid(account_id)
        if key is None:
            return False
        # identities go with their account (ON DELETE CASCADE)
        status = await self._db.execute("DELETE FROM accounts WHERE id = $1", key)
        return rows.affected(status) == 1

    async def record_login(self, account_id: str, now: dt.datetime) -> None:
        key = rows.account_uuid(account_id)
        if key is None:
            return
        waiting = self._waiting_accounts.get(key)
        if (
            waiting is not None
            and isinstance(self._db, UnitConnection)
            and self._db.is_waiting(waiting)
        ):
            # Its insert has not been sent: an UPDATE in the same statement would not see the
            # row (one snapshot), so the insert carries the time.
            waiting[6] = rows.utc(now)
            return
        await rows.write(
            self._db, "UPDATE accounts SET last_login_at = $2 WHERE id = $1", key, rows.utc(now)
        )

    async def list_identities(self, account_id: str) -> list[LinkedIdentity]:
        key = rows.account_uuid(account_id)
        if key is None:
            return []
        found = await rows.read_rows(
            self._db,
            _IDENTITY_SELECT
            + "WHERE account_id = $1 ORDER BY linked_at, is_primary DESC, provider, subject",
            key,
        )
        return [rows.linked_identity(r) for r in found]

    async def get_identity(self, identity: ProviderIdentity) -> LinkedIdentity | None:
        row = await rows.read_row(
            self._db,
            _IDENTITY_SELECT + "WHERE provider = $1 AND subject = $2",
            identity.provider,
            identity.subject,
        )
        return rows.linked_identity(row) if row is not None else None

    async def find_with_identity(
        self, identity: ProviderIdentity
    ) -> tuple[LinkedIdentity, Account] | None:
        row = await rows.read_row(self._db, WITH_IDENTITY, identity.provider, identity.subject)
        if row is None:
            return None
        return rows.linked_identity(row, own="identity_"), rows.account(row)

    async def set_identity_disabled(self, identity: ProviderIdentity, reason: str | None) -> bool:
        status = await self._db.execute(
            "UPDATE identities SET disabled_reason = $3 WHERE provider = $1 AND subject = $2",
            identity.provider,
            identity.subject,
            reason,
        )
        return rows.affected(status) == 1

    async def set_identity_email_disabled(self, identity: ProviderIdentity, disabled: bool) -> bool:
        status = await self._db.execute(
            "UPDATE identities SET email_disabled = $3 WHERE provider = $1 AND subject = $2",
            identity.provider,
            identity.subject,
            disabled,
        )
        return rows.affected(status) == 1


# The identity and its account in one row (the identity's own email columns renamed).
WITH_IDENTITY = """
    SELECT i.account_id, i.provider, i.subject, i.email AS identity_email, i.linked_at,
        i.is_primary, i.email_verified AS identity_email_verified, i.disabled_reason,
        i.email_disabled, a.id, a.email, a.name, a.created_at, a.last_login_at, a.email_verified
    FROM identities i JOIN accounts a ON a.id = i.account_id
    WHERE i.provider = $1 AND i.subject = $2
"""

_IDENTITY_SELECT = """
    SELECT account_id, provider, subject, email, linked_at, is_primary, email_verified,
        disabled_reason, email_disabled
    FROM identities
"""
