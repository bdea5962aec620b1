"""The device code grant (RFC 8628 section 3.4): a device polls with its device code until
the person approved or denied its request on the verification page.

Each poll is one unit of work on the request's row, locked: before the person answered it is
``authorization_pending``, or ``slow_down`` when it came sooner than the interval after the
last one (the interval then grows by five seconds, section 3.5); ``access_denied`` once
denied; ``expired_token`` once expired. Approved, the first poll takes the request (``used``)
and gets the tokens of the code flow, bound to the session the person approved in (the ID
token's ``sid``, ended with it): an access token, an ID token, and a refresh token with
``offline_access``. A device code presented again is ``invalid_grant``."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping

from authgate.domain.model import UNPROVEN_AUTH_TIME
from authgate.domain.openid.clients import DEVICE_CODE_GRANT, Client
from authgate.domain.openid.device import (
    DENIED,
    PENDING,
    SLOW_DOWN_SECONDS,
    USED,
    DeviceAuthorization,
)
from authgate.domain.openid.records import (
    SESSION_CLIENT_GRACE,
    SessionClient,
    TokenFamily,
    token_digest,
)
from authgate.domain.openid.refusals import (
    AccessDenied,
    AuthorizationPending,
    ExpiredToken,
    InvalidGrant,
    OAuthError,
    SlowDown,
)
from authgate.domain.secrets import random_uuid_hex
from authgate.ports.unit_of_work import Transaction
from authgate.services.openid.grants.base import GrantContext, required, security_log
from authgate.services.openid.issuing import Issuance, IssuedTokens, first_refresh_token

DEVICE_CODE = DEVICE_CODE_GRANT

# What a poll that commits leads to: tokens to issue (with the first refresh token, if any),
# or the answer raised once the unit of work committed (the poll's time stays recorded).
_Polled = tuple[Issuance, str | None] | OAuthError


class DeviceCodeGrant:
    """Answers a device's polls (RFC 8628 section 3.4 and 3.5)."""

    def __init__(self, context: GrantContext) -> None:
        self.context = context

    async def __call__(self, client: Client, form: Mapping[str, str]) -> IssuedTokens:
        """The tokens the approved request of the device code in ``form`` earns ``client``;
        raises the RFC 8628 answers (:class:`AuthorizationPending`, :class:`SlowDown`,
        :class:`AccessDenied`, :class:`ExpiredToken`) or :class:`InvalidGrant`."""
        device_code = required(form, "device_code")
        now = self.context.clock.now()
        async with self.context.units.begin() as tx:
            polled = await _poll(tx, client, token_digest(device_code), now)
        if isinstance(polled, OAuthError):
            raise polled
        issuance, refresh_token = polled
        return self.context.issuer.tokens(issuance, now, refresh_token)


async def _poll(tx: Transaction, client: Client, digest: str, now: dt.datetime) -> _Polled:
    store = tx.device_authorizations
    found = await store.polling(digest)
    if found is None:
        return InvalidGrant("the device_code is unknown", "device code unknown")
    if found.client_id != client.client_id:
        security_log.warning(
            "security event: client %s presented a device code issued to client %s",
            client.client_id,
            found.client_id,
        )
        return InvalidGrant(
            "the device_code was issued to another client", "device code of another client"
        )
    if found.status == USED:
        return InvalidGrant("the device_code was used already", "device code presented again")
    if not found.live(now):
        return ExpiredToken("the device_code expired; start again")
    if found.status == DENIED:
        return AccessDenied("the person denied the request")
    if found.status == PENDING:
        if found.polled_too_soon(now):
            await store.polled(digest, now, found.interval + SLOW_DOWN_SECONDS)
            return SlowDown(
                f"polling too fast: wait {found.interval + SLOW_DOWN_SECONDS} seconds "
                "between requests"
            )
        await store.polled(digest, now, found.interval)
        return AuthorizationPending("the person has not approved the request yet")
    used = await store.use(digest, now)
    if used is None:  # a concurrent poll took it first
        return InvalidGrant("the device_code was used already", "device code raced")
    return await _issue(tx, client, used, now)


async def _issue(
    tx: Transaction, client: Client, used: DeviceAuthorization, now: dt.datetime
) -> _Polled:
    """In ``tx``: the token family the approved request starts (its first refresh token with
    ``offline_access``), while the session it was approved in is live and, for a client that
    needs consent, the person's grant still covers its scopes."""
    account_id, session_id = used.account_id, used.session_id
    assert account_id is not None and session_id is not None  # set with its approval
    session = await tx.sessions.get(session_id)
    if session is None or session.account_id != account_id or not session.live(now):
        return InvalidGrant("the sign-in session that approved this request has ended")
    if not client.first_party:
        grant = await tx.grants.get(account_id, client.client_id)
        if grant is None or not set(used.scopes) <= grant.scopes:
            return InvalidGrant("the consent this request was approved under was withdrawn")
    issuance = Issuance(
        client=client,
        family_id=random_uuid_hex(),
        account_id=account_id,
        session_id=session_id,
        scopes=used.scopes,
        auth_time=used.auth_time or UNPROVEN_AUTH_TIME,
    )
    refresh_token, first = first_refresh_token(issuance, now)
    family = TokenFamily(
        family_id=issuance.family_id,
        client_id=client.client_id,
        account_id=account_id,
        session_id=session_id,
        created_at=now,
        expires_at=now + client.access_token_lifetime,
    )
    await tx.refresh_tokens.start_family(family, first)
    await tx.session_clients.add(
        SessionClient(
            session_id=session_id,
            client_id=client.client_id,
            account_id=account_id,
            first_at=now,
            expires_at=session.absolute_expires_at + SESSION_CLIENT_GRACE,
        )
    )
    await tx.grants.touch(account_id, client.client_id, now)
    return issuance, refresh_token
