"""Whether a token the OpenID Provider issued is active: the one check userinfo, introspection
and revocation make.

An access token (RFC 9068) or a refresh token (while current) is active while its client is
still registered, its authgate session is live (the check a session token gets:
:meth:`~authgate.services.sessions.SessionService.is_live`, whose cache a revocation clears on
every instance), its token family is live (a row every instance reads) and its account exists.
A session token is active while it verifies and its session and account stand: introspection
describes it so that ``authgate.client`` learns of a revocation at once. The checks read
through :meth:`~authgate.ports.unit_of_work.UnitOfWork.read` (on SQLite: no write lock).

A client's own access token (the ``client_credentials`` grant: no person, no session, no
family) is active while its client is still registered with that grant and its ``jti`` was not
revoked (a revocation is kept until the token expires). It speaks for no person: userinfo
refuses it (:meth:`TokenAccess.access_token` is a person's token only).

Why a token is inactive is logged, never answered: an inactive token is only inactive.
"""

from __future__ import annotations

import datetime as dt
import logging

import attrs

from authgate.domain.model import Account
from authgate.domain.openid.clients import CLIENT_CREDENTIALS_GRANT, Client
from authgate.domain.openid.records import AccessTokenClaims, RefreshToken, token_digest
from authgate.ports.clock import Clock
from authgate.ports.jose import InvalidToken, TokenSigner
from authgate.ports.session_tokens import InvalidSession
from authgate.ports.unit_of_work import UnitOfWork
from authgate.services.openid.client_directory import ClientDirectory
from authgate.services.sessions import SessionService

log = logging.getLogger("authgate.openid")

ACCESS_TOKEN = "access_token"  # noqa: S105 - a token type's name
REFRESH_TOKEN = "refresh_token"  # noqa: S105
SESSION_TOKEN = "session_token"  # noqa: S105
# No token the provider issues is longer; a longer one is not looked up.
MAX_TOKEN_LENGTH = 16 * 1024


class TokenInactive(Exception):
    """The token is not active; the text says why, for the log only."""


@attrs.frozen
class ActiveAccessToken:
    """An active access token, the account it speaks for and the client it was issued to."""

    claims: AccessTokenClaims
    account: Account
    client: Client


@attrs.frozen
class TokenDescription:
    """What introspection says of an active token (RFC 7662 section 2.2). ``token_type`` is
    :data:`ACCESS_TOKEN`, :data:`REFRESH_TOKEN` or :data:`SESSION_TOKEN`; a session token has
    no client, a refresh token no ``jti``, a client's own access token no session."""

    token_type: str
    subject: str
    scopes: tuple[str, ...]
    issuer: str
    audience: tuple[str, ...]
    expires_at: dt.datetime
    issued_at: dt.datetime | None = None
    client_id: str | None = None
    session_id: str | None = None
    token_id: str | None = None
    auth_time: dt.datetime | None = None


def _looks_like_jwt(token: str) -> bool:
    """A compact JWS (an access or session token); the provider's refresh tokens are opaque
    random text, without dots."""
    return token.count(".") == 2


