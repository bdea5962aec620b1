"""The tokens the grants issue, built and signed here: an RFC 9068 access token, named by its
token family so that revoking the family ends it, its ``aud`` the resource servers (RFC 8707)
asked for or else the client; an ID token signed with the client's
algorithm, without the profile and email claims, which the userinfo endpoint serves (OpenID
Connect Core section 5.4; the conformance suite warns when an ID token carries them in the
code flow), a refreshed one with the ``iss``, ``sub``, ``aud``, ``azp`` and ``auth_time`` of
the first; and, only when the person granted ``offline_access`` (OpenID Connect Core section
11), the record of a refresh token, kept as its digest only. A client's own token (the
``client_credentials`` grant: :meth:`TokenIssuer.client_tokens`) is an access token alone,
its ``sub`` the client (RFC 9068 section 2.2), without a family, a session or an ID token.
"""

from __future__ import annotations

import datetime as dt

import attrs

from authgate.domain.model import UNPROVEN_AUTH_TIME
from authgate.domain.openid.authorization_request import OFFLINE_ACCESS, OPENID
from authgate.domain.openid.clients import REFRESH_TOKEN_GRANT, Client
from authgate.domain.openid.records import AccessTokenClaims, RefreshToken, token_digest
from authgate.domain.secrets import new_secret, random_uuid_hex
from authgate.ports.jose import TokenSigner


@attrs.frozen
class IssuedTokens:
    """A successful token response (RFC 6749 section 5.1, OpenID Connect Core 3.1.3.3)."""

    access_token: str = attrs.field(repr=False)
    expires_in: int
    id_token: str | None = attrs.field(repr=False)  # none for a client's own token
    scopes: tuple[str, ...]
    refresh_token: str | None = attrs.field(default=None, repr=False)


@attrs.frozen
class Issuance:
    """What one response issues tokens for: the client, the family, the account, the session,
    the scopes, when the person authenticated in it, the request's nonce (a code's only) and
    the resource servers the access token is for (none: the client itself)."""

    client: Client
    family_id: str
    account_id: str
    session_id: str
    scopes: tuple[str, ...]
    auth_time: dt.datetime
    nonce: str | None = None
    resources: tuple[str, ...] = ()

    @property
    def proven(self) -> bool:
        """Whether the sign-in proved when the person authenticated (a signed ``auth_time``)."""
        return self.auth_time > UNPROVEN_AUTH_TIME


def refresh_record(
    token: str, issuance: Issuance, scopes: tuple[str, ...], now: dt.datetime
) -> RefreshToken:
    """What is stored of the refresh token ``token`` issued for ``issuance`` at ``now``."""
    return RefreshToken(
        token_hash=token_digest(token),
        family_id=issuance.family_id,
        client_id=issuance.client.client_id,
        account_id=issuance.account_id,
        session_id=issuance.session_id,
        scopes=scopes,
        auth_time=issuance.auth_time,
        created_at=now,
        expires_at=now + issuance.client.refresh_token_lifetime,
    )


def first_refresh_token(
    issuance: Issuance, now: dt.datetime
) -> tuple[str | None, RefreshToken | None]:
    """The refresh token a redeemed code starts its family with, and its record. With
    ``openid``, only for ``offline_access`` (OpenID Connect Core section 11); a plain OAuth
    request's (an API's scopes alone) whenever the client may use refresh tokens, as OAuth
    2.0 has it (RFC 6749 section 1.5): an agent keeps its access without asking again."""
    oauth_only = OPENID not in issuance.scopes
    if OFFLINE_ACCESS not in issuance.scopes and not (
        oauth_only and REFRESH_TOKEN_GRANT in issuance.client.grant_types
    ):
        return None, None
    token = new_secret()
    return token, refresh_record(token, issuance, issuance.scopes, now)


def access_token_claims(issuance: Issuance, now: dt.datetime) -> dict[str, object]:
    """The claims of the access token for ``issuance``, without ``iss`` (the signer stamps
    its own, the same)."""
    client = issuance.client
    claims = AccessTokenClaims(
        issuer="",
        subject=issuance.account_id,
        client_id=client.client_id,
        scopes=issuance.scopes,
        session_id=issuance.session_id,
        family_id=issuance.family_id,
        token_id=random_uuid_hex(),
        issued_at=now,
        expires_at=now + client.access_token_lifetime,
        auth_time=issuance.auth_time if issuance.proven else None,
        audience=issuance.resources,
    ).claims()
    del claims["iss"]
    return claims


def id_token_claims(issuance: Issuance, now: dt.datetime) -> dict[str, object]:
    """The claims of the ID token for ``issuance`` (the signer adds ``iss`` and ``at_hash``)."""
    client = issuance.client
    claims: dict[str, object] = {
        "sub": issuance.account_id,
        "aud": client.client_id,
        "azp": client.client_id,
        "iat": int(now.timestamp()),
        "exp": int((now + client.id_token_lifetime).timestamp()),
        "sid": issuance.session_id,
    }
    if issuance.proven:
        claims["auth_time"] = int(issuance.auth_time.timestamp())
    if issuance.nonce is not None:
        claims["nonce"] = issuance.nonce
    return claims


class TokenIssuer:
    """Signs the access and ID tokens of a token response."""

    def __init__(self, signer: TokenSigner) -> None:
        self.signer = signer

    def tokens(
        self, issuance: Issuance, now: dt.datetime, refresh_token: str | None
    ) -> IssuedTokens:
        """The token response for ``issuance`` at ``now``, with ``refresh_token`` if any."""
        client = issuance.client
        access_token = self.signer.access_token(access_token_claims(issuance, now))
        id_token = None
        if OPENID in issuance.scopes:  # else a plain OAuth request: no ID token
            id_token = self.signer.id_token(
                id_token_claims(issuance, now),
                algorithm=client.id_token_signed_response_alg,
                access_token=access_token,
            )
        return IssuedTokens(
            access_token=access_token,
            expires_in=int(client.access_token_lifetime.total_seconds()),
            id_token=id_token,
            scopes=issuance.scopes,
            refresh_token=refresh_token,
        )

    def client_tokens(
        self,
        client: Client,
        scopes: tuple[str, ...],
        resources: tuple[str, ...],
        now: dt.datetime,
    ) -> IssuedTokens:
        """The token response of the ``client_credentials`` grant: an access token for
        ``client`` itself, no ID token, no refresh token (RFC 6749 section 4.4.3)."""
        claims = AccessTokenClaims(
            issuer="",
            subject=client.client_id,
            client_id=client.client_id,
            scopes=scopes,
            session_id=None,
            family_id=None,
            token_id=random_uuid_hex(),
            issued_at=now,
            expires_at=now + client.access_token_lifetime,
            audience=resources,
        ).claims()
        del claims["iss"]
        return IssuedTokens(
            access_token=self.signer.access_token(claims),
            expires_in=int(client.access_token_lifetime.total_seconds()),
            id_token=None,
            scopes=scopes,
        )
