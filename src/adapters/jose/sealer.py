"""Sealing provider tokens: JWE compact, ``dir`` with ``A256GCM``, the ``kid`` in the
authenticated header.

The plaintext binds the token to its identity (``{"p": provider, "s": subject, "h": hint,
"t": token}``, checked on opening), so a sealed value copied to another identity's row does
not open there. The first key seals, every key opens: keys rotate by putting a new one first
and removing an old one once nothing is sealed under it (``authgate provider-tokens rekey``).
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Sequence

import attrs
from joserfc import jwe
from joserfc.errors import JoseError
from joserfc.jwk import OctKey

from authgate.domain.model import ProviderIdentity, ProviderToken, SealedToken
from authgate.ports.provider_tokens import TokenUnreadable

KEY_BYTES = 32  # A256GCM
HEADER = {"alg": "dir", "enc": "A256GCM"}


class SealingKeyError(ValueError):
    """A configured key is unusable; the text names its id, never the secret."""


@attrs.frozen
class SealingKey:
    """A configured key: its id and its 32 secret bytes."""

    id: str
    secret: bytes = attrs.field(repr=False)

    @classmethod
    def from_text(cls, key_id: str, secret: str) -> SealingKey:
        """A key from its configured form: 32 bytes in base64url (``secrets.token_urlsafe(32)``)
        or standard base64, padding optional."""
        if not key_id or len(key_id) > 64 or not key_id.isprintable():
            raise SealingKeyError(f"key id {key_id!r}: 1 to 64 printable characters")
        text = secret.strip()
        raw: bytes | None = None
        for decode in (base64.urlsafe_b64decode, base64.standard_b64decode):
            try:
                raw = decode(text + "=" * (-len(text) % 4))
            except (binascii.Error, ValueError):
                continue
            if len(raw) == KEY_BYTES:
                break
        if raw is None or len(raw) != KEY_BYTES:
            raise SealingKeyError(
                f"key {key_id}: the secret must be {KEY_BYTES} random bytes in base64 "
                "(python3 -c 'import secrets; print(secrets.token_urlsafe(32))')"
            )
        return cls(key_id, raw)


class JweTokenSealer:
    """:class:`~authgate.ports.provider_tokens.TokenSealer` over the configured keys (the
    first seals)."""

    def __init__(self, keys: Sequence[SealingKey]) -> None:
        if not keys:
            raise SealingKeyError("at least one key is needed")
        ids = [k.id for k in keys]
        if len(set(ids)) != len(ids):
            raise SealingKeyError("key ids must be unique")
        self._keys = {k.id: OctKey.import_key(k.secret) for k in keys}
        self._seal_key_id = keys[0].id

    @property
    def seal_key_id(self) -> str:
        return self._seal_key_id

    def seal(self, token: ProviderToken, identity: ProviderIdentity) -> SealedToken:
        plaintext = json.dumps(
            {"p": identity.provider, "s": identity.subject, "h": token.hint, "t": token.value},
            separators=(",", ":"),
        ).encode()
        kid = self._seal_key_id
        ciphertext = jwe.encrypt_compact({**HEADER, "kid": kid}, plaintext, self._keys[kid])
        return SealedToken(kid, ciphertext)

    def open(self, sealed: SealedToken, identity: ProviderIdentity) -> ProviderToken:
        key = self._keys.get(sealed.key_id)
        if key is None:
            raise TokenUnreadable(f"sealed under key {sealed.key_id}, which is not configured")
        try:
            opened = jwe.decrypt_compact(sealed.ciphertext, key)
            if opened.protected.get("kid") != sealed.key_id:
                raise ValueError("kid")
            data = json.loads(opened.plaintext or b"")
        except (JoseError, ValueError, TypeError) as e:
            raise TokenUnreadable(
                f"sealed under key {sealed.key_id}: does not decrypt ({type(e).__name__})"
            ) from None
        if (
            not isinstance(data, dict)
            or data.get("p") != identity.provider
            or data.get("s") != identity.subject
            or not isinstance(data.get("t"), str)
            or data.get("h") not in ("refresh_token", "access_token")
        ):
            raise TokenUnreadable(f"sealed under key {sealed.key_id}: not this identity's token")
        return ProviderToken(data["t"], data["h"])
