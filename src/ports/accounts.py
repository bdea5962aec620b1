"""Accounts and the provider identities they hold."""

from __future__ import annotations

import datetime as dt
from typing import Protocol

from authgate.domain.model import Account, LinkedIdentity, ProviderIdentity, VerifiedIdentity


def email_verified_of(verified: VerifiedIdentity) -> bool:
    """The ``email_verified`` flag an adapter stores for ``verified``: True only when the
    provider gave an address and said it is verified ("did not say" is False), so an address
    nobody vouched for is never shown or used as a verified one."""
    return verified.email is not None and verified.email_verified is True


class IdentityTaken(Exception):
    """The identity is already held by another account."""


class IdentityRace(Exception):
    """A unit of work created an account for an identity that another created first (a
    concurrent first sign-in), raised when the unit ends, having written nothing: run it
    again, and it finds the other account."""


class LastIdentityError(Exception):
    """Removing the identity would leave the account with none."""


class AccountRepository(Protocol):
    """Every method is atomic on its own."""

    async def find_by_identity(self, identity: ProviderIdentity) -> Account | None:
        """The account holding this provider identity, if any."""

    async def get(self, account_id: str) -> Account | None: ...

    async def find_by_email(self, email: str) -> list[Account]:
        """The accounts whose email, or an identity's, is ``email`` ignoring case, oldest first
        (an operator's look-up: email addresses are not identities)."""

    async def create_with_identity(
        self, verified: VerifiedIdentity, now: dt.datetime
    ) -> tuple[Account, bool]:
        """(account, created): a new account holding ``verified`` as its primary identity (its
        email and :func:`email_verified_of` stored on both), or the one that already holds
        it; of concurrent calls for one identity exactly one creates (a unique constraint).
        In a unit of work an adapter may send the creation with the unit's other writes when
        it ends (one round trip), the unit then raising :class:`IdentityRace` if the identity
        was taken: a unit looks the identity up first (:meth:`find_with_identity`) and runs
        again on :class:`IdentityRace`."""

    async def link_identity(
        self, account_id: str, verified: VerifiedIdentity, now: dt.datetime
    ) -> None:
        """Attach an identity, with its own email and :func:`email_verified_of`, to an account
        (whose email stays). Idempotent; :class:`IdentityTaken` when another account holds
        it."""

    async def unlink_identity(self, account_id: str, provider: str) -> bool:
        """Remove the account's identity at ``provider``; False when it has none there,
        :class:`LastIdentityError` instead of removing the last one."""

    async def delete(self, account_id: str) -> bool:
        """Remove the account and its identities; False for an unknown id."""

    async def record_login(self, account_id: str, now: dt.datetime) -> None:
        """Set the account's last-login time."""

    async def list_identities(self, account_id: str) -> list[LinkedIdentity]:
        """The account's identities, oldest link first."""

    async def get_identity(self, identity: ProviderIdentity) -> LinkedIdentity | None:
        """The linked identity (with its provider-reported state), if an account holds it."""

    async def find_with_identity(
        self, identity: ProviderIdentity
    ) -> tuple[LinkedIdentity, Account] | None:
        """:meth:`get_identity` and :meth:`find_by_identity` in one read (what a sign-in reads
        before it writes)."""

    async def set_identity_disabled(self, identity: ProviderIdentity, reason: str | None) -> bool:
        """Refuse sign-ins through ``identity`` for ``reason``, or allow them again (None);
        False when no account holds it."""

    async def set_identity_email_disabled(self, identity: ProviderIdentity, disabled: bool) -> bool:
        """Record whether the user turned off mail forwarding to the identity's address (Apple);
        False when no account holds it."""
