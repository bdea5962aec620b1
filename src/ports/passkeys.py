"""Passkeys of accounts, and the challenges of their ceremonies.

The credentials live with the account (a unit of work's ``passkeys``): adding one, using one
to sign in and removing one are written in the transaction of their audit event and session.
Challenges are short-lived rows like pending sign-ins: single use, found by the browser that
asked and the ceremony together, dropped when they expire.
"""

from __future__ import annotations

import datetime as dt
from typing import Protocol

from authgate.domain.passkeys import Ceremony, Passkey, PasskeyChallenge


class PasskeyTaken(Exception):
    """A passkey with this credential id is kept already (for this or another account)."""


class ChallengeStoreFull(Exception):
    """The store holds as many challenges as it may; nothing was stored."""


class PasskeyStore(Protocol):
    """Every method is atomic on its own (one statement or transaction in SQL adapters)."""

    async def add(self, passkey: Passkey) -> None:
        """Keep a new passkey; :class:`PasskeyTaken` when its credential id is kept already
        (nothing is written then)."""
        ...

    async def find_by_credential(self, credential_id: bytes) -> Passkey | None:
        """The passkey with this credential id, whichever account holds it."""
        ...

    async def get(self, account_id: str, passkey_id: str) -> Passkey | None:
        """The account's passkey of that id; None for another account's."""
        ...

    async def for_account(self, account_id: str) -> list[Passkey]:
        """The account's passkeys, oldest first."""
        ...

    async def rename(self, account_id: str, passkey_id: str, name: str) -> Passkey | None:
        """Give the account's passkey a new name; the passkey as it now is, None when the
        account has no such passkey."""
        ...

    async def record_use(
        self, passkey_id: str, sign_count: int, backed_up: bool, now: dt.datetime
    ) -> bool:
        """A verified sign-in with the passkey: its counter, backup state and last use, written
        only if the counter kept now allows ``sign_count``
        (:func:`~authgate.domain.passkeys.counter_advances`), decided and written in one
        conditional statement: of concurrent sign-ins reporting the same counter, exactly one
        records it. False (nothing written) when the counter does not advance or the passkey
        is gone."""
        ...

    async def delete(self, account_id: str, passkey_id: str) -> bool:
        """Remove the account's passkey; False when it has no such passkey. Raises
        :class:`~authgate.ports.accounts.LastIdentityError` instead of removing the account's
        last sign-in method (no linked identity and no other passkey remain)."""
        ...


class PasskeyChallenges(Protocol):
    async def put(self, challenge: PasskeyChallenge) -> None:
        """Keep a challenge. One of the same browser and ceremony replaces it (a browser
        answers its newest challenge). Raises :class:`ChallengeStoreFull` when the store may
        hold no more."""
        ...

    async def take(
        self, binding_hash: str, ceremony: Ceremony, now: dt.datetime
    ) -> PasskeyChallenge | None:
        """Remove and return the browser's challenge of ``ceremony``, atomically (of
        concurrent takes exactly one gets it); None when there is none or it expired."""
        ...

    async def purge_expired(self, now: dt.datetime) -> int:
        """Drop expired challenges; how many."""
        ...
