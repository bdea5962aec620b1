"""A unit of work over the memory adapters (tests, and a single instance)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from authgate.adapters.bound_repositories import BoundRepositories

from .accounts import MemoryAccounts
from .events import MemoryEvents
from .provider_tokens import MemoryProviderTokens, MemoryRevocationOutbox
from .seen_events import MemorySeenEvents
from .sessions import MemorySessionRecords


class MemoryUnitOfWork:
    """:class:`~authgate.ports.unit_of_work.UnitOfWork` on memory adapters: units run one at a
    time, and a unit that fails puts back what the adapters held when it began. Writes made
    outside any unit while one runs would be undone by its rollback: the services write
    through units only."""

    def __init__(
        self,
        accounts: MemoryAccounts,
        events: MemoryEvents,
        sessions: MemorySessionRecords,
        seen_events: MemorySeenEvents | None = None,
        provider_tokens: MemoryProviderTokens | None = None,
        revocations: MemoryRevocationOutbox | None = None,
    ) -> None:
        self._accounts = accounts
        self._events = events
        self._sessions = sessions
        self.seen_events = seen_events or MemorySeenEvents()
        self.provider_tokens = provider_tokens or MemoryProviderTokens()
        self.revocations = revocations or MemoryRevocationOutbox()
        self._lock = asyncio.Lock()

    @asynccontextmanager
    async def begin(self) -> AsyncIterator[BoundRepositories]:
        async with self._lock:
            accounts, events = self._accounts.snapshot(), self._events.snapshot()
            sessions, seen = self._sessions.snapshot(), self.seen_events.snapshot()
            tokens, revocations = self.provider_tokens.snapshot(), self.revocations.snapshot()
            try:
                yield BoundRepositories(
                    self._accounts,
                    self._events,
                    self._sessions,
                    self.seen_events,
                    self.provider_tokens,
                    self.revocations,
                )
            except BaseException:
                self._accounts.restore(accounts)
                self._events.restore(events)
                self._sessions.restore(sessions)
                self.seen_events.restore(seen)
                self.provider_tokens.restore(tokens)
                self.revocations.restore(revocations)
                raise
