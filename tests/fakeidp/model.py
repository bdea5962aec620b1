"""The records and knobs of the fake identity provider."""

from __future__ import annotations

import enum
from typing import Any
from urllib.parse import urlsplit

import attrs


class Shape(enum.Enum):
    """The three provider shapes of the spec."""

    OIDC = "oidc"  # google: discovery, RS256 ID token, userinfo
    OAUTH = "oauth"  # facebook: no ID token; profile endpoint with appsecret_proof
    APPLE = "apple"  # apple: ES256 client-secret JWT, form_post, ES256 ID token, user JSON


@attrs.frozen
class FakeUser:
    """The user who signs in at the fake provider's authorize step."""

    sub: str = "10001"
    email: str | None = "alice@example.com"
    email_verified: bool | None = True
    name: str | None = "Alice Example"

    @property
    def first_name(self) -> str | None:
        return self.name.split(" ", 1)[0] if self.name else None

    @property
    def last_name(self) -> str | None:
        if not self.name or " " not in self.name:
            return None
        return self.name.split(" ", 1)[1]


class Tamper(enum.Enum):
    """Ways the token endpoint can forge or spoil the ID token it returns."""

    ALG_NONE = "alg_none"  # header alg "none", empty signature
    HS256_WITH_PUBLIC_KEY = "hs256_with_public_key"  # MAC keyed by the RSA public key's PEM
    UNKNOWN_KID = "unknown_kid"  # signed by a key that the JWKS does not publish
    OTHER_KEY_SAME_KID = "other_key_same_kid"  # another key, the published key's kid
    WRONG_ISS = "wrong_iss"
    LOOKALIKE_ISS = "lookalike_iss"  # issuer with one letter swapped (l → I)
    ISS_TRAILING_SLASH = "iss_trailing_slash"
    FOREIGN_AUD = "foreign_aud"
    EXTRA_AUD_WITHOUT_AZP = "extra_aud_without_azp"
    WRONG_AZP = "wrong_azp"
    EXPIRED = "expired"
    FUTURE_IAT = "future_iat"
    MISSING_NONCE = "missing_nonce"
    WRONG_NONCE = "wrong_nonce"
    MISSING_SUB = "missing_sub"
    MISSING_EXP = "missing_exp"
    TAMPERED_SIGNATURE = "tampered_signature"  # one character of the signature changed
    TAMPERED_PAYLOAD = "tampered_payload"  # one character of the sub changed after signing


class TokenMode(enum.Enum):
    """How the token endpoint behaves."""

    OK = "ok"
    DOWN = "down"  # 500 with a text body
    SLOW = "slow"  # answers after ``slow_seconds``
    GARBAGE = "garbage"  # 200 with a body that is not JSON
    ERROR_ECHO = "error_echo"  # 400 invalid_grant whose description echoes the code and secret
    NO_ACCESS_TOKEN = "no_access_token"
    NO_ID_TOKEN = "no_id_token"
    NOT_BEARER = "not_bearer"


@attrs.define
class IssuedCode:
    """An authorization code the fake issued, with what it was bound to."""

    code: str
    client_id: str
    redirect_uri: str
    user: FakeUser
    nonce: str | None
    code_challenge: str | None
    scope: str
    expires_at: float
    used: bool = False
    auth_time: float | None = None  # when the user last logged in at the provider


@attrs.frozen
class RecordedRequest:
    """A request the fake received (for assertions on what the adapter sent)."""

    method: str
    path: str
    query: dict[str, str]
    form: dict[str, str]
    headers: dict[str, str]


@attrs.frozen
class Callback:
    """Where the provider sends the browser after the authorize step.

    ``method`` is ``GET`` (redirect; ``url`` is the complete callback URL with its query) or
    ``POST`` (``response_mode=form_post``; ``url`` is the form's action, ``params`` its fields).
    """

    method: str
    url: str
    params: dict[str, str]

    @property
    def path_qs(self) -> str:
        """The callback's path and query, for a test client of the service (GET callbacks)."""
        parts = urlsplit(self.url)
        return parts.path + (f"?{parts.query}" if parts.query else "")

    @property
    def code(self) -> str | None:
        return self.params.get("code")

    @property
    def state(self) -> str | None:
        return self.params.get("state")

    @property
    def error(self) -> str | None:
        return self.params.get("error")

    @property
    def user(self) -> str | None:
        """Apple's first-time ``user`` JSON (form_post only)."""
        return self.params.get("user")

    def as_dict(self) -> dict[str, Any]:
        return {"method": self.method, "url": self.url, "params": dict(self.params)}


class RevocationStyle(enum.Enum):
    """How the fake's revocation endpoint (``POST /{name}/revoke``) wants to be called."""

    APPLE = "apple"  # client_id + client-secret JWT + token + token_type_hint; 400 otherwise
    GOOGLE = "google"  # the token alone; 400 invalid_token for a token it does not know
    RFC7009 = "rfc7009"  # client authentication as at the token endpoint; 200 for any token


@attrs.frozen
class ReceivedRevocation:
    """A revocation request the fake accepted: the token, the hint, and whether the token was
    one it had issued (and still knew)."""

    token: str
    hint: str | None
    known: bool
    form_keys: frozenset[str]
    authorization: str | None


class AuthorizeRefused(Exception):
    """The fake refused the authorize request outright (no redirect), like a provider's
    error page: unknown client, missing redirect_uri, …"""
