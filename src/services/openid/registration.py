"""Clients kept in the database: found by every endpoint through :class:`StoredClientSource`,
registered and managed by the clients themselves (RFC 7591 and RFC 7592,
:class:`ClientRegistration`) or by the operator (``authgate clients``,
:class:`ClientAdministration`).

A registration answers the client's secret (a confidential client's) and its registration
access token once: only their digests are kept. An initial access token (``policy:
initial_access_token``) is spent in the unit of work that keeps the client, so a token is good
for exactly one registration. Removing a client revokes its token families and removes every
grant to it in the same unit of work: nothing it was given keeps working.
"""

from __future__ import annotations

import datetime as dt
import hmac
import logging
import re
import secrets
from collections.abc import Container, Mapping
from typing import Any

import attrs

from authgate.domain.openid.clients import Client, SecretDigest
from authgate.domain.openid.records import token_digest
from authgate.domain.openid.refusals import (
    InvalidAccessToken,
    NoAccessToken,
    OAuthInvalidRequest,
)
from authgate.domain.openid.registration import (
    OPERATOR_POLICY,
    ClientMetadata,
    InitialAccessToken,
    InvalidClientMetadata,
    RegistrationPolicy,
    StoredClient,
    StoredOrigin,
    read_metadata,
)
from authgate.ports.clock import Clock
from authgate.ports.unit_of_work import Transaction, UnitOfWork

log = logging.getLogger("authgate.openid")

# RFC 6749 appendix A.1, without the space (the configuration's rule for a client_id).
CLIENT_ID = re.compile(r"[\x21-\x7e]{1,255}")
_SECRET_BYTES = 32  # 43 characters of base64url: above MIN_SECRET_LENGTH
_TOKEN_BYTES = 32


class ClientIdTaken(Exception):
    """The operator's client_id is a configured client's, or a stored one's."""


class StoredClientSource:
    """:class:`~authgate.ports.openid.ClientSource` over the stored clients: one read per
    lookup, so a client removed or changed is seen by the next request of every instance."""

    def __init__(self, units: UnitOfWork) -> None:
        self._units = units

    async def find(self, client_id: str) -> Client | None:
        async with self._units.read() as tx:
            return await self.find_in(tx, client_id)

    async def find_in(self, tx: Transaction, client_id: str) -> Client | None:
        stored = await tx.stored_clients.get(client_id)
        return stored.client() if stored is not None else None


@attrs.frozen
class Registered:
    """A client as kept, with what is shown once: its secret (None for a public client, or
    when an update kept the secret it had) and its registration access token (None when
    unchanged, or for the operator's clients)."""

    client: StoredClient
    secret: str | None = None
    registration_token: str | None = None


def _new_secrets(metadata: ClientMetadata) -> tuple[str | None, tuple[SecretDigest, ...]]:
    if not metadata.has_secret:
        return None, ()
    secret = secrets.token_urlsafe(_SECRET_BYTES)
    return secret, (SecretDigest.of(secret),)


async def _remove(tx: Transaction, client_id: str, now: dt.datetime) -> list[str] | None:
    """Forget the client, revoke its families and remove its grants; the families revoked, or
    None when there was no such stored client."""
    if not await tx.stored_clients.remove(client_id):
        return None
    await tx.grants.remove_all_of_client(client_id)
    return await tx.refresh_tokens.revoke_all_of_client(client_id, now)


