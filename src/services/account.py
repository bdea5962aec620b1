"""The caller's account: what it holds, and unlinking a provider from it."""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from authgate.domain import errors
from authgate.domain.model import Account, LinkedIdentity
from authgate.ports.accounts import AccountRepository, LastIdentityError
from authgate.ports.unit_of_work import UnitOfWork


@attrs.frozen
class AccountView:
    """An account with the provider identities it holds, oldest link first."""

    account: Account
    identities: list[LinkedIdentity]


class AccountService:
    """Reads and changes the signed-in caller's account; raises the domain's errors."""

    def __init__(
        self, *, accounts: AccountRepository, units: UnitOfWork, providers: Sequence[str]
    ) -> None:
        self.accounts = accounts
        self.units = units
        self.providers = tuple(providers)  # configured order: the order of error messages

    async def linked_providers(self, account_id: str) -> list[LinkedIdentity]:
        """Spec 4.4: the caller's links; an empty list when there are none."""
        return await self.accounts.list_identities(account_id)

    async def account(self, account_id: str) -> AccountView:
        """The caller's account; :class:`~errors.AccountGone` when it was deleted."""
        account = await self.accounts.get(account_id)
        if account is None:
            raise errors.AccountGone()
        return AccountView(account, await self.accounts.list_identities(account_id))

    async def unlink(self, account_id: str, provider: str) -> list[LinkedIdentity]:
        """Remove the caller's identity at ``provider``; the identities that remain.

        Never the last one (its owner could not sign in again): :class:`~errors.LastIdentity`.
        :class:`~errors.InvalidProvider` for a provider this service does not know and the
        account does not hold; :class:`~errors.IdentityNotLinked` for a known one it does not
        hold."""
        try:
            async with self.units.begin() as tx:
                removed = await tx.accounts.unlink_identity(account_id, provider)
        except LastIdentityError:
            raise errors.LastIdentity(provider) from None
        if not removed:
            if provider not in self.providers:
                raise errors.InvalidProvider(provider, self.providers)
            raise errors.IdentityNotLinked(provider)
        return await self.accounts.list_identities(account_id)
