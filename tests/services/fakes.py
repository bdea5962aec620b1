"""In-process stand-ins for the ports that leave the process: a clock tests move, identity
providers that hand out prepared identities, a provider's event tokens and its revocation
endpoint, a WebAuthn relying party. Each implements its port's Protocol and records what the
services asked of it."""

from __future__ import annotations

import datetime as dt
import itertools
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from authgate.domain.model import EventId, ProviderToken, VerifiedIdentity
from authgate.domain.passkeys import NewCredential, Passkey, PasskeyUser, VerifiedAssertion
from authgate.ports.provider import ExchangeFailed, VerificationFailed
from authgate.ports.provider_events import (
    INVALID_KEY,
    INVALID_REQUEST,
    EventTokenRejected,
    VerifiedEventToken,
)
from authgate.ports.provider_tokens import RevocationFailed, Revoked
from authgate.ports.webauthn import ResponseMalformed, ResponseNotVerified

# Whole seconds: session tokens count whole seconds, so times compare exactly.
START = dt.datetime(2026, 3, 2, 9, 0, 0, tzinfo=dt.UTC)

_counter = itertools.count(1)


@attrs.define
class FixedClock:
    """``authgate.ports.clock.Clock`` that stands still until a test moves it."""

    at: dt.datetime = START

    def now(self) -> dt.datetime:
        return self.at

    def advance(self, seconds: float = 0, **delta: float) -> None:
        self.at += dt.timedelta(seconds=seconds, **delta)


@attrs.define
class FakeProvider:
    """``authgate.ports.provider.IdentityProvider``: each code a test prepared with
    :meth:`code_for` redeems once for its identity. The identity's ``auth_time`` is the clock's
    time of the exchange unless the test gave one (a provider that just asked the user)."""

    name: str
    clock: FixedClock
    uses_nonce: bool = True
    uses_pkce: bool = True
    proves_login_time: bool = True
    scopes: tuple[str, ...] = ("openid", "email", "profile")
    fail: Exception | None = None  # raised by the next exchanges while set
    codes: dict[str, VerifiedIdentity] = attrs.field(factory=dict)
    authorizations: list[dict[str, Any]] = attrs.field(factory=list)
    exchanges: list[dict[str, Any]] = attrs.field(factory=list)

    @property
    def client_id(self) -> str:
        return f"client-{self.name}"

    @property
    def issuer(self) -> str:
        return f"https://{self.name}.idp.example"

    def code_for(self, verified: VerifiedIdentity) -> str:
        code = f"code-{self.name}-{next(_counter)}"
        self.codes[code] = verified
        return code

    async def authorization_url(
        self,
        *,
        state: str,
        redirect_uri: str,
        code_challenge: str | None,
        nonce: str | None,
        reauthenticate: bool = False,
    ) -> str:
        self.authorizations.append(
            {
                "state": state,
                "redirect_uri": redirect_uri,
                "code_challenge": code_challenge,
                "nonce": nonce,
                "reauthenticate": reauthenticate,
            }
        )
        return f"{self.issuer}/authorize?state={state}"

    async def check_response_issuer(self, iss: str | None) -> None:
        if iss is not None and iss != self.issuer:
            raise VerificationFailed(f"iss {iss!r} is not the provider's issuer")

    async def exchange(
        self,
        *,
        code: str,
        redirect_uri: str,
        code_verifier: str | None,
        nonce: str | None,
        user: str | None = None,
    ) -> VerifiedIdentity:
        self.exchanges.append(
            {"code": code, "redirect_uri": redirect_uri, "verifier": code_verifier, "nonce": nonce}
        )
        if self.fail is not None:
            raise self.fail
        verified = self.codes.pop(code, None)
        if verified is None:
            raise ExchangeFailed("invalid_grant: unknown or used code")
        if verified.auth_time is None:
            verified = attrs.evolve(verified, auth_time=self.clock.now())
        return verified


@attrs.define
class FakeEventVerifier:
    """``authgate.ports.provider_events.EventTokenVerifier`` of one provider: a token is
    whatever :meth:`token_for` handed out for some claims; anything else does not verify."""

    issuer: str
    clock: FixedClock
    tokens: dict[str, Mapping[str, Any]] = attrs.field(factory=dict)

    def token_for(self, claims: Mapping[str, Any]) -> str:
        token = f"event-token-{next(_counter)}"
        self.tokens[token] = claims
        return token

    async def verify(self, token: str) -> VerifiedEventToken:
        claims = self.tokens.get(token)
        if claims is None:
            raise EventTokenRejected(INVALID_KEY, "the signature does not verify")
        jti = claims.get("jti")
        if not isinstance(jti, str):
            raise EventTokenRejected(INVALID_REQUEST, "jti is missing")
        expires = self.clock.now() + dt.timedelta(hours=1)
        return VerifiedEventToken(claims, EventId(self.issuer, jti, expires))


@attrs.define
class FakeRevoker:
    """``authgate.ports.provider_tokens.TokenRevoker``: answers each call with the next of
    ``answers`` (a :class:`Revoked` or a :class:`RevocationFailed` to raise), then
    ``Revoked.REVOKED``; records every token it was sent."""

    name: str
    answers: list[Revoked | RevocationFailed] = attrs.field(factory=list)
    received: list[ProviderToken] = attrs.field(factory=list)

    async def revoke(self, token: ProviderToken) -> Revoked:
        self.received.append(token)
        answer = self.answers.pop(0) if self.answers else Revoked.REVOKED
        if isinstance(answer, RevocationFailed):
            raise answer
        return answer


