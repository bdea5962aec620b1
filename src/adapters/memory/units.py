"""A unit of work over the memory adapters (tests, and a single instance)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager

from authgate.adapters.bound_repositories import BoundRepositories, RepositoryMakers

from .accounts import MemoryAccounts
from .authorization import (
    MemoryAuthorizationCodes,
    MemoryGrants,
    MemoryRefreshTokens,
    MemorySessionClients,
)
from .events import MemoryEvents
from .journal import Journal
from .outbox import MemoryLogoutOutbox
from .passkeys import MemoryPasskeys
from .provider_tokens import MemoryProviderTokens, MemoryRevocationOutbox
from .seen_events import MemorySeenEvents
from .sessions import MemorySessionRecords


class MemoryUnitOfWork:
    """:class:`~authgate.ports.unit_of_work.UnitOfWork` on memory adapters: units run one at a
    time, and a unit that fails puts back what the adapters held when it began: each store
    notes the rows a unit writes as it writes them (a unit that only reads copies nothing).
    Writes made outside any unit while one runs would be undone by its rollback: the
    services write through units only.

    The OpenID Provider's stores (codes, refresh tokens, grants, session clients) and the
    passkeys lose an account's rows when ``accounts`` deletes it, as the SQL stores' foreign
    keys do."""

    def __init__(
        self,
        accounts: MemoryAccounts,
        events: MemoryEvents,
        sessions: MemorySessionRecords,
        seen_events: MemorySeenEvents | None = None,
        provider_tokens: MemoryProviderTokens | None = None,
        revocations: MemoryRevocationOutbox | None = None,
        *,
        authorization_codes: MemoryAuthorizationCodes | None = None,
        refresh_tokens: MemoryRefreshTokens | None = None,
        grants: MemoryGrants | None = None,
        session_clients: MemorySessionClients | None = None,
        logout_outbox: MemoryLogoutOutbox | None = None,
        passkeys: MemoryPasskeys | None = None,
    ) -> None:
        self._accounts = accounts
        self._events = events
        self._sessions = sessions
        self.seen_events = seen_events or MemorySeenEvents()
        self.provider_tokens = provider_tokens or MemoryProviderTokens()
        self.revocations = revocations or MemoryRevocationOutbox()
        self.authorization_codes = authorization_codes or MemoryAuthorizationCodes()
        self.refresh_tokens = refresh_tokens or MemoryRefreshTokens()
        self.grants = grants or MemoryGrants()
        self.session_clients = session_clients or MemorySessionClients()
        self.logout_outbox = logout_outbox or MemoryLogoutOutbox()
        self.passkeys = passkeys or MemoryPasskeys(accounts)
        # A unit hands out the stores themselves: what it wrote is put back if it raises.
        self._makers: RepositoryMakers[None] = RepositoryMakers(
            accounts=lambda _: self._accounts,
            events=lambda _: self._events,
            sessions=lambda _: self._sessions,
            seen_events=lambda _: self.seen_events,
            provider_tokens=lambda _: self.provider_tokens,
            revocations=lambda _: self.revocations,
            authorization_codes=lambda _: self.authorization_codes,
            refresh_tokens=lambda _: self.refresh_tokens,
            grants=lambda _: self.grants,
            session_clients=lambda _: self.session_clients,
            logout_outbox=lambda _: self.logout_outbox,
            passkeys=lambda _: self.passkeys,
        )
        self._journal = Journal()
        self._wire(accounts, events, sessions)
        self._lock = asyncio.Lock()

    def _wire(
        self, accounts: MemoryAccounts, events: MemoryEvents, sessions: MemorySessionRecords
    ) -> None:
        """Join the stores as the SQL schema does (cascades, the session clients' join) and
        have each note its writes in the units' journal."""
        for dependent in (
            self.authorization_codes,
            self.refresh_tokens,
            self.grants,
            self.session_clients,
        ):
            accounts.cascade_to(dependent.drop_account)
        self.session_clients.follow_sessions(sessions)
        sessions.keep_while(self.session_clients.has_session)
        for store in (
            accounts,
            events,
            sessions,
            self.seen_events,
            self.provider_tokens,
            self.revocations,
            self.authorization_codes,
            self.refresh_tokens,
            self.grants,
            self.session_clients,
            self.logout_outbox,
            self.passkeys,
        ):
            store.join(self._journal)

    @asynccontextmanager
    async def begin(self) -> AsyncIterator[BoundRepositories[None]]:
        """A unit: the rows it writes are noted as it writes them (nothing is copied before),
        and put back if it raises."""
        async with self._lock:
            self._journal.open()
            try:
                yield BoundRepositories(self._makers, None)
            except BaseException:
                self._journal.rollback()
                raise
            self._journal.commit()

    def read(self) -> AbstractAsyncContextManager[BoundRepositories[None]]:
        """A unit that only reads is an ordinary one (units run one at a time, in memory)."""
        return self.begin()
