"""The random values and digests of a sign-in: state, PKCE (RFC 7636), the browser binding,
and the key a pending sign-in is stored under."""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import uuid


def new_secret(nbytes: int = 32) -> str:
    """A URL-safe random value (``nbytes`` of entropy: 32 bytes is 256 bits)."""
    return secrets.token_urlsafe(nbytes)


def random_uuid_hex() -> str:
    """A random (version 4) UUID as 32 hex digits: session and record ids."""
    return uuid.uuid4().hex


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


def state_lookup(provider: str, state: str) -> str:
    """What a store keys a pending sign-in by, with the binding hash: the SHA-256 of the
    provider and the state. Fixed length, no control character, and not the state itself (a
    copy of the table cannot be replayed)."""
    return hashlib.sha256(f"{provider}\0{state}".encode("utf-8", "surrogatepass")).hexdigest()
