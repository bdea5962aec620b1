"""The repositories of one open transaction, as the unit-of-work adapters hand them out.

Each repository is made the first time the use case asks for it, so a unit of work pays only
for what it touches: a sign-in's unit never builds the seen-events, grant or code repositories
it does not use (nor does a reader following it meet them). How each is made
(:class:`RepositoryMakers`) is fixed once per unit-of-work adapter; a unit brings only what
its repositories are bound to (its connection, its database handle).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Generic, TypeVar

import attrs

from authgate.ports.accounts import AccountRepository
from authgate.ports.events import SignInEventLog
from authgate.ports.openid import (
    AuthorizationCodes,
    Grants,
    LogoutOutbox,
    RefreshTokens,
    SessionClients,
)
from authgate.ports.passkeys import PasskeyStore
from authgate.ports.provider_events import SeenEvents
from authgate.ports.provider_tokens import ProviderTokenStore, RevocationOutbox
from authgate.ports.session_records import SessionRecords

Handle = TypeVar("Handle")
"""What a unit's repositories are bound to (a connection, a database handle)."""


@attrs.frozen
class RepositoryMakers(Generic[Handle]):
    """How a unit of work makes each of its repositories from the unit's handle (called at most
    once each per unit)."""

    accounts: Callable[[Handle], AccountRepository]
    events: Callable[[Handle], SignInEventLog]
    sessions: Callable[[Handle], SessionRecords]
    seen_events: Callable[[Handle], SeenEvents]
    provider_tokens: Callable[[Handle], ProviderTokenStore]
    revocations: Callable[[Handle], RevocationOutbox]
    authorization_codes: Callable[[Handle], AuthorizationCodes]
    refresh_tokens: Callable[[Handle], RefreshTokens]
    grants: Callable[[Handle], Grants]
    session_clients: Callable[[Handle], SessionClients]
    logout_outbox: Callable[[Handle], LogoutOutbox]
    passkeys: Callable[[Handle], PasskeyStore]


class BoundRepositories(Generic[Handle]):
    """:class:`~authgate.ports.unit_of_work.Transaction`: repositories bound to one transaction
    (``handle``), each made on first use."""

    def __init__(self, makers: RepositoryMakers[Handle], handle: Handle) -> None:
        self._makers = makers
        self._handle = handle

    @functools.cached_property
    def accounts(self) -> AccountRepository:
        return self._makers.accounts(self._handle)

    @functools.cached_property
    def events(self) -> SignInEventLog:
        return self._makers.events(self._handle)

    @functools.cached_property
    def sessions(self) -> SessionRecords:
        return self._makers.sessions(self._handle)

    @functools.cached_property
    def seen_events(self) -> SeenEvents:
        return self._makers.seen_events(self._handle)

    @functools.cached_property
    def provider_tokens(self) -> ProviderTokenStore:
        return self._makers.provider_tokens(self._handle)

    @functools.cached_property
    def revocations(self) -> RevocationOutbox:
        return self._makers.revocations(self._handle)

    @functools.cached_property
    def authorization_codes(self) -> AuthorizationCodes:
        return self._makers.authorization_codes(self._handle)

    @functools.cached_property
    def refresh_tokens(self) -> RefreshTokens:
        return self._makers.refresh_tokens(self._handle)

    @functools.cached_property
    def grants(self) -> Grants:
        return self._makers.grants(self._handle)

    @functools.cached_property
    def session_clients(self) -> SessionClients:
        return self._makers.session_clients(self._handle)

    @functools.cached_property
    def logout_outbox(self) -> LogoutOutbox:
        return self._makers.logout_outbox(self._handle)

    @functools.cached_property
    def passkeys(self) -> PasskeyStore:
        return self._makers.passkeys(self._handle)
