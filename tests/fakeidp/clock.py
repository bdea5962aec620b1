"""A clock that tests can move, shared by the fake identity provider and the adapter."""

from __future__ import annotations

import datetime as dt


class SettableClock:
    """Real time plus an offset that tests advance (``authgate.ports.clock.Clock``)."""

    def __init__(self) -> None:
        self.offset = dt.timedelta()

    def now(self) -> dt.datetime:
        return dt.datetime.now(dt.UTC) + self.offset

    def timestamp(self) -> float:
        return self.now().timestamp()

    def advance(self, seconds: float) -> None:
        self.offset += dt.timedelta(seconds=seconds)
