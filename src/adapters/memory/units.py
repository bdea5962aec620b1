"""A unit of work over the memory adapters (tests, and a single instance)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager

from authgate.adapters.bound_repositories import BoundRepositories

from .accounts import MemoryAccounts
from .authorization import (
    MemoryAuthorizationCodes,
    MemoryGrants,
    MemoryRefreshTokens,
    MemorySessionClients,
)
from .clients import MemoryStoredClients
from .device_authorizations import MemoryDeviceAuthorizations
from .events import MemoryEvents, MemorySeenEvents
from .journal import Journal, Stored
from .outbox import MemoryLogoutOutbox, MemoryProviderTokens, MemoryRevocationOutbox
from .passkeys import MemoryPasskeys
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
        device_authorizations: MemoryDeviceAuthorizations | None = None,
        stored_clients: MemoryStoredClients | None = None,
    ) -> None:
        # A unit hands out the stores themselves: what it wrote is put back if it raises.
        self.accounts = accounts
        self.events = events
        self.sessions = sessions
        self.seen_events = seen_events or MemorySeenEvents()
        self.provider_tokens = provider_tokens or MemoryProviderTokens()
        self.revocations = revocations or MemoryRevocationOutbox()
        self.authorization_codes = authorization_codes or MemoryAuthorizationCodes()
        self.refresh_tokens = refresh_tokens or MemoryRefreshTokens()
        self.grants = grants or MemoryGrants()
        self.session_clients = session_clients or MemorySessionClients()
        self.logout_outbox = logout_outbox or MemoryLogoutOutbox()
        self.passkeys = passkeys or MemoryPasskeys(accounts)
        self.device_authorizations = device_authorizations or MemoryDeviceAuthorizations()
        self.stored_clients = stored_clients or MemoryStoredClients()
        stores: list[Stored] = list(vars(self).values())
        self._journal = Journal()
        for store in stores:
            store.join(self._journal)
        # Joined as the SQL schema joins the tables (cascades, the session clients' join).
        for dependent in (
            self.authorization_codes,
            self.refresh_tokens,
            self.grants,
            self.session_clients,
            self.device_authorizations,
        ):
            accounts.cascade_to(dependent.drop_account)
        self.session_clients.follow_sessions(sessions)
        self.refresh_tokens.follow_sessions(sessions)
        sessions.keep_while(self.session_clients.has_session)
        self._lock = asyncio.Lock()

    @asynccontextmanager
    async def begin(self) -> AsyncIterator[BoundRepositories[None]]:
        """A unit: the rows it writes are noted as it writes them (nothing is copied before),
        and put back if it raises."""
        async with self._lock:
            self._journal.open()
            try:
                yield BoundRepositories(self, None)
            except BaseException:
                self._journal.rollback()
                raise
            self._journal.commit()

    def read(self) -> AbstractAsyncContextManager[BoundRepositories[None]]:
        """A unit that only reads is an ordinary one (units run one at a time, in memory)."""
        return self.begin()
