"""What authgate as an OpenID Provider keeps of its clients' codes, refresh tokens, consents
and sessions, and the pure checks on them. Codes and refresh tokens are kept only as their
digest (:func:`token_digest`): a copy of the database never yields a usable one."""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import hmac
import re
from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from authgate.domain.secrets import pkce_challenge

# OAuth 2.0 recommends ten minutes at most; a client redeems its code at once, so a minute is
# plenty and narrows the window of a leak.
CODE_MAX_LIFETIME = dt.timedelta(seconds=60)

# RFC 7636 section 4.1: code_verifier = 43*128unreserved, unreserved = ALPHA / DIGIT / "-" /
# "." / "_" / "~".
_CODE_VERIFIER = re.compile(r"[A-Za-z0-9\-._~]{43,128}")


def token_digest(value: str) -> str:
    """What is stored of a code or refresh token: its SHA-256, base64url without padding (its
    entropy needs no salt or slow hash)."""
    digest = hashlib.sha256(value.encode()).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def is_code_verifier(verifier: str) -> bool:
    """Whether ``verifier`` has the syntax RFC 7636 requires."""
    return _CODE_VERIFIER.fullmatch(verifier) is not None


def pkce_matches(verifier: str, challenge: str) -> bool:
    """Whether ``verifier`` is well formed and its S256 challenge is ``challenge``, compared in
    constant time (``plain`` is never accepted: the challenge is always S256)."""
    return is_code_verifier(verifier) and hmac.compare_digest(
        pkce_challenge(verifier).encode(), challenge.encode()
    )


def _scope_tuple(scopes: Iterable[str]) -> tuple[str, ...]:
    return tuple(scopes)


def _scope_set(scopes: Iterable[str]) -> frozenset[str]:
    return frozenset(scopes)


@attrs.frozen
class AuthorizationCode:
    """An issued authorization code, by its digest, bound to the client, the request's
    ``redirect_uri`` and PKCE ``code_challenge``. ``session_id`` is the authgate session it
    was issued in (the ID token's ``sid``); ``auth_time`` when the person last authenticated;
    ``resources`` the resource servers (RFC 8707) the request named, which the token request
    may narrow, never widen."""

    code_hash: str
    client_id: str
    account_id: str
    session_id: str
    redirect_uri: str
    scopes: tuple[str, ...] = attrs.field(converter=_scope_tuple)
    nonce: str | None
    code_challenge: str
    auth_time: dt.datetime
    created_at: dt.datetime
    expires_at: dt.datetime
    resources: tuple[str, ...] = attrs.field(default=(), converter=_scope_tuple)

    def __attrs_post_init__(self) -> None:
        lifetime = self.expires_at - self.created_at
        if not dt.timedelta(0) < lifetime <= CODE_MAX_LIFETIME:
            raise ValueError(f"an authorization code lives at most {CODE_MAX_LIFETIME}")

    def live(self, now: dt.datetime) -> bool:
        """Not expired at ``now`` (whether it was redeemed is the store's to say)."""
        return now < self.expires_at


@attrs.frozen
class TokenFamily:
    """Everything issued from one redeemed authorization code: its refresh tokens and the
    access tokens naming it, all ended at once by revoking it (a code presented twice, a
    replaced refresh token presented again (RFC 9700 section 4.14), the session ending,
    consent withdrawn). ``expires_at`` moves later as refresh tokens rotate. ``resources``:
    the resource servers (RFC 8707) its code was granted for, which a refresh may narrow,
    never widen."""

    family_id: str
    client_id: str
    account_id: str
    session_id: str
    created_at: dt.datetime
    expires_at: dt.datetime
    revoked_at: dt.datetime | None = None
    resources: tuple[str, ...] = attrs.field(default=(), converter=_scope_tuple)

    def live(self, now: dt.datetime) -> bool:
        """Neither revoked nor expired at ``now``."""
        return self.revoked_at is None and now < self.expires_at


@attrs.frozen
class RefreshToken:
    """An issued refresh token, by its digest, in a :class:`TokenFamily`. ``replaced_at``:
    when it was rotated; ``revoked_at``: when its family was revoked; ``resources``: its
    family's (read with it, never stored with the token)."""

    token_hash: str
    family_id: str
    client_id: str
    account_id: str
    session_id: str
    scopes: tuple[str, ...] = attrs.field(converter=_scope_tuple)
    auth_time: dt.datetime
    created_at: dt.datetime
    expires_at: dt.datetime
    replaced_at: dt.datetime | None = None
    revoked_at: dt.datetime | None = None
    resources: tuple[str, ...] = attrs.field(default=(), converter=_scope_tuple)

    def current(self, now: dt.datetime) -> bool:
        """Usable at ``now``: not replaced, not revoked, not expired."""
        return self.replaced_at is None and self.revoked_at is None and now < self.expires_at


