"""The OpenID Provider's token endpoint as a use case: the ``authorization_code`` and
``refresh_token`` grants of an authenticated client, and the tokens they issue.

**A code** is redeemed once, within its minute, by the client it was issued to, with the same
``redirect_uri`` and the PKCE verifier of its challenge, while its authgate session is live
and, for a client that needs consent, while the person's grant to it covers the code's scopes
(consent withdrawn after the code was issued spends it).
Its redemption, the token family it starts (with the first refresh token, when one is issued),
the record of what it issued, the session's client (who is told when the session ends) and the
grant's last use commit together. A second presentation of the code revokes that family (RFC
6749 section 4.1.2): whoever holds a copy of the code gets nothing that still works.

**A refresh token** is rotated at every use (RFC 9700 section 4.14): the presented one is
replaced by a new one in its family; presenting a replaced one revokes the whole family. It is
bound to its client, and a refreshed access token may narrow the scope, never widen it (the
new refresh token keeps the original scope, RFC 6749 section 6). A refresh token is issued
only when the person granted ``offline_access`` (OpenID Connect Core section 11; a first-party
client needs no consent for it).

**Tokens**: an RFC 9068 access token
(:class:`~authgate.domain.openid.records.AccessTokenClaims`, named by its family so that
revoking the family ends it), and an ID token signed with the client's algorithm: ``iss``,
``sub`` (the account id), ``aud`` and ``azp`` (the client), ``exp``, ``iat``, ``auth_time``
(when the upstream provider proved it), ``nonce`` (when the request had one), ``sid`` (the
authgate session) and ``at_hash``. The profile and email claims are not in the ID token: the
userinfo endpoint serves them to the access token (OpenID Connect Core section 5.4, and the
conformance suite warns when an ID token carries them in the code flow). A refreshed ID token
keeps the ``iss``, ``sub``, ``aud``, ``azp`` and ``auth_time`` of the first."""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Mapping

import attrs

from authgate.domain.model import UNPROVEN_AUTH_TIME
from authgate.domain.openid.authorization_request import OFFLINE_ACCESS
from authgate.domain.openid.clients import Client
from authgate.domain.openid.records import (
    SESSION_CLIENT_GRACE,
    AccessTokenClaims,
    AuthorizationCode,
    RefreshToken,
    SessionClient,
    TokenFamily,
    pkce_matches,
    token_digest,
)
from authgate.domain.openid.refusals import (
    InvalidGrant,
    InvalidScope,
    OAuthInvalidRequest,
    UnsupportedGrantType,
)
from authgate.domain.secrets import new_secret, random_uuid_hex
from authgate.ports.clock import Clock
from authgate.ports.jose import TokenSigner
from authgate.ports.openid import AlreadyUsed, Reused, Rotated
from authgate.ports.unit_of_work import Transaction, UnitOfWork

security_log = logging.getLogger("authgate.security")

AUTHORIZATION_CODE = "authorization_code"
REFRESH_TOKEN = "refresh_token"  # noqa: S105 - a grant type
MAX_PARAMETER_LENGTH = 4096


@attrs.frozen
class IssuedTokens:
    """A successful token response (RFC 6749 section 5.1, OpenID Connect Core 3.1.3.3)."""

    access_token: str = attrs.field(repr=False)
    expires_in: int
    id_token: str = attrs.field(repr=False)
    scopes: tuple[str, ...]
    refresh_token: str | None = attrs.field(default=None, repr=False)


@attrs.frozen
class _Issue:
    """What one response issues tokens for: the family, the account, the session and when
    the person authenticated in it."""

    client: Client
    family_id: str
    account_id: str
    session_id: str
    scopes: tuple[str, ...]
    auth_time: dt.datetime
    nonce: str | None = None