@attrs.frozen
class FakeAssertion:
    """``authgate.ports.webauthn.ReadAssertion`` as :class:`FakeRelyingParty` reads it."""

    credential_id: bytes
    user_handle: bytes | None
    challenge: bytes
    sign_count: int
    backed_up: bool
    refuse: str | None
    malformed: str | None


@attrs.define
class FakeRelyingParty:
    """``authgate.ports.webauthn.WebAuthnRelyingParty`` whose browser responses are the
    mappings :meth:`registration` and :meth:`assertion` make: a response verifies when it
    answers the challenge it is checked against (and, for an assertion, names the passkey's
    credential), and is refused as the test asked (``refuse``: a reason, ``malformed``: a
    detail, ``malformed_on_verify``: raised by the verification, not the reading). Records the
    options it was asked for; ``while_verifying`` runs as an assertion is verified (what
    happens meanwhile elsewhere)."""

    created: list[tuple[PasskeyUser, list[Passkey], bytes]] = attrs.field(factory=list)
    requested: list[bytes] = attrs.field(factory=list)
    while_verifying: Callable[[], object] | None = None

    @staticmethod
    def challenge_of(options: Mapping[str, Any]) -> bytes:
        """The challenge the options carry (hex, as these options write it)."""
        return bytes.fromhex(options["challenge"])

    def creation_options(
        self, user: PasskeyUser, excluded: Sequence[Passkey], challenge: bytes
    ) -> dict[str, Any]:
        self.created.append((user, list(excluded), challenge))
        return {
            "challenge": challenge.hex(),
            "user": {"id": user.handle.hex(), "name": user.name, "displayName": user.display_name},
            "excludeCredentials": [p.credential_id.hex() for p in excluded],
        }

    def request_options(self, challenge: bytes) -> dict[str, Any]:
        self.requested.append(challenge)
        return {"challenge": challenge.hex(), "allowCredentials": []}

    @staticmethod
    def registration(
        challenge: bytes,
        credential_id: bytes,
        *,
        sign_count: int = 0,
        backed_up: bool = False,
        refuse: str | None = None,
        malformed: str | None = None,
    ) -> dict[str, Any]:
        """A registration response answering ``challenge`` with a new credential."""
        return {
            "type": "webauthn.create",
            "challenge": challenge,
            "credential_id": credential_id,
            "sign_count": sign_count,
            "backed_up": backed_up,
            "refuse": refuse,
            "malformed": malformed,
        }

    def verify_registration(self, response: Mapping[str, Any], challenge: bytes) -> NewCredential:
        if response.get("type") != "webauthn.create" or response.get("malformed"):
            raise ResponseMalformed(response.get("malformed") or "not a registration response")
        if response["refuse"]:
            raise ResponseNotVerified(response["refuse"])
        if response["challenge"] != challenge:
            raise ResponseNotVerified("the challenge is not the one issued")
        return NewCredential(
            credential_id=response["credential_id"],
            public_key=b"cose-key-of-" + response["credential_id"],
            sign_count=response["sign_count"],
            aaguid="00000000-0000-0000-0000-0000000000aa",
            backup_eligible=True,
            backed_up=response["backed_up"],
            transports=("internal", "hybrid"),
        )

    @staticmethod
    def assertion(
        challenge: bytes,
        credential_id: bytes,
        user_handle: bytes | None,
        *,
        sign_count: int = 0,
        backed_up: bool = False,
        refuse: str | None = None,
        malformed: str | None = None,
        malformed_on_verify: str | None = None,
    ) -> dict[str, Any]:
        """An authentication response answering ``challenge``, signed by ``credential_id``."""
        return {
            "type": "webauthn.get",
            "challenge": challenge,
            "credential_id": credential_id,
            "user_handle": user_handle,
            "sign_count": sign_count,
            "backed_up": backed_up,
            "refuse": refuse,
            "malformed": malformed,
            "malformed_on_verify": malformed_on_verify,
        }

    def read_assertion(self, response: Mapping[str, Any]) -> FakeAssertion:
        if response.get("type") != "webauthn.get" or response.get("malformed"):
            raise ResponseMalformed(response.get("malformed") or "not an authentication response")
        return FakeAssertion(
            credential_id=response["credential_id"],
            user_handle=response["user_handle"],
            challenge=response["challenge"],
            sign_count=response["sign_count"],
            backed_up=response["backed_up"],
            refuse=response["refuse"],
            malformed=response["malformed_on_verify"],
        )

    def verify_assertion(
        self, assertion: Any, challenge: bytes, passkey: Passkey
    ) -> VerifiedAssertion:
        assert isinstance(assertion, FakeAssertion), "an assertion another party read"
        if self.while_verifying is not None:
            self.while_verifying()
        if assertion.malformed:
            raise ResponseMalformed(assertion.malformed)
        if assertion.refuse:
            raise ResponseNotVerified(assertion.refuse)
        if assertion.challenge != challenge:
            raise ResponseNotVerified("the challenge is not the one issued")
        if assertion.credential_id != passkey.credential_id:
            raise ResponseNotVerified("signed by another credential")
        return VerifiedAssertion(assertion.sign_count, assertion.backed_up)
