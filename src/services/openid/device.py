"""The OAuth 2.0 Device Authorization Grant (RFC 8628) as use cases: a device (a command-line
tool, a television) asks for authorization and gets a device code to poll with and a user
code; the person opens the verification page on another screen, signs in, types the code
and approves or denies; the device's polls at the token endpoint then get their tokens
(:mod:`authgate.services.openid.grants.device_code`).

Only clients registered with the device code grant type may ask. The scopes are those of
the code flow (``openid`` among them); approving a client that is not first-party records
the person's consent to those scopes, as the consent page does, so that the application is
listed among the person's and withdrawing the consent ends what it was issued."""

from __future__ import annotations

import datetime as dt

import attrs

from authgate.domain.model import UNPROVEN_AUTH_TIME
from authgate.domain.openid.authorization_request import OPENID
from authgate.domain.openid.clients import DEVICE_CODE_GRANT, SUPPORTED_SCOPES, Client
from authgate.domain.openid.device import (
    PENDING,
    DeviceAuthorization,
    new_user_code,
    normalise_user_code,
    user_code_digest,
)
from authgate.domain.openid.records import Grant, token_digest
from authgate.domain.openid.refusals import InvalidScope, UnauthorizedClient
from authgate.domain.secrets import new_secret
from authgate.ports.clock import Clock
from authgate.ports.session_tokens import SessionClaims
from authgate.ports.unit_of_work import UnitOfWork
from authgate.services.openid.client_directory import ClientDirectory

# How many times a new user code is drawn when the one drawn is pending already (with ten
# thousand pending requests, one draw in 2.6 million collides).
_DRAWS = 5


@attrs.frozen
class DevicePolicy:
    """``lifetime``: how long a device's request waits for the person (``expires_in``);
    ``interval``: the seconds a device waits between polls (RFC 8628 says five)."""

    lifetime: dt.timedelta = dt.timedelta(seconds=600)
    interval: int = 5


@attrs.frozen
class DeviceStarted:
    """The device authorization response (RFC 8628 section 3.2), without the addresses the
    endpoint adds: ``user_code`` normalised (eight letters)."""

    device_code: str = attrs.field(repr=False)
    user_code: str = attrs.field(repr=False)
    expires_in: int
    interval: int
    scopes: tuple[str, ...]


@attrs.frozen
class DeviceRequest:
    """A pending request as the verification page shows it: the client and the scopes,
    found by the user code the person typed (normalised)."""

    authorization: DeviceAuthorization
    client: Client
    user_code: str


class DeviceRequestUnknown(Exception):
    """No pending, unexpired request has this user code (typed wrong, expired, or decided
    already)."""


@attrs.define(eq=False, repr=False, slots=False, kw_only=True)
class DeviceAuthorizationService:
    """Starts device requests and records the person's decision on them."""

    clients: ClientDirectory
    units: UnitOfWork
    clock: Clock
    policy: DevicePolicy = attrs.field(factory=DevicePolicy)

    async def start(self, client: Client, scope: str | None) -> DeviceStarted:
        """A new request of the authenticated ``client`` for ``scope`` (absent: ``openid``);
        raises :class:`~authgate.domain.openid.refusals.UnauthorizedClient` for a client not
        registered with the grant, :class:`~authgate.domain.openid.refusals.InvalidScope`."""
        if DEVICE_CODE_GRANT not in client.grant_types:
            raise UnauthorizedClient(
                "the client may not use the device authorization grant",
                f"client {client.client_id!r}: {DEVICE_CODE_GRANT} is not registered",
            )
        scopes = _scopes(client, scope)
        device_code = new_secret()
        now = self.clock.now()
        async with self.units.begin() as tx:
            for _ in range(_DRAWS):
                user_code = new_user_code()
                if await tx.device_authorizations.pending(user_code_digest(user_code), now) is None:
                    break
            else:  # pragma: no cover - one collision in millions, five in a row never
                raise RuntimeError("no free user code could be drawn")
            await tx.device_authorizations.add(
                DeviceAuthorization(
                    device_code_hash=token_digest(device_code),
                    user_code_hash=user_code_digest(user_code),
                    client_id=client.client_id,
                    scopes=scopes,
                    status=PENDING,
                    created_at=now,
                    expires_at=now + self.policy.lifetime,
                    interval=self.policy.interval,
                )
            )
        return DeviceStarted(
            device_code=device_code,
            user_code=user_code,
            expires_in=int(self.policy.lifetime.total_seconds()),
            interval=self.policy.interval,
            scopes=scopes,
        )

    async def find(self, typed: str) -> DeviceRequest:
        """The pending request of the user code a person typed; raises
        :class:`DeviceRequestUnknown`."""
        code = normalise_user_code(typed)
        if code is None:
            raise DeviceRequestUnknown()
        async with self.units.read() as tx:
            found = await tx.device_authorizations.pending(user_code_digest(code), self.clock.now())
        if found is None:
            raise DeviceRequestUnknown()
        client = await self.clients.find(found.client_id)
        if client is None or DEVICE_CODE_GRANT not in client.grant_types:
            raise DeviceRequestUnknown()  # the client was removed meanwhile
        return DeviceRequest(found, client, code)

    async def decide(
        self, request: DeviceRequest, session: SessionClaims, *, approved: bool
    ) -> DeviceAuthorization:
        """The person's answer in ``session``: approved (with consent recorded for a client
        that needs it) or denied, while the request is still pending; raises
        :class:`DeviceRequestUnknown` when it is not (answered already, expired)."""
        now = self.clock.now()
        client = request.client
        async with self.units.begin() as tx:
            decided = await tx.device_authorizations.decide(
                user_code_digest(request.user_code),
                now,
                approved=approved,
                account_id=session.account_id,
                session_id=session.session_id,
                auth_time=session.auth_time or UNPROVEN_AUTH_TIME,
            )
            if decided is None:
                raise DeviceRequestUnknown()
            if approved and not client.first_party:
                grant = Grant(session.account_id, client.client_id, decided.scopes, granted_at=now)
                await tx.grants.put(grant)
        return decided


def _scopes(client: Client, scope: str | None) -> tuple[str, ...]:
    """The scopes asked that the provider serves, each once, in order (absent: ``openid``):
    ``openid`` among them, each allowed to the client, as in the code flow."""
    asked = dict.fromkeys((scope or OPENID).split())
    scopes = tuple(s for s in asked if s in SUPPORTED_SCOPES)
    if OPENID not in scopes:
        raise InvalidScope("scope must include openid")
    refused = [s for s in scopes if s not in client.allowed_scopes]
    if refused:
        raise InvalidScope("scope not allowed for this client: " + " ".join(refused))
    return scopes
