"""Passkeys of accounts (written in a unit of work with their audit event and session), and
the challenges of their ceremonies (single use, like pending sign-ins)."""

from __future__ import annotations

import datetime as dt
from typing import Protocol

from authgate.domain.passkeys import Ceremony, Passkey, PasskeyChallenge


class PasskeyTaken(Exception):
    """A passkey with this credential id is kept already (for this or another account)."""


class ChallengeStoreFull(Exception):
    """The store holds as many challenges as it may; nothing was stored."""


class PasskeyUseNotRecorded(Exception):
    """Raised by a unit of work that sends its writes together, at its end: the passkey's use
    (:meth:`PasskeyStore.record_use`) changed no row, so nothing of the unit was written."""


class PasskeyStore(Protocol):
    """Every method is atomic on its own (one statement or transaction in SQL adapters)."""

    async def add(self, passkey: Passkey) -> None:
        """Keep a new passkey; :class:`PasskeyTaken`, nothing written, when its credential id
        is kept already."""

    async def find_by_credential(self, credential_id: bytes) -> Passkey | None:
        """The passkey with this credential id, whichever account holds it."""

    async def find_for_sign_in(self, credential_id: bytes) -> tuple[Passkey, bool] | None:
        """:meth:`find_by_credential` and, in the same read, whether the passkey's account holds
        an identity a provider reported disabled (a sign-in's one look-up)."""

    async def get(self, account_id: str, passkey_id: str) -> Passkey | None:
        """The account's passkey of that id; None for another account's."""

    async def for_account(self, account_id: str) -> list[Passkey]:
        """The account's passkeys, oldest first."""

    async def rename(self, account_id: str, passkey_id: str, name: str) -> Passkey | None:
        """Rename the account's passkey; the passkey as it now is, None when there is none."""

    async def record_use(
        self, passkey_id: str, sign_count: int, backed_up: bool, now: dt.datetime
    ) -> bool:
        """A verified sign-in with the passkey: its counter, backup state and last use, written
        in one conditional statement only if the kept counter allows ``sign_count``
        (:func:`~authgate.domain.passkeys.counter_advances`), so of concurrent sign-ins with
        one counter exactly one records it. False, nothing written, otherwise; in a unit of
        work that sends its writes together (PostgreSQL's), True, and the unit raises
        :class:`PasskeyUseNotRecorded` at its end, nothing of it written."""

    async def delete(self, account_id: str, passkey_id: str) -> bool:
        """Remove the account's passkey; False when there is none,
        :class:`~authgate.ports.accounts.LastIdentityError` instead of removing the account's
        last sign-in method."""


class PasskeyChallenges(Protocol):
    async def put(self, challenge: PasskeyChallenge) -> None:
        """Keep a challenge, replacing one of the same browser and ceremony (a browser answers
        its newest); :class:`ChallengeStoreFull` when the store may hold no more."""

    async def take(
        self, binding_hash: str, ceremony: Ceremony, now: dt.datetime
    ) -> PasskeyChallenge | None:
        """Remove and return the browser's unexpired challenge of ``ceremony``, atomically (of
        concurrent takes exactly one gets it)."""

    async def purge_expired(self, now: dt.datetime) -> int:
        """Drop expired challenges; how many."""
