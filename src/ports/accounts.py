"""Accounts and the provider identities they hold."""

from __future__ import annotations

import datetime as dt
from typing import Protocol

from authgate.domain.model import Account, LinkedIdentity, ProviderIdentity, VerifiedIdentity


def email_verified_of(verified: VerifiedIdentity) -> bool:
    """The ``email_verified`` flag an adapter stores for ``verified``: True only when the
    provider gave an address and explicitly said it is verified. False and "did not say"
    (None, e.g. a profile endpoint that does not report it) are both stored as False, so an
    address nobody vouched for is never shown or used as a verified one."""
    return verified.email is not None and verified.email_verified is True


class IdentityTaken(Exception):
    """The identity is already held by another account."""


class IdentityRace(Exception):
    """A unit of work created an account for an identity that another unit created first
    (a concurrent first sign-in). Raised when the unit ends, which then wrote nothing: run
    it again, and it finds the other unit's account."""


class LastIdentityError(Exception):
    """Removing the identity would leave the account with none."""


class AccountRepository(Protocol):
    """Every method is atomic on its own (one transaction in SQL adapters)."""

    async def find_by_identity(self, identity: ProviderIdentity) -> Account | None:
        """The account holding this provider identity, if any."""
        ...

    async def get(self, account_id: str) -> Account | None: ...

    async def find_by_email(self, email: str) -> list[Account]:
        """The accounts whose email, or the email of an identity they hold, is ``email``
        ignoring case (an operator's look-up, not a sign-in path: email addresses are not
        identities and several accounts may share one), oldest first."""
        ...

    async def create_with_identity(
        self, verified: VerifiedIdentity, now: dt.datetime
    ) -> tuple[Account, bool]:
        """Create an account holding ``verified`` as its primary identity, or return the account
        that already holds it. The account's email and ``email_verified`` are the identity's
        (:func:`email_verified_of`), stored on both. Returns (account, created). Concurrent
        calls for one identity create exactly one account (a unique constraint, not a
        check-then-insert).

        In a unit of work an adapter may instead send the creation with the unit's other writes
        when the unit ends (one round trip instead of a transaction of its own): it then
        returns the new account as created, and the unit raises :class:`IdentityRace` when
        it ends if the identity was taken, so a unit looks the identity up first
        (:meth:`find_with_identity`) and runs again on :class:`IdentityRace`."""
        ...

    async def link_identity(
        self, account_id: str, verified: VerifiedIdentity, now: dt.datetime
    ) -> None:
        """Attach an identity to an account, with its own email and ``email_verified``
        (:func:`email_verified_of`); the account's email stays as it is. Idempotent for an
        identity the account already holds; raises :class:`IdentityTaken` when another account
        holds it."""
        ...

    async def unlink_identity(self, account_id: str, provider: str) -> bool:
        """Remove the account's identity at ``provider``. Returns False when it has none there;
        raises :class:`LastIdentityError` instead of removing the last one."""
        ...

    async def delete(self, account_id: str) -> bool:
        """Remove the account and every identity it holds, together; False for an unknown id."""
        ...

    async def record_login(self, account_id: str, now: dt.datetime) -> None:
        """Set the account's last-login time."""
        ...

    async def list_identities(self, account_id: str) -> list[LinkedIdentity]:
        """The account's identities, oldest link first."""
        ...

    async def get_identity(self, identity: ProviderIdentity) -> LinkedIdentity | None:
        """The linked identity (with its provider-reported state), if an account holds it."""
        ...

    async def find_with_identity(
        self, identity: ProviderIdentity
    ) -> tuple[LinkedIdentity, Account] | None:
        """:meth:`get_identity` and :meth:`find_by_identity` together, read at once (one
        statement in SQL adapters: what a sign-in reads before it writes)."""
        ...

    async def set_identity_disabled(self, identity: ProviderIdentity, reason: str | None) -> bool:
        """Refuse sign-ins through ``identity`` (``reason``: why, as the provider said), or
        allow them again (None). False when no account holds it."""
        ...

    async def set_identity_email_disabled(self, identity: ProviderIdentity, disabled: bool) -> bool:
        """Record whether the user turned off mail forwarding to the identity's address (Apple
        email-disabled / email-enabled). False when no account holds it."""
        ...
