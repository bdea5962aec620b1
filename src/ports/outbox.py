"""An outbox: work for another system, written in the transaction of the change it follows and
carried out by a background worker of any instance after that change committed.

Every outbox has the same shape whatever its rows hold (a provider token to revoke, a client to
tell that a session ended): rows are added in a unit of work, claimed with a lease by one worker
at a time, then completed (done, or given up) or put back for a later attempt.
"""

from __future__ import annotations

import datetime as dt
from typing import Protocol, TypeVar


class Pending(Protocol):
    """What every outbox row has: its id, when it was written (the clock of its maximum age),
    and how many attempts were made."""

    @property
    def id(self) -> str: ...

    @property
    def created_at(self) -> dt.datetime: ...

    @property
    def next_attempt_at(self) -> dt.datetime: ...

    @property
    def attempts(self) -> int: ...


P = TypeVar("P", bound=Pending)


class Outbox(Protocol[P]):
    """Pending rows. ``claim`` leases rows so that concurrent workers (other instances) never
    hold the same row at once; a lease that runs out (a worker died) makes the row claimable
    again: delivery is at least once."""

    async def add(self, pending: P) -> None:
        """Keep a new row (its id is new), due at its ``next_attempt_at``."""
        ...

    async def due(self, now: dt.datetime) -> bool:
        """Whether a row is due at ``now`` and not leased: a look that writes nothing, which
        a worker takes before it claims (a claim writes, and on SQLite takes the file's write
        lock even when nothing is due)."""
        ...

    async def claim(self, now: dt.datetime, lease: dt.timedelta, limit: int) -> list[P]:
        """Up to ``limit`` rows due at ``now`` and not leased, oldest due first, each now
        leased until ``now + lease``."""
        ...

    async def complete(self, pending_id: str) -> None:
        """Remove the row (done, or given up)."""
        ...

    async def retry(
        self, pending_id: str, attempts: int, next_attempt_at: dt.datetime, error: str
    ) -> None:
        """Record a failed attempt: the row is due again at ``next_attempt_at``, unleased.
        ``error`` is for operators (never a token)."""
        ...

    async def pending(self) -> list[P]:
        """Every row, oldest first (tests and the operator)."""
        ...