@attrs.frozen
class Grant:
    """A person's consent to a client for some scopes (one per account and client).
    ``last_used_at``: when tokens were last issued under it (None: never yet)."""

    account_id: str
    client_id: str
    scopes: frozenset[str] = attrs.field(converter=_scope_set)
    granted_at: dt.datetime
    last_used_at: dt.datetime | None = None


# How long a session's clients are kept past its absolute expiry: the logout worker takes
# those of an expired session within seconds; the grace only outlasts a worker that was down.
SESSION_CLIENT_GRACE = dt.timedelta(days=1)


@attrs.frozen
class SessionClient:
    """A client that received tokens in an authgate session: told when the session ends
    (OpenID Connect Back-Channel Logout). ``expires_at``: when the row may be purged, a
    :data:`SESSION_CLIENT_GRACE` past the session's absolute expiry, so that a session that
    expires is still found with its clients to tell."""

    session_id: str
    client_id: str
    account_id: str
    first_at: dt.datetime
    expires_at: dt.datetime


@attrs.frozen
class AccessTokenClaims:
    """What an access token (an RFC 9068 JWT, ``typ: at+jwt``) says.

    A person's token (issued from a code or a refresh token) names its :class:`TokenFamily`
    (claim ``fam``) and authgate session (``sid``): revoking the family makes the token
    inactive at once, though its signature still verifies. A client's own token (the
    ``client_credentials`` grant) has neither: its ``sub`` is the ``client_id`` (RFC 9068
    section 2.2), and its revocation is kept by its ``jti`` until it expires.

    ``audience``: the resource servers (RFC 8707) the token was issued for; empty, the token's
    audience is the client itself (never ``session.audience``, so a session token and an
    access token cannot pass for each other)."""

    issuer: str
    subject: str  # the account id; the client_id for a client's own token
    client_id: str
    scopes: tuple[str, ...]
    session_id: str | None
    family_id: str | None
    token_id: str  # jti
    issued_at: dt.datetime
    expires_at: dt.datetime
    auth_time: dt.datetime | None = None
    audience: tuple[str, ...] = ()

    def __attrs_post_init__(self) -> None:
        if (self.session_id is None) != (self.family_id is None):
            raise ValueError("an access token has both sid and fam (a person's), or neither")
        if self.for_client and self.subject != self.client_id:
            raise ValueError("a client's own access token has the client_id as its subject")

    @property
    def for_client(self) -> bool:
        """Whether this is a client's own token (no person: ``client_credentials``)."""
        return self.family_id is None

    @property
    def audiences(self) -> tuple[str, ...]:
        """Whom the token is for: its resource servers, or else its client."""
        return self.audience or (self.client_id,)

    def claims(self) -> dict[str, object]:
        """The JWT claims (times as integer seconds since the epoch); ``aud`` a string for
        one audience, a list for several (RFC 9068 section 2.2)."""
        audiences = self.audiences
        out: dict[str, object] = {
            "iss": self.issuer,
            "sub": self.subject,
            "aud": audiences[0] if len(audiences) == 1 else list(audiences),
            "client_id": self.client_id,
            "scope": " ".join(self.scopes),
        }
        if self.session_id is not None:
            out["sid"] = self.session_id
        if self.family_id is not None:
            out["fam"] = self.family_id
        out |= {
            "jti": self.token_id,
            "iat": int(self.issued_at.timestamp()),
            "exp": int(self.expires_at.timestamp()),
        }
        if self.auth_time is not None:
            out["auth_time"] = int(self.auth_time.timestamp())
        return out

    @classmethod
    def from_claims(cls, claims: Mapping[str, Any]) -> AccessTokenClaims:
        """Read back verified claims; raises ``ValueError`` when one is missing or mistyped."""

        def text(name: str) -> str:
            value = claims.get(name)
            if not isinstance(value, str) or not value:
                raise ValueError(f"access token without a valid {name}")
            return value

        def optional_text(name: str) -> str | None:
            return text(name) if name in claims else None

        def when(name: str) -> dt.datetime:
            value = claims.get(name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise ValueError(f"access token without a valid {name}")
            return dt.datetime.fromtimestamp(value, dt.UTC)

        client_id = text("client_id")
        aud = claims.get("aud")
        audience = (aud,) if isinstance(aud, str) else aud
        if (
            not isinstance(audience, list | tuple)
            or not audience
            or not all(isinstance(a, str) and a for a in audience)
        ):
            raise ValueError("access token without a valid aud")
        return cls(
            issuer=text("iss"),
            subject=text("sub"),
            client_id=client_id,
            scopes=tuple(str(claims.get("scope", "")).split()),
            session_id=optional_text("sid"),
            family_id=optional_text("fam"),
            token_id=text("jti"),
            issued_at=when("iat"),
            expires_at=when("exp"),
            auth_time=when("auth_time") if "auth_time" in claims else None,
            audience=() if tuple(audience) == (client_id,) else tuple(audience),
        )
