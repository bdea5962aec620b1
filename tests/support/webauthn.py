"""A software authenticator for the tests: real WebAuthn responses, signed with real keys.

It makes what a browser and a platform authenticator together hand a relying party: for a
registration, ``clientDataJSON`` and an attestation object (format ``none``) whose
authenticator data holds a fresh EC P-256 key as a COSE key; for a sign-in, the authenticator
data and an ECDSA signature over it and the client data's hash. Everything is encoded here,
with ``cryptography`` and ``cbor2`` — none of it with the library the service verifies with —
so a test fails if either side gets the format wrong. Keyword arguments make the broken
responses the security tests need (another origin, another RP ID, no user verification, the
wrong ceremony's type, a counter that goes backwards, an RS1 (RSA with SHA-1) key, a credential
id of any length, the backup state without backup eligibility, a missing or another user
handle).
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import struct
from collections.abc import Mapping
from typing import Any

import attrs
import cbor2
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa

UP, UV, BE, BS, AT = 0x01, 0x04, 0x08, 0x10, 0x40

ES256, RS1 = -7, -65535  # COSE algorithms: ECDSA P-256 with SHA-256; RSA PKCS#1 v1.5 with SHA-1

_OMITTED = object()


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unb64url(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


@attrs.define
class SoftCredential:
    """A credential the authenticator holds: its id, private key, user handle and counter."""

    credential_id: bytes
    key: ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey
    user_handle: bytes
    rp_id: str
    sign_count: int = 0

    @staticmethod
    def new_key(algorithm: int) -> ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey:
        if algorithm == RS1:
            return rsa.generate_private_key(public_exponent=65537, key_size=2048)
        return ec.generate_private_key(ec.SECP256R1())

    def cose_public_key(self) -> bytes:
        if isinstance(self.key, rsa.RSAPrivateKey):
            rsa_numbers = self.key.public_key().public_numbers()
            return cbor2.dumps(
                {
                    1: 3,  # kty: RSA
                    3: RS1,
                    -1: rsa_numbers.n.to_bytes((rsa_numbers.n.bit_length() + 7) // 8, "big"),
                    -2: rsa_numbers.e.to_bytes(3, "big"),
                }
            )
        numbers = self.key.public_key().public_numbers()
        return cbor2.dumps(
            {
                1: 2,  # kty: EC2
                3: ES256,
                -1: 1,  # crv: P-256
                -2: numbers.x.to_bytes(32, "big"),
                -3: numbers.y.to_bytes(32, "big"),
            }
        )

    def sign(self, data: bytes) -> bytes:
        if isinstance(self.key, rsa.RSAPrivateKey):
            return self.key.sign(data, padding.PKCS1v15(), hashes.SHA1())
        return self.key.sign(data, ec.ECDSA(hashes.SHA256()))


class SoftAuthenticator:
    """A platform authenticator with resident keys and user verification.

    ``counting``: whether it keeps a signature counter (False: always 0, as synced passkeys
    report). ``backup_eligible``/``backed_up``: the BE and BS flags it reports."""

    def __init__(
        self,
        *,
        counting: bool = True,
        backup_eligible: bool = True,
        backed_up: bool = False,
        aaguid: bytes = bytes(range(16)),
    ) -> None:
        self.counting = counting
        self.backup_eligible = backup_eligible
        self.backed_up = backed_up
        self.aaguid = aaguid
        self.credentials: dict[bytes, SoftCredential] = {}

    def _flags(self, base: int) -> int:
        flags = base
        if self.backup_eligible:
            flags |= BE
        if self.backed_up:
            flags |= BS
        return flags

    def create(
        self,
        options: Mapping[str, Any],
        origin: str,
        *,
        rp_id: str | None = None,
        ceremony_type: str = "webauthn.create",
        flags: int = UP | UV,
        challenge: str | None = None,
        credential: SoftCredential | None = None,
        algorithm: int = ES256,
        credential_id: bytes | None = None,
    ) -> dict[str, Any]:
        """``navigator.credentials.create()``'s answer, ``toJSON()``-ed, for the creation
        options the service gave (their ``publicKey`` member or the options themselves).
        ``credential``: register that one again (its id and key) instead of a new one, as a
        copy of an authenticator could. ``algorithm``: the new key's (``ES256`` or ``RS1``,
        offered or not); ``credential_id``: the new credential's id (32 random bytes)."""
        public_key = options.get("publicKey", options)
        rp = rp_id or public_key["rp"]["id"]
        credential = credential or SoftCredential(
            credential_id=credential_id if credential_id is not None else os.urandom(32),
            key=SoftCredential.new_key(algorithm),
            user_handle=unb64url(public_key["user"]["id"]),
            rp_id=rp,
        )
        self.credentials[credential.credential_id] = credential
        client_data = self.client_data(ceremony_type, challenge or public_key["challenge"], origin)
        cose = credential.cose_public_key()
        auth_data = (
            hashlib.sha256(rp.encode()).digest()
            + bytes([self._flags(flags | AT)])
            + struct.pack(">I", credential.sign_count)
            + self.aaguid
            + struct.pack(">H", len(credential.credential_id))
            + credential.credential_id
            + cose
        )
        attestation = cbor2.dumps({"fmt": "none", "attStmt": {}, "authData": auth_data})
        return {
            "id": b64url(credential.credential_id),
            "rawId": b64url(credential.credential_id),
            "type": "public-key",
            "response": {
                "clientDataJSON": b64url(client_data),
                "attestationObject": b64url(attestation),
                "transports": ["internal", "hybrid"],
            },
            "authenticatorAttachment": "platform",
            "clientExtensionResults": {},
        }

    def get(
        self,
        options: Mapping[str, Any],
        origin: str,
        *,
        credential: SoftCredential | None = None,
        rp_id: str | None = None,
        ceremony_type: str = "webauthn.get",
        flags: int = UP | UV,
        sign_count: int | None = None,
        challenge: str | None = None,
        user_handle: bytes | object | None = _OMITTED,
    ) -> dict[str, Any]:
        """``navigator.credentials.get()``'s answer, ``toJSON()``-ed: signed by ``credential``
        (the only one held, by default). ``sign_count`` overrides the counter it reports;
        ``user_handle`` the user handle it returns (None: none at all, as a credential that
        is not discoverable answers)."""
        public_key = options.get("publicKey", options)
        if credential is None:
            [credential] = self.credentials.values()
        if sign_count is None:
            if self.counting:
                credential.sign_count += 1
            sign_count = credential.sign_count
        rp = rp_id or public_key.get("rpId") or credential.rp_id
        client_data = self.client_data(ceremony_type, challenge or public_key["challenge"], origin)
        auth_data = (
            hashlib.sha256(rp.encode()).digest()
            + bytes([self._flags(flags)])
            + struct.pack(">I", sign_count)
        )
        signature = credential.sign(auth_data + hashlib.sha256(client_data).digest())
        handle = credential.user_handle if user_handle is _OMITTED else user_handle
        assert handle is None or isinstance(handle, bytes)
        return {
            "id": b64url(credential.credential_id),
            "rawId": b64url(credential.credential_id),
            "type": "public-key",
            "response": {
                "clientDataJSON": b64url(client_data),
                "authenticatorData": b64url(auth_data),
                "signature": b64url(signature),
                **({"userHandle": b64url(handle)} if handle is not None else {}),
            },
            "authenticatorAttachment": "platform",
            "clientExtensionResults": {},
        }

    @staticmethod
    def client_data(ceremony_type: str, challenge: str, origin: str) -> bytes:
        return json.dumps(
            {"type": ceremony_type, "challenge": challenge, "origin": origin, "crossOrigin": False},
            separators=(",", ":"),
        ).encode()
