"""The random values and digests of a sign-in: state, PKCE (RFC 7636), the browser binding."""

from __future__ import annotations

import base64
import hashlib
import hmac
import os


def new_secret(nbytes: int = 32) -> str:
    """A URL-safe random value (``nbytes`` of entropy: 32 bytes is 256 bits).

    What ``secrets.token_urlsafe`` returns, from the same source (``os.urandom``), without its
    three Python calls in between: a sign-in draws four of these."""
    return base64.urlsafe_b64encode(os.urandom(nbytes)).rstrip(b"=").decode("ascii")


def random_uuid_hex() -> str:
    """``uuid.uuid4().hex``: 122 random bits from ``os.urandom`` with the version (4) and
    variant (RFC 4122) bits set, as 32 hex digits, without building a ``UUID``."""
    raw = bytearray(os.urandom(16))
    raw[6] = (raw[6] & 0x0F) | 0x40
    raw[8] = (raw[8] & 0x3F) | 0x80
    return raw.hex()


def pkce_challenge(verifier: str) -> str:
    """RFC 7636 S256 code challenge of a verifier."""
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def binding_hash(binding: str) -> str:
    """What is stored of the browser-binding value: its SHA-256, never the value."""
    return hashlib.sha256(binding.encode()).hexdigest()


def appsecret_proof(client_secret: str, access_token: str) -> str:
    """Facebook Graph API's ``appsecret_proof``: HMAC-SHA256 of the access token keyed by the
    app secret, hex; it proves that a call comes from the app holding the secret."""
    return hmac.new(client_secret.encode(), access_token.encode(), hashlib.sha256).hexdigest()