@attrs.define(eq=False, repr=False, slots=False, kw_only=True)
class TokenAccess:
    """Decides whether the provider's tokens are active, describes them (introspection) and
    revokes their families (revocation)."""

    _signer: TokenSigner
    _clients: ClientDirectory
    _sessions: SessionService
    _units: UnitOfWork
    _clock: Clock

    # -- access tokens ----------------------------------------------------------------------

    async def access_token(self, token: str) -> ActiveAccessToken:
        """The active access token of a person ``token`` is, with its account; raises
        :class:`TokenInactive` (a client's own token too: it speaks for no person)."""
        now = self._clock.now()
        claims = self._access_claims(token, now)
        if claims is None:
            raise TokenInactive("not an access token of this provider, or expired")
        if claims.for_client:
            raise TokenInactive("a client's own token (client_credentials): no person")
        client, account = await self._check_access(claims, now)
        return ActiveAccessToken(claims, account, client)

    def _access_claims(self, token: str, now: dt.datetime) -> AccessTokenClaims | None:
        """The claims of an unexpired access token this provider signed; None otherwise."""
        try:
            verified = self._signer.verify_access_token(token, now)
            return AccessTokenClaims.from_claims(verified)
        except (InvalidToken, ValueError) as e:
            log.debug("not an access token: %s", e)
            return None

    async def _check_access(
        self, claims: AccessTokenClaims, now: dt.datetime
    ) -> tuple[Client, Account]:
        assert claims.session_id is not None and claims.family_id is not None  # a person's
        return await self._check_grant(
            claims.client_id, claims.session_id, claims.family_id, claims.subject, now
        )

    async def _check_client_token(self, claims: AccessTokenClaims) -> Client:
        """The client a client's own token was issued to, while the token is active; raises
        :class:`TokenInactive`."""
        client = await self._clients.find(claims.client_id)
        if client is None:
            raise TokenInactive(f"client {claims.client_id!r} is no longer registered")
        if CLIENT_CREDENTIALS_GRANT not in client.grant_types:
            raise TokenInactive(f"client {claims.client_id!r} may no longer use its own tokens")
        async with self._units.read() as tx:
            if await tx.refresh_tokens.is_token_revoked(claims.token_id):
                raise TokenInactive("it was revoked")
        return client

    async def _check_grant(
        self,
        client_id: str,
        session_id: str,
        family_id: str,
        account_id: str,
        now: dt.datetime,
    ) -> tuple[Client, Account]:
        """The account a token speaks for, once the checks of the module's text pass (access
        and refresh tokens alike); raises :class:`TokenInactive`."""
        client = await self._clients.find(client_id)
        if client is None:
            raise TokenInactive(f"client {client_id!r} is no longer registered")
        if not await self._sessions.is_live(session_id):
            raise TokenInactive("its session has ended")
        async with self._units.read() as tx:
            if not await tx.refresh_tokens.is_family_live(family_id, now):
                raise TokenInactive("its token family was revoked or has expired")
            account = await tx.accounts.get(account_id)
        if account is None:
            raise TokenInactive("its account no longer exists")
        return client, account

    # -- refresh tokens ---------------------------------------------------------------------

    async def refresh_token(self, token: str) -> RefreshToken:
        """The current refresh token ``token`` is; raises :class:`TokenInactive`."""
        now = self._clock.now()
        found = await self._refresh_record(token)
        if found is None:
            raise TokenInactive("not a refresh token of this provider")
        if not found.current(now):
            raise TokenInactive("rotated, revoked or expired")
        await self._check_grant(
            found.client_id, found.session_id, found.family_id, found.account_id, now
        )
        return found

    async def _refresh_record(self, token: str) -> RefreshToken | None:
        if not token or len(token) > MAX_TOKEN_LENGTH:
            return None
        async with self._units.read() as tx:
            return await tx.refresh_tokens.get(token_digest(token))

    # -- introspection ----------------------------------------------------------------------

    async def describe(self, token: str) -> TokenDescription | None:
        """What RFC 7662 says of ``token`` when it is active, whatever its kind (access,
        refresh or session token: each is told by its shape and its verification, never by a
        hint); None when it is not."""
        try:
            if not _looks_like_jwt(token):
                found = await self.refresh_token(token)
                return TokenDescription(
                    token_type=REFRESH_TOKEN,
                    subject=found.account_id,
                    scopes=found.scopes,
                    issuer=self._signer.issuer,
                    audience=(found.client_id,),
                    issued_at=found.created_at,
                    expires_at=found.expires_at,
                    client_id=found.client_id,
                    session_id=found.session_id,
                    auth_time=found.auth_time,
                )
            now = self._clock.now()
            claims = self._access_claims(token, now)
            if claims is not None:
                if claims.for_client:
                    await self._check_client_token(claims)
                else:
                    await self._check_access(claims, now)
                return TokenDescription(
                    token_type=ACCESS_TOKEN,
                    subject=claims.subject,
                    scopes=claims.scopes,
                    issuer=claims.issuer,
                    audience=claims.audiences,
                    issued_at=claims.issued_at,
                    expires_at=claims.expires_at,
                    client_id=claims.client_id,
                    session_id=claims.session_id,
                    token_id=claims.token_id,
                    auth_time=claims.auth_time,
                )
            return await self._describe_session(token)
        except TokenInactive as e:
            log.info("introspection: inactive token (%s)", e)
            return None

    async def _describe_session(self, token: str) -> TokenDescription:
        try:
            session = await self._sessions.verify(token)
        except InvalidSession as e:
            raise TokenInactive(f"not an active access, refresh or session token ({e})") from None
        async with self._units.read() as tx:
            account = await tx.accounts.get(session.account_id)
        if account is None:
            raise TokenInactive("its account no longer exists")
        claims = session.claims
        jti = claims.get("jti")
        return TokenDescription(
            token_type=SESSION_TOKEN,
            subject=session.account_id,
            scopes=tuple(sorted(session.scopes)),
            issuer=str(claims.get("iss", "")),
            audience=(str(claims.get("aud", "")),),
            issued_at=session.issued_at,
            expires_at=session.expires_at,
            session_id=session.session_id or None,
            token_id=jti if isinstance(jti, str) else None,
            auth_time=session.auth_time,
        )

    # -- revocation -------------------------------------------------------------------------

    async def revoke(self, client: Client, token: str) -> bool:
        """RFC 7009: when ``token`` is a refresh token or an unexpired access token issued to
        ``client``, revoke its whole family (a client's own access token: that token, kept
        revoked until it expires); whatever else it is (another client's, unknown, malformed)
        changes nothing. Whether something live was revoked."""
        now = self._clock.now()
        found: AccessTokenClaims | RefreshToken | None
        if _looks_like_jwt(token):
            kind, found = ACCESS_TOKEN, self._access_claims(token, now)
        else:
            kind, found = REFRESH_TOKEN, await self._refresh_record(token)
        if found is None or found.client_id != client.client_id:
            log.info("revocation by client %r: not one of its tokens", client.client_id)
            return False
        family_id = found.family_id
        if family_id is None:  # a client's own access token: no family
            assert isinstance(found, AccessTokenClaims)
            async with self._units.begin() as tx:
                revoked = await tx.refresh_tokens.revoke_token(
                    found.token_id, found.client_id, found.expires_at, now
                )
            log.info(
                "revocation by client %r: its own access token %s (%s)",
                client.client_id,
                found.token_id,
                "revoked" if revoked else "revoked before",
            )
            return revoked
        async with self._units.begin() as tx:
            revoked = await tx.refresh_tokens.revoke_family(family_id, now)
        log.info(
            "revocation by client %r: %s's family %s (%s)",
            client.client_id,
            kind,
            family_id,
            "revoked" if revoked else "revoked before",
        )
        return revoked
