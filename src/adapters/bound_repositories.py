"""The repositories of one open transaction, as the unit-of-work adapters hand them out.

Each repository is made the first time the use case asks for it, so a unit of work pays only
for what it touches: a sign-in's unit never builds the seen-events, grant or code repositories
it does not use (nor does a reader following it meet them).
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import attrs

from authgate.ports.accounts import AccountRepository
from authgate.ports.authorization import (
    AuthorizationCodes,
    Grants,
    RefreshTokens,
    SessionClients,
)
from authgate.ports.events import SignInEventLog
from authgate.ports.logout import LogoutOutbox
from authgate.ports.passkeys import PasskeyStore
from authgate.ports.provider_events import SeenEvents
from authgate.ports.provider_tokens import ProviderTokenStore, RevocationOutbox
from authgate.ports.session_records import SessionRecords


@attrs.frozen
class RepositoryMakers:
    """How a unit of work makes each of its repositories (called at most once each)."""

    accounts: Callable[[], AccountRepository]
    events: Callable[[], SignInEventLog]
    sessions: Callable[[], SessionRecords]
    seen_events: Callable[[], SeenEvents]
    provider_tokens: Callable[[], ProviderTokenStore]
    revocations: Callable[[], RevocationOutbox]
    authorization_codes: Callable[[], AuthorizationCodes]
    refresh_tokens: Callable[[], RefreshTokens]
    grants: Callable[[], Grants]
    session_clients: Callable[[], SessionClients]
    logout_outbox: Callable[[], LogoutOutbox]
    passkeys: Callable[[], PasskeyStore]


class BoundRepositories:
    """:class:`~authgate.ports.unit_of_work.Transaction`: repositories bound to one transaction,
    each made on first use."""

    def __init__(self, makers: RepositoryMakers) -> None:
        self._makers = makers

    @functools.cached_property
    def accounts(self) -> AccountRepository:
        return self._makers.accounts()

    @functools.cached_property
    def events(self) -> SignInEventLog:
        return self._makers.events()

    @functools.cached_property
    def sessions(self) -> SessionRecords:
        return self._makers.sessions()

    @functools.cached_property
    def seen_events(self) -> SeenEvents:
        return self._makers.seen_events()

    @functools.cached_property
    def provider_tokens(self) -> ProviderTokenStore:
        return self._makers.provider_tokens()

    @functools.cached_property
    def revocations(self) -> RevocationOutbox:
        return self._makers.revocations()

    @functools.cached_property
    def authorization_codes(self) -> AuthorizationCodes:
        return self._makers.authorization_codes()

    @functools.cached_property
    def refresh_tokens(self) -> RefreshTokens:
        return self._makers.refresh_tokens()

    @functools.cached_property
    def grants(self) -> Grants:
        return self._makers.grants()

    @functools.cached_property
    def session_clients(self) -> SessionClients:
        return self._makers.session_clients()

    @functools.cached_property
    def logout_outbox(self) -> LogoutOutbox:
        return self._makers.logout_outbox()

    @functools.cached_property
    def passkeys(self) -> PasskeyStore:
        return self._makers.passkeys()
