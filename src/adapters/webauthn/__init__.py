"""The WebAuthn relying party of passkeys: its ceremonies on Yubico's fido2, imported on the
first ceremony, and a fast path beside that library (its data classes' type hints)."""

from .relying_party import Fido2RelyingParty

__all__ = ["Fido2RelyingParty"]
