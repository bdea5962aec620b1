"""The OpenID Provider's signed tokens: ID tokens, RFC 9068 access tokens and back-channel
logout tokens, signed with the service's own key set and verified by it."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any, Protocol

import attrs

from authgate.domain.openid.clients import IdTokenAlgorithm


class InvalidToken(Exception):
    """A token the provider did not sign as it claims, or not in the shape it signs; the
    text is safe to log (never the token)."""


@attrs.frozen
class VerifiedIdToken:
    """An ID token the provider signed, presented back as ``id_token_hint``, often after it
    expired (a logout long after the sign-in). The caller checks ``audiences`` name a client,
    which also sets apart the session tokens (same keys, but ``session.audience``)."""

    subject: str
    audiences: tuple[str, ...]
    issued_at: dt.datetime
    expires_at: dt.datetime
    session_id: str | None
    auth_time: dt.datetime | None
    claims: Mapping[str, Any]


class TokenSigner(Protocol):
    """Signs with the first key of the kind each token needs and stamps ``iss``
    (:attr:`issuer`), so the claims given must not carry one."""

    @property
    def issuer(self) -> str: ...

    def supports(self, algorithm: IdTokenAlgorithm) -> bool:
        """Whether a key signs ID tokens with ``algorithm``."""

    def id_token(
        self,
        claims: Mapping[str, Any],
        *,
        algorithm: IdTokenAlgorithm = "RS256",
        access_token: str | None = None,
    ) -> str:
        """An ID token (``typ: JWT``); with ``access_token``, its ``at_hash`` (OpenID Connect
        Core section 3.1.3.6) added."""

    def access_token(self, claims: Mapping[str, Any]) -> str:
        """An RFC 9068 access token: RS256, header ``typ: at+jwt``."""

    def logout_token(self, claims: Mapping[str, Any]) -> str:
        """A back-channel logout token: RS256, ``typ: logout+jwt`` (Back-Channel Logout 1.0
        section 2.4)."""

    def verify_id_token(self, token: str) -> VerifiedIdToken:
        """An ID token this provider signed (RS256 or ES256, its ``iss``, ``exp`` not
        enforced); :class:`InvalidToken` otherwise."""

    def verify_access_token(self, token: str, now: dt.datetime) -> Mapping[str, Any]:
        """The claims of an unexpired access token this provider signed (``typ: at+jwt``,
        RS256, its ``iss``); :class:`InvalidToken` otherwise. Its family is the caller's."""
