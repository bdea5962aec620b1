"""The WebAuthn relying party of passkeys on Yubico's fido2 (docs/passkeys.md: why that one).

fido2's ceremonies (:mod:`.ceremonies`) are imported on the first ceremony, not at start-up
(docs/benchmarks.md: idle memory). The type hints' fast path (:mod:`.fido2_hints`) is checked
at start-up, so that a fido2 that no longer matches it is reported then.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from authgate.domain.passkeys import NewCredential, Passkey, PasskeyUser, VerifiedAssertion
from authgate.ports.webauthn import ReadAssertion

from .fido2_hints import memoize_type_hints

if TYPE_CHECKING:
    from .ceremonies import Fido2Ceremonies


class Fido2RelyingParty:
    """:class:`~authgate.ports.webauthn.WebAuthnRelyingParty` on fido2, for the RP ID
    ``rp_id`` (named ``rp_name``) and the pages of ``origins`` (exact
    ``scheme://host[:port]``)."""

    def __init__(self, *, rp_id: str, rp_name: str, origins: frozenset[str]) -> None:
        self.rp_id = rp_id
        self.rp_name = rp_name
        self.origins = origins
        self._ceremonies: Fido2Ceremonies | None = None
        memoize_type_hints()  # fido2's data classes, made several times a sign-in

    def _fido2(self) -> Fido2Ceremonies:
        if self._ceremonies is None:
            from .ceremonies import Fido2Ceremonies  # the first ceremony: see the docstring

            self._ceremonies = Fido2Ceremonies(self.rp_id, self.rp_name, self._origin_allowed)
        return self._ceremonies

    def _origin_allowed(self, origin: object) -> bool:
        return isinstance(origin, str) and origin in self.origins

    def creation_options(
        self, user: PasskeyUser, excluded: Sequence[Passkey], challenge: bytes
    ) -> dict[str, Any]:
        return self._fido2().creation_options(user, excluded, challenge)

    def verify_registration(self, response: Mapping[str, Any], challenge: bytes) -> NewCredential:
        return self._fido2().verify_registration(response, challenge)

    def request_options(self, challenge: bytes) -> dict[str, Any]:
        return self._fido2().request_options(challenge)

    def read_assertion(self, response: Mapping[str, Any]) -> ReadAssertion:
        return self._fido2().read_assertion(response)

    def verify_assertion(
        self, assertion: ReadAssertion, challenge: bytes, passkey: Passkey
    ) -> VerifiedAssertion:
        return self._fido2().verify_assertion(assertion, challenge, passkey)
