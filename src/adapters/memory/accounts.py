"""Accounts in memory."""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Callable
from typing import Any

import attrs

from authgate.domain.model import Account, LinkedIdentity, ProviderIdentity, VerifiedIdentity
from authgate.ports.accounts import IdentityTaken, LastIdentityError, email_verified_of

from .journal import Stored, Table


class MemoryAccounts(Stored):
    def __init__(self) -> None:
        self._accounts: Table[str, Account] = Table()
        self._identities: Table[ProviderIdentity, LinkedIdentity] = Table()
        self._dependents: list[Callable[[str], None]] = []
        self._other_methods: list[Callable[[str], int]] = []

    def cascade_to(self, drop_account: Callable[[str], None]) -> None:
        """Have ``drop_account(account_id)`` called whenever an account is deleted: what the
        SQL stores' ``ON DELETE CASCADE`` does for the rows that name it."""
        self._dependents.append(drop_account)

    def count_other_methods(self, count: Callable[[str], int]) -> None:
        """Have ``count(account_id)`` (the account's passkeys) counted with its identities by
        the last-sign-in-method rule of :meth:`unlink_identity`."""
        self._other_methods.append(count)

    def identity_count(self, account_id: str) -> int:
        """How many identities the account holds."""
        return sum(1 for i in self._identities.values() if i.account_id == account_id)

    def snapshot(self) -> tuple[dict[str, Account], dict[ProviderIdentity, LinkedIdentity]]:
        """What the adapter holds (the records are immutable: shallow copies suffice)."""
        return self._accounts.copy(), self._identities.copy()

    async def find_by_identity(self, identity: ProviderIdentity) -> Account | None:
        linked = self._identities.get(identity)
        return self._accounts.get(linked.account_id) if linked else None

    async def get(self, account_id: str) -> Account | None:
        return self._accounts.get(account_id)

    async def find_by_email(self, email: str) -> list[Account]:
        wanted = email.lower()
        ids = {a.id for a in self._accounts.values() if (a.email or "").lower() == wanted}
        ids |= {
            i.account_id for i in self._identities.values() if (i.email or "").lower() == wanted
        }
        found = [self._accounts[i] for i in ids if i in self._accounts]
        return sorted(found, key=lambda a: (a.created_at, a.id))

    async def create_with_identity(
        self, verified: VerifiedIdentity, now: dt.datetime
    ) -> tuple[Account, bool]:
        existing = self._identities.get(verified.identity)
        if existing is not None:
            return self._accounts[existing.account_id], False
        account = Account(
            id=str(uuid.uuid4()),
            email=verified.email,
            name=verified.name,
            created_at=now,
            last_login_at=None,
            email_verified=email_verified_of(verified),
        )
        self._accounts[account.id] = account
        self._link(account.id, verified, now, primary=True)
        return account, True

    def _link(
        self, account_id: str, verified: VerifiedIdentity, now: dt.datetime, *, primary: bool
    ) -> None:
        self._identities[verified.identity] = LinkedIdentity(
            account_id=account_id,
            identity=verified.identity,
            email=verified.email,
            linked_at=now,
            is_primary=primary,
            email_verified=email_verified_of(verified),
        )

    async def link_identity(
        self, account_id: str, verified: VerifiedIdentity, now: dt.datetime
    ) -> None:
        existing = self._identities.get(verified.identity)
        if existing is not None:
            if existing.account_id != account_id:
                raise IdentityTaken(str(verified.identity))
            return
        if account_id not in self._accounts:
            raise KeyError(account_id)
        self._link(account_id, verified, now, primary=False)

    async def delete(self, account_id: str) -> bool:
        if self._accounts.pop(account_id) is None:
            return False
        self._identities.delete_if(lambda i: i.account_id == account_id)
        for drop in self._dependents:
            drop(account_id)
        return True

    async def unlink_identity(self, account_id: str, provider: str) -> bool:
        mine = [i for i in self._identities.values() if i.account_id == account_id]
        targets = [i for i in mine if i.identity.provider == provider]
        if not targets:
            return False
        if len(mine) == len(targets) and not any(c(account_id) for c in self._other_methods):
            raise LastIdentityError(account_id)
        for target in targets:
            del self._identities[target.identity]
        return True

    async def record_login(self, account_id: str, now: dt.datetime) -> None:
        account = self._accounts.get(account_id)
        if account is not None:
            self._accounts[account_id] = attrs.evolve(account, last_login_at=now)

    async def list_identities(self, account_id: str) -> list[LinkedIdentity]:
        mine = [i for i in self._identities.values() if i.account_id == account_id]
        return sorted(mine, key=lambda i: (i.linked_at, not i.is_primary))

    async def get_identity(self, identity: ProviderIdentity) -> LinkedIdentity | None:
        return self._identities.get(identity)

    async def find_with_identity(
        self, identity: ProviderIdentity
    ) -> tuple[LinkedIdentity, Account] | None:
        linked = self._identities.get(identity)
        account = self._accounts.get(linked.account_id) if linked else None
        return (linked, account) if linked is not None and account is not None else None

    async def set_identity_disabled(self, identity: ProviderIdentity, reason: str | None) -> bool:
        return self._set_identity(identity, disabled_reason=reason)

    async def set_identity_email_disabled(self, identity: ProviderIdentity, disabled: bool) -> bool:
        return self._set_identity(identity, email_disabled=disabled)

    def _set_identity(self, identity: ProviderIdentity, **changes: Any) -> bool:
        linked = self._identities.get(identity)
        if linked is None:
            return False
        self._identities[identity] = attrs.evolve(linked, **changes)
        return True
