"""The repositories of one open transaction, as the unit-of-work adapters hand them out.

Each repository is made the first time the use case asks for it, so a unit of work pays only
for what it touches: a sign-in's unit never builds the seen-events, grant or code repositories
it does not use (nor does a reader following it meet them).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, TypeVar

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
R = TypeVar("R")


@attrs.frozen
class RepositoryMakers(Generic[Handle]):
    """How a unit-of-work adapter makes each repository from a unit's handle (fixed once per
    adapter; called at most once each per unit)."""

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


class _Made(Generic[R]):
    """A repository of a :class:`BoundRepositories`, made on first use by the maker of its
    name and kept in the instance (which then shadows this descriptor)."""

    def __set_name__(self, owner: type, name: str) -> None:
        self._name = name

    def __get__(self, bound: BoundRepositories[Any], owner: type | None = None) -> R:
        made: R = getattr(bound._makers, self._name)(bound._handle)
        bound.__dict__[self._name] = made
        return made


class BoundRepositories(Generic[Handle]):
    """:class:`~authgate.ports.unit_of_work.Transaction`: repositories bound to one transaction
    (``handle``), each made on first use."""

    def __init__(self, makers: RepositoryMakers[Handle], handle: Handle) -> None:
        self._makers = makers
        self._handle = handle

    accounts = _Made[AccountRepository]()
    events = _Made[SignInEventLog]()
    sessions = _Made[SessionRecords]()
    seen_events = _Made[SeenEvents]()
    provider_tokens = _Made[ProviderTokenStore]()
    revocations = _Made[RevocationOutbox]()
    authorization_codes = _Made[AuthorizationCodes]()
    refresh_tokens = _Made[RefreshTokens]()
    grants = _Made[Grants]()
    session_clients = _Made[SessionClients]()
    logout_outbox = _Made[LogoutOutbox]()
    passkeys = _Made[PasskeyStore]()
