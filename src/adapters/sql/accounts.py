"""Accounts and provider identities.

Race safety comes from the primary key on ``identities (provider, subject)``, never from a
check-then-insert alone.
"""

from __future__ import annotations

import datetime as dt
import json
import uuid
from collections.abc import Mapping
from typing import Any, Self

from authgate.domain.model import Account, LinkedIdentity, ProviderIdentity, VerifiedIdentity
from authgate.ports.accounts import IdentityTaken, LastIdentityError, email_verified_of

from .engine import Db, Dialect, Row
from .housekeeping import Repository, utc

_ACCOUNT = "a.id, a.email, a.name, a.created_at, a.last_login_at, a.email_verified"
_IDENTITY = (
    "account_id, provider, subject, email, linked_at, is_primary, email_verified, "
    "disabled_reason, email_disabled"
)
_OF_IDENTITY = (
    "FROM identities i JOIN accounts a ON a.id = i.account_id "
    "WHERE i.provider = $1 AND i.subject = $2"
)
_ACCOUNT_BY_IDENTITY = f"SELECT {_ACCOUNT} {_OF_IDENTITY}"
# The identity and its account in one row.
_WITH_IDENTITY = (
    f"SELECT {', '.join(f'i.{c}' for c in _IDENTITY.split(', '))}, {_ACCOUNT} {_OF_IDENTITY}"
)
_INSERT_ACCOUNT = """
    INSERT INTO accounts (id, email, name, profile, created_at, email_verified, last_login_at)
    VALUES ($1, $2, $3, $4, $5, $6, $7)
"""
_INSERT_IDENTITY = """
    INSERT INTO identities (
        provider, subject, account_id, email, linked_at, is_primary, email_verified
    )
    VALUES ($1, $2, $3, $4, $5, {primary}, $6)
"""
_INSERT_PRIMARY_IDENTITY = _INSERT_IDENTITY.format(primary="true")
_LINK_IDENTITY = (
    _INSERT_IDENTITY.format(primary="false")
    + " ON CONFLICT (provider, subject) DO NOTHING RETURNING true"
)

# An attempt that lost a race retries; a handful of rounds is plenty (each loser sees a winner).
_ATTEMPTS = 5


def profile_json(profile: Mapping[str, Any]) -> str:
    """A provider's profile as stored (a claim of an odd type kept as text)."""
    return _PROFILE_JSON(dict(profile))


# json.dumps(..., default=str, separators=(",", ":")), its encoder made once.
_PROFILE_JSON = json.JSONEncoder(default=str, separators=(",", ":")).encode


async def locked_rows(
    db: Db, sql: Dialect, key: object, column: str, table: str
) -> list[Any] | None:
    """The account's row locked (None when there is no such account), then ``column`` of the
    account's rows in ``table`` (identities, passkeys), locked too. Removing a passkey and
    unlinking an identity both lock the account's row first, so two concurrent removals
    cannot both leave "another one". NO KEY UPDATE does not block inserting identities (their
    foreign key takes KEY SHARE)."""
    account = f"SELECT true FROM accounts WHERE id = $1{sql.lock('NO KEY UPDATE')}"  # noqa: S608
    if await db.fetchrow(account, key) is None:
        return None
    mine = f"SELECT {column} FROM {table} WHERE account_id = $1{sql.lock('UPDATE')}"  # noqa: S608
    return [r[0] for r in await db.fetch(mine, key)]


