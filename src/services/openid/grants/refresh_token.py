"""The ``refresh_token`` grant: a refresh token rotated for new tokens.

A refresh token is rotated at every use (RFC 9700 section 4.14): the presented one is replaced
by a new one in its family; presenting a replaced one revokes the whole family. It is bound to
its client, and a refreshed access token may narrow the scope, never widen it (the new refresh
token keeps the original scope, RFC 6749 section 6). It dies with its authgate session. The
same goes for the resource servers (RFC 8707) its family was granted: ``resource`` may narrow
them for the new access token, never widen them (``invalid_target``).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping

import attrs

from authgate.domain.openid.clients import Client
from authgate.domain.openid.records import RefreshToken, token_digest
from authgate.domain.openid.refusals import InvalidGrant, InvalidScope
from authgate.domain.secrets import new_secret
from authgate.ports.openid import Reused, Rotated
from authgate.ports.unit_of_work import Transaction
from authgate.services.openid.grants.base import (
    GrantContext,
    narrowed_resources,
    requested_resources,
    required,
    security_log,
)
from authgate.services.openid.issuing import Issuance, IssuedTokens, refresh_record

REFRESH_TOKEN = "refresh_token"  # noqa: S105 - a grant type

_UNUSABLE = "the refresh token is unknown, expired or revoked"


class RefreshTokenGrant:
    """Rotates refresh tokens (RFC 6749 section 6)."""

    def __init__(self, context: GrantContext) -> None:
        self.context = context

    async def __call__(self, client: Client, form: Mapping[str, str]) -> IssuedTokens:
        """The tokens the refresh token in ``form`` earns ``client``, the access token's scope
        narrowed to the form's ``scope`` when given; raises
        :class:`~authgate.domain.openid.refusals.InvalidGrant` or
        :class:`~authgate.domain.openid.refusals.InvalidScope`."""
        presented_hash = token_digest(required(form, "refresh_token"))
        scope = form.get("scope")
        scopes = tuple(dict.fromkeys(scope.split())) if scope is not None else None
        requested_resources(client, form)  # registered ones only, before anything is spent
        now = self.context.clock.now()
        new_token = new_secret()
        stale = _Stale()
        try:
            # The common case in one read and one write: the token with its session's
            # liveness, then its replacement, which a unit of work that sends its writes
            # together sends with the grant's touch (failing with ``stale``, nothing written,
            # when the token was no longer current).
            async with self.context.units.begin() as tx:
                presented = await _presented(tx, client, presented_hash, scopes, now)
                resources = narrowed_resources(client, form, presented.resources)
                issuance = Issuance(
                    client=client,
                    family_id=presented.family_id,
                    account_id=presented.account_id,
                    session_id=presented.session_id,
                    scopes=presented.scopes,
                    auth_time=presented.auth_time,
                    resources=resources,
                )
                replacement = refresh_record(new_token, issuance, presented.scopes, now)
                replaced = await tx.refresh_tokens.replace(presented_hash, replacement, now, stale)
                if replaced:
                    await tx.grants.touch(replacement.account_id, client.client_id, now)
        except _Stale:
            replaced = False
        if not replaced:
            # Not current (any more): replaced already, revoked or expired; telling which, and
            # revoking the family of a replaced one, is the rare path's own unit.
            async with self.context.units.begin() as tx:
                refusal = await _rotate(tx, presented_hash, replacement, client, now)
            # Raised once committed: a reuse's revocation of the family stays made.
            if refusal is not None:
                raise refusal
        narrowed = attrs.evolve(issuance, scopes=scopes) if scopes is not None else issuance
        return self.context.issuer.tokens(narrowed, now, new_token)


class _Stale(Exception):
    """The presented token was no longer current when the unit sent its replacement."""


async def _presented(
    tx: Transaction,
    client: Client,
    presented_hash: str,
    scopes: tuple[str, ...] | None,
    now: dt.datetime,
) -> RefreshToken:
    """The presented refresh token, once it is the client's, its session live and ``scopes``
    within its own; raises (nothing written)."""
    found = await tx.refresh_tokens.presented(presented_hash, now)
    presented, session_live = found if found is not None else (None, False)
    if presented is None or presented.client_id != client.client_id:
        # Another client's token is refused without touching it: it is not this client's to
        # spend or to revoke.
        raise InvalidGrant(
            _UNUSABLE,
            "refresh token unknown"
            if presented is None
            else f"refresh token of client {presented.client_id} presented by another",
        )
    if not session_live:
        # The token dies with its authgate session, at once: also while the session's expiry
        # has not yet been acted on (its family revoked, its clients told).
        raise InvalidGrant(_UNUSABLE, "refresh token's session ended")
    if scopes is not None and not set(scopes) <= set(presented.scopes):
        raise InvalidScope("the scope may only narrow what was granted")
    return presented


async def _rotate(
    tx: Transaction,
    presented_hash: str,
    replacement: RefreshToken,
    client: Client,
    now: dt.datetime,
) -> InvalidGrant | None:
    """In ``tx``, once :meth:`~authgate.ports.openid.RefreshTokens.replace` found the
    presented token not current: the refusal to raise once committed when it was replaced
    before (its family is then revoked) or is no longer current; None when it rotated after
    all (nothing that stopped it changes back, so only in theory)."""
    rotated = await tx.refresh_tokens.rotate(presented_hash, replacement, now)
    if isinstance(rotated, Rotated):
        await tx.grants.touch(replacement.account_id, client.client_id, now)
        return None
    if isinstance(rotated, Reused):
        security_log.warning(
            "security event: a replaced refresh token of client %s was presented again; "
            "its family is revoked",
            client.client_id,
        )
        return InvalidGrant("the refresh token was used already", "refresh reused")
    return InvalidGrant(_UNUSABLE, "refresh token expired or revoked")
