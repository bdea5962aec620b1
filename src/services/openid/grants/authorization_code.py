"""The ``authorization_code`` grant: a code redeemed for tokens.

A code is redeemed once, within its minute, by the client it was issued to, with the same
``redirect_uri`` and the PKCE verifier of its challenge, while its authgate session is live
and, for a client that needs consent, while the person's grant to it covers the code's scopes
(consent withdrawn after the code was issued spends it). What a redemption writes commits
together (:func:`_start_family`); presenting the code again revokes the family it started (RFC
6749 section 4.1.2): whoever holds a copy of the code gets nothing that still works.

The resource servers the authorization request named (RFC 8707) go to the family; the token
request's ``resource`` may narrow them for this access token, never widen them (a code that
named none gets tokens for the client itself only): ``invalid_target``, the code not spent.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping

import attrs

from authgate.domain.model import SessionRecord
from authgate.domain.openid.clients import Client
from authgate.domain.openid.records import (
    SESSION_CLIENT_GRACE,
    AuthorizationCode,
    SessionClient,
    TokenFamily,
    pkce_matches,
    token_digest,
)
from authgate.domain.openid.refusals import InvalidGrant
from authgate.domain.secrets import random_uuid_hex
from authgate.ports.openid import AlreadyUsed
from authgate.ports.unit_of_work import Transaction
from authgate.services.openid.grants.base import (
    GrantContext,
    narrowed_resources,
    requested_resources,
    required,
    security_log,
)
from authgate.services.openid.issuing import Issuance, IssuedTokens, first_refresh_token

AUTHORIZATION_CODE = "authorization_code"


# What a redemption that commits leads to: tokens to issue (with the first refresh token, if
# any), or the refusal raised once the unit of work committed.
_Redeemed = tuple[Issuance, str | None] | InvalidGrant


class AuthorizationCodeGrant:
    """Redeems authorization codes (RFC 6749 section 4.1.3, OpenID Connect Core 3.1.3)."""

    def __init__(self, context: GrantContext) -> None:
        self.context = context

    async def __call__(self, client: Client, form: Mapping[str, str]) -> IssuedTokens:
        """The tokens the code in ``form`` earns ``client``; raises
        :class:`~authgate.domain.openid.refusals.InvalidGrant`."""
        code, redirect_uri = required(form, "code"), required(form, "redirect_uri")
        requested_resources(client, form)  # registered ones only, before the code is spent
        now = self.context.clock.now()
        async with self.context.units.begin() as tx:
            redeemed = await _redeem(tx, client, code, redirect_uri, form.get("code_verifier"), now)
            if not isinstance(redeemed, InvalidGrant):
                # Raised within the unit: a resource the code was not granted leaves it unspent.
                resources = narrowed_resources(client, form, redeemed[0].resources)
        # Raised once committed: the code stays used, a replay's revocation stays made.
        if isinstance(redeemed, InvalidGrant):
            raise redeemed
        issuance, refresh_token = redeemed
        narrowed = attrs.evolve(issuance, resources=resources)
        return self.context.issuer.tokens(narrowed, now, refresh_token)


async def _redeem(
    tx: Transaction,
    client: Client,
    code: str,
    redirect_uri: str,
    verifier: str | None,
    now: dt.datetime,
) -> _Redeemed:
    """In ``tx``: spend the code and, when every check passes, start its token family."""
    redeemed = await tx.authorization_codes.redeem(token_digest(code), now)
    if redeemed is None:
        return InvalidGrant("the code is unknown or expired", "code unknown or expired unused")
    if isinstance(redeemed, AlreadyUsed):
        return await _replayed(tx, redeemed, now)
    stored = redeemed.code
    refusal = _mismatch(stored, client, redirect_uri, verifier)
    if refusal is not None:
        return refusal
    session = await tx.sessions.get(stored.session_id)
    if session is None or session.account_id != stored.account_id or not session.live(now):
        return InvalidGrant("the sign-in session of this code has ended", "code's session ended")
    if not client.first_party:
        refusal = await _consent_problem(tx, stored)
        if refusal is not None:
            return refusal
    return await _start_family(tx, client, stored, session, now)


async def _replayed(tx: Transaction, redeemed: AlreadyUsed, now: dt.datetime) -> InvalidGrant:
    """A code presented again: what it issued is revoked."""
    if redeemed.family_id is not None:
        await tx.refresh_tokens.revoke_family(redeemed.family_id, now)
    security_log.warning(
        "security event: authorization code of client %s presented again; "
        "what it issued is revoked",
        redeemed.code.client_id,
    )
    return InvalidGrant("the code was used already", "code replayed")


async def _start_family(
    tx: Transaction,
    client: Client,
    code: AuthorizationCode,
    session: SessionRecord,
    now: dt.datetime,
) -> tuple[Issuance, str | None]:
    """In ``tx``: the token family the code starts (with its first refresh token), the record
    of what the code issued, the session's client and the grant's last use."""
    issuance = Issuance(
        client=client,
        family_id=random_uuid_hex(),
        account_id=code.account_id,
        session_id=code.session_id,
        scopes=code.scopes,
        auth_time=code.auth_time,
        nonce=code.nonce,
        resources=code.resources,
    )
    refresh_token, first = first_refresh_token(issuance, now)
    family = TokenFamily(
        family_id=issuance.family_id,
        client_id=client.client_id,
        account_id=issuance.account_id,
        session_id=issuance.session_id,
        created_at=now,
        expires_at=now + client.access_token_lifetime,
        resources=code.resources,
    )
    await tx.refresh_tokens.start_family(family, first)
    await tx.authorization_codes.record_issued(code.code_hash, issuance.family_id)
    await tx.session_clients.add(
        SessionClient(
            session_id=issuance.session_id,
            client_id=client.client_id,
            account_id=issuance.account_id,
            first_at=now,
            expires_at=session.absolute_expires_at + SESSION_CLIENT_GRACE,
        )
    )
    await tx.grants.touch(issuance.account_id, client.client_id, now)
    return issuance, refresh_token


async def _consent_problem(tx: Transaction, code: AuthorizationCode) -> InvalidGrant | None:
    """Why the code of a client that needs consent may not be exchanged: the person's grant to
    the client no longer covers its scopes (withdrawn after the code was issued), or None.
    Read once the code is redeemed, in the same unit of work: a concurrent withdrawal either
    reaches the code after this unit (the code's row lock) and then revokes the family it
    starts, or spent the code first (the redemption finds none) or committed first (this
    read finds no grant)."""
    grant = await tx.grants.get(code.account_id, code.client_id)
    if grant is None or not set(code.scopes) <= grant.scopes:
        security_log.info(
            "authorization code of client %s presented after the consent was withdrawn",
            code.client_id,
        )
        return InvalidGrant(
            "the consent this code was issued under was withdrawn", "code's consent withdrawn"
        )
    return None


def _mismatch(
    code: AuthorizationCode, client: Client, redirect_uri: str, verifier: str | None
) -> InvalidGrant | None:
    """Why the redeemed code may not be exchanged by this request, or None."""
    if code.client_id != client.client_id:
        security_log.warning(
            "security event: client %s presented a code issued to client %s",
            client.client_id,
            code.client_id,
        )
        return InvalidGrant("the code was issued to another client", "code of another client")
    if redirect_uri != code.redirect_uri:
        return InvalidGrant(
            "redirect_uri is not the one of the authorization request", "redirect_uri differs"
        )
    if not verifier or not pkce_matches(verifier, code.code_challenge):
        return InvalidGrant("code_verifier does not match the code_challenge", "PKCE mismatch")
    return None