class TokenService:
    """Redeems codes and refresh tokens for the clients that
    :class:`~authgate.services.openid.client_authentication.ClientAuthentication` authenticated."""

    def __init__(self, *, signer: TokenSigner, units: UnitOfWork, clock: Clock) -> None:
        self.signer = signer
        self.units = units
        self.clock = clock

    async def grant(self, client: Client, form: Mapping[str, str]) -> IssuedTokens:
        """The token response for ``form`` (each field once) from ``client``; raises an
        :class:`~authgate.domain.openid.refusals.OAuthError`."""
        grant_type = form.get("grant_type")
        if not grant_type:
            raise OAuthInvalidRequest("grant_type is missing")
        if grant_type == AUTHORIZATION_CODE:
            return await self.redeem_code(
                client,
                code=_required(form, "code"),
                redirect_uri=_required(form, "redirect_uri"),
                code_verifier=form.get("code_verifier"),
            )
        if grant_type == REFRESH_TOKEN:
            scope = form.get("scope")
            return await self.refresh(
                client,
                refresh_token=_required(form, "refresh_token"),
                scopes=tuple(dict.fromkeys(scope.split())) if scope is not None else None,
            )
        raise UnsupportedGrantType(
            "grant_type must be authorization_code or refresh_token",
            f"unsupported grant_type {grant_type[:40]!r}",
        )

    # -- authorization_code ---------------------------------------------------------------

    async def redeem_code(
        self, client: Client, *, code: str, redirect_uri: str, code_verifier: str | None
    ) -> IssuedTokens:
        now = self.clock.now()
        refusal: InvalidGrant | None = None
        issue: _Issue | None = None
        refresh: str | None = None
        async with self.units.begin() as tx:
            redeemed = await tx.authorization_codes.redeem(token_digest(code), now)
            if redeemed is None:
                refusal = InvalidGrant(
                    "the code is unknown or expired", "code unknown or expired unused"
                )
            elif isinstance(redeemed, AlreadyUsed):
                if redeemed.family_id is not None:
                    await tx.refresh_tokens.revoke_family(redeemed.family_id, now)
                security_log.warning(
                    "security event: authorization code of client %s presented again; "
                    "what it issued is revoked",
                    redeemed.code.client_id,
                )
                refusal = InvalidGrant("the code was used already", "code replayed")
            else:
                stored = redeemed.code
                refusal = _mismatch(stored, client, redirect_uri, code_verifier)
                session = await tx.sessions.get(stored.session_id) if refusal is None else None
                if refusal is None and (
                    session is None
                    or session.account_id != stored.account_id
                    or not session.live(now)
                ):
                    refusal = InvalidGrant(
                        "the sign-in session of this code has ended", "code's session ended"
                    )
                if refusal is None and not client.first_party:
                    refusal = await _consent_problem(tx, stored)
                if refusal is None:
                    assert session is not None
                    issue = _Issue(
                        client=client,
                        family_id=random_uuid_hex(),
                        account_id=stored.account_id,
                        session_id=stored.session_id,
                        scopes=stored.scopes,
                        auth_time=stored.auth_time,
                        nonce=stored.nonce,
                    )
                    refresh, first = self._first_refresh_token(issue, now)
                    family = TokenFamily(
                        family_id=issue.family_id,
                        client_id=client.client_id,
                        account_id=issue.account_id,
                        session_id=issue.session_id,
                        created_at=now,
                        expires_at=now + client.access_token_lifetime,
                    )
                    await tx.refresh_tokens.start_family(family, first)
                    await tx.authorization_codes.record_issued(stored.code_hash, issue.family_id)
                    await tx.session_clients.add(
                        SessionClient(
                            session_id=issue.session_id,
                            client_id=client.client_id,
                            account_id=issue.account_id,
                            first_at=now,
                            expires_at=session.absolute_expires_at + SESSION_CLIENT_GRACE,
                        )
                    )
                    await tx.grants.touch(issue.account_id, client.client_id, now)
        # Raised once committed: the code stays used, a replay's revocation stays made.
        if refusal is not None:
            raise refusal
        assert issue is not None
        return self._tokens(issue, now, refresh)

    def _first_refresh_token(
        self, issue: _Issue, now: dt.datetime
    ) -> tuple[str | None, RefreshToken | None]:
        if OFFLINE_ACCESS not in issue.scopes:
            return None, None
        token = new_secret()
        return token, self._refresh_record(token, issue, issue.scopes, now)

    def _refresh_record(
        self, token: str, issue: _Issue, scopes: tuple[str, ...], now: dt.datetime
    ) -> RefreshToken:
        return RefreshToken(
            token_hash=token_digest(token),
            family_id=issue.family_id,
            client_id=issue.client.client_id,
            account_id=issue.account_id,
            session_id=issue.session_id,
            scopes=scopes,
            auth_time=issue.auth_time,
            created_at=now,
            expires_at=now + issue.client.refresh_token_lifetime,
        )

    # -- refresh_token --------------------------------------------------------------------

    async def refresh(
        self, client: Client, *, refresh_token: str, scopes: tuple[str, ...] | None
    ) -> IssuedTokens:
        now = self.clock.now()
        presented_hash = token_digest(refresh_token)
        refusal: InvalidGrant | InvalidScope | None = None
        issue: _Issue | None = None
        new_token = new_secret()
        async with self.units.begin() as tx:
            presented = await tx.refresh_tokens.get(presented_hash)
            if presented is None or presented.client_id != client.client_id:
                # Another client's token is refused without touching it: it is not this
                # client's to spend or to revoke.
                raise InvalidGrant(
                    "the refresh token is unknown, expired or revoked",
                    "refresh token unknown"
                    if presented is None
                    else f"refresh token of client {presented.client_id} presented by another",
                )
            if not await tx.sessions.is_live(presented.session_id, now):
                # The token dies with its authgate session, at once: also while the session's
                # expiry has not yet been acted on (its family revoked, its clients told).
                raise InvalidGrant(
                    "the refresh token is unknown, expired or revoked",
                    "refresh token's session ended",
                )
            if scopes is not None and not set(scopes) <= set(presented.scopes):
                raise InvalidScope("the scope may only narrow what was granted")
            issue = _Issue(
                client=client,
                family_id=presented.family_id,
                account_id=presented.account_id,
                session_id=presented.session_id,
                scopes=presented.scopes,
                auth_time=presented.auth_time,
            )
            rotated = await tx.refresh_tokens.rotate(
                presented_hash, self._refresh_record(new_token, issue, presented.scopes, now), now
            )
            if isinstance(rotated, Rotated):
                await tx.grants.touch(issue.account_id, client.client_id, now)
            elif isinstance(rotated, Reused):
                security_log.warning(
                    "security event: a replaced refresh token of client %s was presented "
                    "again; its family is revoked",
                    client.client_id,
                )
                refusal = InvalidGrant("the refresh token was used already", "refresh reused")
            else:
                refusal = InvalidGrant(
                    "the refresh token is unknown, expired or revoked",
                    "refresh token expired or revoked",
                )
        # Raised once committed: a reuse's revocation of the family stays made.
        if refusal is not None:
            raise refusal
        narrowed = attrs.evolve(issue, scopes=scopes) if scopes is not None else issue
        return self._tokens(narrowed, now, new_token)

    # -- the tokens -----------------------------------------------------------------------

    def _tokens(self, issue: _Issue, now: dt.datetime, refresh_token: str | None) -> IssuedTokens:
        client = issue.client
        proven = issue.auth_time > UNPROVEN_AUTH_TIME
        access_claims = AccessTokenClaims(
            issuer=self.signer.issuer,
            subject=issue.account_id,
            client_id=client.client_id,
            scopes=issue.scopes,
            session_id=issue.session_id,
            family_id=issue.family_id,
            token_id=random_uuid_hex(),
            issued_at=now,
            expires_at=now + client.access_token_lifetime,
            auth_time=issue.auth_time if proven else None,
        ).claims()
        del access_claims["iss"]  # the signer stamps its own, the same
        access_token = self.signer.access_token(access_claims)
        id_claims: dict[str, object] = {
            "sub": issue.account_id,
            "aud": client.client_id,
            "azp": client.client_id,
            "iat": int(now.timestamp()),
            "exp": int((now + client.id_token_lifetime).timestamp()),
            "sid": issue.session_id,
        }
        if proven:
            id_claims["auth_time"] = int(issue.auth_time.timestamp())
        if issue.nonce is not None:
            id_claims["nonce"] = issue.nonce
        id_token = self.signer.id_token(
            id_claims, algorithm=client.id_token_signed_response_alg, access_token=access_token
        )
        return IssuedTokens(
            access_token=access_token,
            expires_in=int(client.access_token_lifetime.total_seconds()),
            id_token=id_token,
            scopes=issue.scopes,
            refresh_token=refresh_token,
        )


def _required(form: Mapping[str, str], name: str) -> str:
    value = form.get(name)
    if not value:
        raise OAuthInvalidRequest(f"{name} is missing")
    if len(value) > MAX_PARAMETER_LENGTH:
        raise OAuthInvalidRequest(f"{name} is too long")
    return value


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