@attrs.define(eq=False, slots=False, kw_only=True)
class ClientRegistration:
    """RFC 7591 registration and RFC 7592 management, under the operator's ``policy``.
    ``open``: no initial access token is needed. ``reserved``: the client_ids no registration
    may take (the configured clients', the session tokens' audience)."""

    units: UnitOfWork
    clock: Clock
    policy: RegistrationPolicy
    open: bool = False
    reserved: Container[str] = ()

    async def register(self, document: object, initial_token: str | None) -> Registered:
        """Keep a new client from its metadata (RFC 7591 section 3.1): with an initial access
        token unless registration is open, spent here."""
        if not self.open and initial_token is None:
            raise NoAccessToken()
        metadata = read_metadata(document, self.policy)
        now = self.clock.now()
        secret, digests = _new_secrets(metadata)
        token = secrets.token_urlsafe(_TOKEN_BYTES)
        async with self.units.begin() as tx:
            if initial_token is not None and not self.open:
                spent = await tx.stored_clients.spend_initial_token(
                    token_digest(initial_token), now
                )
                if not spent:
                    raise InvalidAccessToken("the initial access token is unknown, used or expired")
            for _ in range(3):  # a random id collides with nothing in practice
                client = StoredClient(
                    client_id=secrets.token_urlsafe(18),
                    metadata=metadata,
                    origin="registration",
                    created_at=now,
                    updated_at=now,
                    secrets=digests,
                    registration_token_hash=token_digest(token),
                )
                if client.client_id not in self.reserved and await tx.stored_clients.add(client):
                    break
            else:  # pragma: no cover - 144 random bits
                raise RuntimeError("no free client_id")
        log.info(
            "client %s registered (%s)",
            client.client_id,
            client.metadata.token_endpoint_auth_method,
        )
        return Registered(client, secret, token)

    async def read(self, client_id: str, token: str) -> StoredClient:
        """The client, for its registration access token (RFC 7592 section 2.1)."""
        async with self.units.read() as tx:
            return await self._authorized(tx, client_id, token)

    async def update(self, client_id: str, token: str, document: object) -> Registered:
        """Replace the client's metadata (RFC 7592 section 2.2): the body names the client,
        and a ``client_secret`` in it must be the client's. Its secret is kept while it
        authenticates with one; a client that becomes confidential gets a new one."""
        if not isinstance(document, Mapping):
            raise InvalidClientMetadata("the body must be a JSON object of client metadata")
        if document.get("client_id") != client_id:
            raise OAuthInvalidRequest("the body's client_id must be the client's")
        metadata = read_metadata(document, self.policy)
        now = self.clock.now()
        async with self.units.begin() as tx:
            kept = await self._authorized(tx, client_id, token)
            presented = document.get("client_secret")
            if presented is not None and not kept.client().secret_matches(str(presented)):
                raise InvalidClientMetadata("client_secret: not the client's secret")
            secret, digests = None, kept.secrets
            if not metadata.has_secret:
                digests = ()
            elif not digests:
                secret, digests = _new_secrets(metadata)
            client = attrs.evolve(kept, metadata=metadata, secrets=digests, updated_at=now)
            await tx.stored_clients.replace(client)
        return Registered(client, secret)

    async def delete(self, client_id: str, token: str) -> None:
        """Deprovision the client (RFC 7592 section 2.3): its token families revoked and its
        grants removed with it."""
        now = self.clock.now()
        async with self.units.begin() as tx:
            await self._authorized(tx, client_id, token)
            await _remove(tx, client_id, now)
        log.info("client %s deleted by its registration access token", client_id)

    async def _authorized(self, tx: Transaction, client_id: str, token: str) -> StoredClient:
        """The stored client whose registration access token ``token`` is; an unknown client
        is refused as a wrong token is (RFC 7592 section 2.1: 401, telling nothing)."""
        stored = await tx.stored_clients.get(client_id)
        presented = token_digest(token)
        if stored is None or stored.registration_token_hash is None:
            raise InvalidAccessToken("no client of this registration access token")
        if not hmac.compare_digest(presented, stored.registration_token_hash):
            raise InvalidAccessToken("not the client's registration access token")
        return stored


@attrs.define(eq=False, slots=False, kw_only=True)
class ClientAdministration:
    """The operator's commands on stored clients: add (any metadata the provider supports),
    list, remove, and initial access tokens."""

    units: UnitOfWork
    clock: Clock
    reserved: Container[str] = ()

    async def add(self, document: Mapping[str, Any], client_id: str | None = None) -> Registered:
        """Keep the client ``document`` describes (RFC 7591 metadata), under ``client_id`` or
        a new one; its secret, if it has one, is shown once. :class:`ClientIdTaken`,
        :class:`InvalidClientMetadata`."""
        metadata = read_metadata(document, OPERATOR_POLICY)
        if client_id is not None and not CLIENT_ID.fullmatch(client_id):
            raise InvalidClientMetadata("client_id: 1 to 255 printable ASCII characters, no space")
        chosen = client_id or secrets.token_urlsafe(18)
        if chosen in self.reserved:
            raise ClientIdTaken(f"{chosen} is a client of the configuration")
        now = self.clock.now()
        secret, digests = _new_secrets(metadata)
        origin: StoredOrigin = "operator"
        client = StoredClient(chosen, metadata, origin, now, now, digests)
        async with self.units.begin() as tx:
            if not await tx.stored_clients.add(client):
                raise ClientIdTaken(f"a stored client {chosen} exists already")
        return Registered(client, secret)

    async def all(self) -> list[StoredClient]:
        async with self.units.read() as tx:
            return await tx.stored_clients.all()

    async def get(self, client_id: str) -> StoredClient | None:
        async with self.units.read() as tx:
            return await tx.stored_clients.get(client_id)

    async def remove(self, client_id: str) -> list[str] | None:
        """Remove the stored client, revoking its families and grants; the families revoked,
        None when there is no such stored client."""
        async with self.units.begin() as tx:
            return await _remove(tx, client_id, self.clock.now())

    async def initial_token(self, lifetime: dt.timedelta) -> tuple[str, InitialAccessToken]:
        """A new initial access token, good for one registration within ``lifetime``."""
        token = secrets.token_urlsafe(_TOKEN_BYTES)
        now = self.clock.now()
        kept = InitialAccessToken(token_digest(token), now, now + lifetime)
        async with self.units.begin() as tx:
            await tx.stored_clients.add_initial_token(kept)
        return token, kept
