"""The repositories of one open transaction, as the unit-of-work adapters hand them out.

Each repository is made the first time the use case asks for it, so a unit of work pays only
for what it touches: a sign-in's unit never builds the seen-events, grant or code repositories
it does not use (nor does a reader following it meet them).
"""

from __future__ import annotations

from typing import Any, Generic, TypeVar

from authgate.ports.accounts import AccountRepository
from authgate.ports.device_authorizations import DeviceAuthorizations
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
from authgate.ports.stored_clients import StoredClients

Handle = TypeVar("Handle")
"""What a unit's repositories are bound to (a connection, a database handle)."""
R = TypeVar("R")


class _Made(Generic[R]):
    """A repository of a :class:`BoundRepositories`: the adapter's repository of its name
    ``bound`` to the unit's handle on first use, kept in the instance (which then shadows this
    descriptor)."""

    def __set_name__(self, owner: type, name: str) -> None:
        self._name = name

    def __get__(self, bound: BoundRepositories[Any], owner: type | None = None) -> R:
        made: R = getattr(bound._repositories, self._name).bound(bound._handle)
        bound.__dict__[self._name] = made
        return made


class BoundRepositories(Generic[Handle]):
    """:class:`~authgate.ports.unit_of_work.Transaction`: the repositories of ``repositories``
    (each with a ``bound(handle)``) bound to one transaction (``handle``), each on first use."""

    def __init__(self, repositories: object, handle: Handle) -> None:
        self._repositories = repositories
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
    device_authorizations = _Made[DeviceAuthorizations]()
    stored_clients = _Made[StoredClients]()
