"""An outbox: work for another system, written in the transaction of the change it follows and
carried out by a background worker of any instance after that change committed: rows are
claimed with a lease by one worker at a time, then completed (done, or given up) or retried.
"""

from __future__ import annotations

import datetime as dt
from typing import Protocol, TypeVar


class Pending(Protocol):
    """What every outbox row has: ``created_at`` starts the clock of its maximum age after
    which it is given up; ``next_attempt_at`` is when it is due (again)."""

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
    """Pending rows, leased so that concurrent workers never hold one row at once; a lease
    that runs out (a worker died) makes the row claimable again: delivery is at least once."""

    async def add(self, pending: P) -> None:
        """Keep a new row (its id is new), due at its ``next_attempt_at``."""

    async def due(self, now: dt.datetime) -> bool:
        """Whether a row is due at ``now`` and not leased, writing nothing (a claim writes,
        and on SQLite takes the file's write lock even when nothing is due)."""

    async def claim(self, now: dt.datetime, lease: dt.timedelta, limit: int) -> list[P]:
        """Up to ``limit`` rows due at ``now`` and not leased, oldest due first, each now
        leased until ``now + lease``."""

    async def complete(self, pending_id: str) -> None:
        """Remove the row (done, or given up)."""

    async def retry(
        self, pending_id: str, attempts: int, next_attempt_at: dt.datetime, error: str
    ) -> None:
        """Record a failed attempt: the row is due again, unleased, at ``next_attempt_at``
        (``error``: for operators, never a token)."""

    async def pending(self) -> list[P]:
        """Every row, oldest first (tests and the operator)."""