class SqlAccounts(Repository):
    """:class:`~authgate.ports.accounts.AccountRepository`; a registration's lost race in a
    unit of work whose writes wait is the unit's to raise (``IdentityRace``)."""

    def __init__(self, db: Db, sql: Dialect) -> None:
        super().__init__(db, sql)
        # accounts created in this unit of work whose insert may still wait: their arguments
        self._waiting_accounts: dict[str, list[object]] = {}

    def bound(self, db: Db) -> Self:
        return type(self)(db, self._sql)

    @property
    def created_in_unit(self) -> bool:
        """Whether this unit of work's repository sent (or holds) an account creation."""
        return bool(self._waiting_accounts)

    async def find_by_identity(self, identity: ProviderIdentity) -> Account | None:
        row = await self._db.read_row(_ACCOUNT_BY_IDENTITY, identity.provider, identity.subject)
        return self._account(row) if row is not None else None

    async def get(self, account_id: str) -> Account | None:
        key = self._sql.account_key(account_id)
        if key is None:
            return None
        row = await self._db.read_row(f"SELECT {_ACCOUNT} FROM accounts a WHERE id = $1", key)  # noqa: S608
        return self._account(row) if row is not None else None

    async def find_by_email(self, email: str) -> list[Account]:
        # A scan (no index on lower(email)): an operator's occasional look-up.
        found = await self._db.fetch(
            f"""
            SELECT {_ACCOUNT} FROM accounts a
            WHERE lower(email) = lower($1)
               OR id IN (SELECT account_id FROM identities WHERE lower(email) = lower($1))
            ORDER BY created_at, id
            """,  # noqa: S608 - constant columns
            email,
        )
        return [self._account(r) for r in found]

    async def create_with_identity(
        self, verified: VerifiedIdentity, now: dt.datetime
    ) -> tuple[Account, bool]:
        now = utc(now)
        email_verified = email_verified_of(verified)
        account = Account(
            id=str(uuid.uuid4()),
            email=verified.email,
            name=verified.name,
            created_at=now,
            last_login_at=None,
            email_verified=email_verified,
        )
        if self._db.defers_writes:
            await self._insert(self._db, account, verified)
            return account, True
        identity = verified.identity
        for _ in range(_ATTEMPTS):
            try:
                # The account and its identity commit together or not at all.
                async with self._db.atomic() as db:
                    found = await db.fetchrow(
                        _ACCOUNT_BY_IDENTITY, identity.provider, identity.subject
                    )
                    if found is not None:
                        return self._account(found), False
                    await self._insert(db, account, verified)
            except Exception as e:
                if not self._sql.is_identity_race(e):
                    raise
                continue  # registered concurrently: its account is found next round
            return account, True
        raise RuntimeError(f"could not create or find the account of {identity}")

    async def _insert(self, db: Db, account: Account, verified: VerifiedIdentity) -> None:
        """The account and its primary identity: in a unit of work whose writes wait, two of
        them (no BEGIN or COMMIT of their own; the foreign key is checked at the end of their
        one statement, when the account is there)."""
        time = self._sql.time(account.created_at)
        key = self._sql.account_key(account.id)
        account_args: list[object] = [
            key,
            verified.email,
            verified.name,
            profile_json(verified.profile),
            time,
            account.email_verified,
            None,  # last_login_at: record_login sets it here while the insert waits
        ]
        await db.write_amendable(_INSERT_ACCOUNT, account_args)
        identity = verified.identity
        await db.write(
            _INSERT_PRIMARY_IDENTITY,
            identity.provider,
            identity.subject,
            key,
            verified.email,
            time,
            account.email_verified,
        )
        self._waiting_accounts[account.id] = account_args

    async def link_identity(
        self, account_id: str, verified: VerifiedIdentity, now: dt.datetime
    ) -> None:
        key = self._sql.account_key(account_id)
        if key is None:
            raise KeyError(account_id)
        identity = verified.identity
        for _ in range(_ATTEMPTS):
            try:
                inserted = await self._db.fetchrow(
                    _LINK_IDENTITY,
                    identity.provider,
                    identity.subject,
                    key,
                    verified.email,
                    self._sql.time(now),
                    email_verified_of(verified),
                )
            except Exception as e:
                if self._sql.is_foreign_key_violation(e):
                    raise KeyError(account_id) from None
                raise
            if inserted is not None:
                return
            holder = await self._db.fetchrow(
                "SELECT account_id FROM identities WHERE provider = $1 AND subject = $2",
                identity.provider,
                identity.subject,
            )
            if holder is not None:
                if str(holder[0]) != str(key):
                    raise IdentityTaken(str(identity))
                return  # already this account's: idempotent
        raise RuntimeError(f"could not link {identity}")

    async def unlink_identity(self, account_id: str, provider: str) -> bool:
        key = self._sql.account_key(account_id)
        if key is None:
            return False
        async with self._db.transaction() as db:
            # Serialises unlinks of one account: two concurrent unlinks of its last two
            # identities must not both see "another one remains".
            providers = await locked_rows(db, self._sql, key, "provider", "identities")
            if providers is None:
                return False
            targets = [p for p in providers if p == provider]
            if not targets:
                return False
            if len(targets) == len(providers) and not await db.fetchrow(
                "SELECT true FROM passkeys WHERE account_id = $1 LIMIT 1", key
            ):
                raise LastIdentityError(account_id)
            await db.execute(
                "DELETE FROM identities WHERE account_id = $1 AND provider = $2", key, provider
            )
            return True

    async def delete(self, account_id: str) -> bool:
        key = self._sql.account_key(account_id)
        if key is None:
            return False
        # identities go with their account (ON DELETE CASCADE)
        return await self._db.execute("DELETE FROM accounts WHERE id = $1", key) == 1

    async def record_login(self, account_id: str, now: dt.datetime) -> None:
        key = self._sql.account_key(account_id)
        if key is None:
            return
        waiting = self._waiting_accounts.get(account_id)
        if waiting is not None and self._db.is_waiting(waiting):
            # Its insert has not been sent: an UPDATE in the same statement would not see the
            # row (one snapshot), so the insert carries the time.
            waiting[6] = self._sql.time(now)
            return
        await self._db.write(
            "UPDATE accounts SET last_login_at = $2 WHERE id = $1", key, self._sql.time(now)
        )

    async def list_identities(self, account_id: str) -> list[LinkedIdentity]:
        key = self._sql.account_key(account_id)
        if key is None:
            return []
        found = await self._db.read_rows(
            f"SELECT {_IDENTITY} FROM identities WHERE account_id = $1 "  # noqa: S608
            "ORDER BY linked_at, is_primary DESC, provider, subject",
            key,
        )
        return [self._linked(r) for r in found]

    async def get_identity(self, identity: ProviderIdentity) -> LinkedIdentity | None:
        row = await self._db.read_row(
            f"SELECT {_IDENTITY} FROM identities WHERE provider = $1 AND subject = $2",  # noqa: S608
            identity.provider,
            identity.subject,
        )
        return self._linked(row) if row is not None else None

    async def find_with_identity(
        self, identity: ProviderIdentity
    ) -> tuple[LinkedIdentity, Account] | None:
        row = await self._db.read_row(_WITH_IDENTITY, identity.provider, identity.subject)
        if row is None:
            return None
        return self._linked(row), self._account(row, 9)

    async def set_identity_disabled(self, identity: ProviderIdentity, reason: str | None) -> bool:
        return await self._set_identity("disabled_reason", identity, reason)

    async def set_identity_email_disabled(self, identity: ProviderIdentity, disabled: bool) -> bool:
        return await self._set_identity("email_disabled", identity, disabled)

    async def _set_identity(self, column: str, identity: ProviderIdentity, value: object) -> bool:
        changed = await self._db.execute(
            f"UPDATE identities SET {column} = $3 WHERE provider = $1 AND subject = $2",  # noqa: S608
            identity.provider,
            identity.subject,
            value,
        )
        return changed == 1

    def _account(self, row: Row, at: int = 0) -> Account:
        read = self._sql.read_time
        last_login = row[at + 4]
        return Account(
            id=str(row[at]),
            email=row[at + 1],
            name=row[at + 2],
            created_at=read(row[at + 3]),
            last_login_at=read(last_login) if last_login is not None else None,
            email_verified=bool(row[at + 5]),
        )

    def _linked(self, row: Row) -> LinkedIdentity:
        return LinkedIdentity(
            account_id=str(row[0]),
            identity=ProviderIdentity(row[1], row[2]),
            email=row[3],
            linked_at=self._sql.read_time(row[4]),
            is_primary=bool(row[5]),
            email_verified=bool(row[6]),
            disabled_reason=row[7],
            email_disabled=bool(row[8]),
        )
