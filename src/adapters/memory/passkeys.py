"""Passkeys in memory (tests, and a single instance)."""

from __future__ import annotations

import datetime as dt

import attrs

from authgate.domain.passkeys import Passkey, counter_advances
from authgate.ports.accounts import LastIdentityError
from authgate.ports.passkeys import PasskeyTaken

from .accounts import MemoryAccounts
from .journal import Stored, Table


class MemoryPasskeys(Stored):
    """:class:`~authgate.ports.passkeys.PasskeyStore` in a dict, beside ``accounts``: an
    account's deletion drops its passkeys, and the last-sign-in-method rule counts the
    account's identities and passkeys together (as the SQL stores do in one transaction)."""

    def __init__(self, accounts: MemoryAccounts) -> None:
        self._accounts = accounts
        self._passkeys: Table[str, Passkey] = Table()
        self._by_credential: Table[bytes, str] = Table()  # credential id -> passkey id
        accounts.cascade_to(self.drop_account)
        accounts.count_other_methods(self.count)

    def snapshot(self) -> dict[str, Passkey]:
        """The passkeys held (immutable: a shallow copy)."""
        return self._passkeys.copy()

    def drop_account(self, account_id: str) -> None:
        """The account was deleted: its passkeys go with it (a foreign key in SQL)."""
        mine = [p for p in self._passkeys.values() if p.account_id == account_id]
        self._by_credential.delete_where(p.credential_id for p in mine)
        self._passkeys.delete_where(p.id for p in mine)

    def count(self, account_id: str) -> int:
        return sum(1 for p in self._passkeys.values() if p.account_id == account_id)

    async def add(self, passkey: Passkey) -> None:
        if passkey.credential_id in self._by_credential or passkey.id in self._passkeys:
            raise PasskeyTaken(passkey.id)
        if await self._accounts.get(passkey.account_id) is None:
            raise KeyError(passkey.account_id)
        self._passkeys[passkey.id] = passkey
        self._by_credential[passkey.credential_id] = passkey.id

    async def find_by_credential(self, credential_id: bytes) -> Passkey | None:
        passkey_id = self._by_credential.get(credential_id)
        return self._passkeys.get(passkey_id) if passkey_id is not None else None

    async def find_for_sign_in(self, credential_id: bytes) -> tuple[Passkey, bool] | None:
        passkey = await self.find_by_credential(credential_id)
        if passkey is None:
            return None
        identities = await self._accounts.list_identities(passkey.account_id)
        return passkey, any(i.disabled_reason is not None for i in identities)

    async def get(self, account_id: str, passkey_id: str) -> Passkey | None:
        passkey = self._passkeys.get(passkey_id)
        return passkey if passkey is not None and passkey.account_id == account_id else None

    async def for_account(self, account_id: str) -> list[Passkey]:
        mine = [p for p in self._passkeys.values() if p.account_id == account_id]
        return sorted(mine, key=lambda p: (p.created_at, p.id))

    async def rename(self, account_id: str, passkey_id: str, name: str) -> Passkey | None:
        passkey = await self.get(account_id, passkey_id)
        if passkey is None:
            return None
        renamed = attrs.evolve(passkey, name=name)
        self._passkeys[passkey_id] = renamed
        return renamed

    async def record_use(
        self, passkey_id: str, sign_count: int, backed_up: bool, now: dt.datetime
    ) -> bool:
        passkey = self._passkeys.get(passkey_id)
        if passkey is None or not counter_advances(passkey.sign_count, sign_count):
            return False
        self._passkeys[passkey_id] = attrs.evolve(
            passkey, sign_count=sign_count, backed_up=backed_up, last_used_at=now
        )
        return True

    async def delete(self, account_id: str, passkey_id: str) -> bool:
        if await self.get(account_id, passkey_id) is None:
            return False
        if self.count(account_id) == 1 and self._accounts.identity_count(account_id) == 0:
            raise LastIdentityError(account_id)
        del self._by_credential[self._passkeys[passkey_id].credential_id]
        del self._passkeys[passkey_id]
        return True
