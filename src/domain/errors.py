"""The domain's failures, each with its answer in the contract's format (spec 7.1, 7.2): status,
body ``{"error", "message"}`` and the callback's redirect, rendered by the HTTP entrypoint."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import ClassVar

import attrs


@attrs.frozen
class Wire:
    """How the contract answers one kind of failure.

    ``message``: the body's message (None: the error's own text, which is safe to show).
    ``redirect``: the callback's ``(error, reason)`` for the login page (reason None: the
    error's ``reason``); a callback failure without one answers JSON, as does one
    ``json_first`` to a client that accepts only JSON. ``logged``: an outage the operator must
    see, logged as an error (with the request's path, which names the provider).
    """

    status: int
    code: str
    message: str | None = None
    redirect: tuple[str, str | None] | None = None
    json_first: bool = False
    headers: Mapping[str, str] = attrs.field(factory=dict)
    logged: bool = False


class ContractError(Exception):
    """A failure answered in the contract's own format: its class's :attr:`wire` says how.
    Raised without arguments, its text is the wire's message."""

    wire: ClassVar[Wire]

    def __init__(self, *args: object) -> None:
        super().__init__(*(args or (self.wire.message,)))

    def public_message(self) -> str:
        """The body's message."""
        return self.wire.message or str(self)

    def wire_headers(self) -> Mapping[str, str]:
        """The answer's headers (an error may name its own values in them)."""
        return self.wire.headers


class SignInError(ContractError):
    """Base of every expected failure of sign-in and of the account. ``str(e)`` is safe to
    show to a client."""


class InvalidProvider(SignInError):
    wire = Wire(400, "invalid_provider")

    def __init__(self, given: str, supported: Sequence[str]) -> None:
        super().__init__(f"unsupported provider '{given}'; valid providers: {', '.join(supported)}")


class MissingParameter(SignInError):
    wire = Wire(400, "missing_parameter")

    def __init__(self, name: str) -> None:
        self.name = name
        super().__init__(f"missing required parameter: {name}")


class InvalidRequest(SignInError):
    """A malformed request other than a missing redirect_uri (code/state absent, bad URI)."""

    wire = Wire(400, "invalid_request")


class InvalidState(SignInError):
    """The state is absent, expired, used, for another provider or not this browser's."""

    wire = Wire(401, "invalid_state")

    def __init__(self, detail: str) -> None:
        self.detail = detail  # for the log only
        super().__init__("the sign-in state is missing, expired or does not match")


class AccessDenied(SignInError):
    """The user (or the provider) refused the authorization."""

    wire = Wire(
        403,
        "access_denied",
        "the authorization was denied at the provider",
        redirect=("access_denied", "user_denied"),
        json_first=True,
    )

    def __init__(self, provider_error: str, description: str | None = None) -> None:
        self.provider_error = provider_error
        self.description = description
        super().__init__("the authorization was denied")


class ProviderError(SignInError):
    """The provider answered the authorization with an error other than a denial."""

    wire = Wire(502, "provider_error", redirect=("authentication_failed", "provider_error"))

    def __init__(self, provider_error: str, description: str | None = None) -> None:
        self.provider_error = provider_error
        self.description = description
        super().__init__("the provider reported an error")


class AuthenticationFailed(SignInError):
    """The code exchange or the verification of the provider's answer failed. ``reason`` goes
    to the redirect (``token_exchange_failed``, ``invalid_id_token``, …), ``detail`` to the log."""

    wire = Wire(502, "authentication_failed", redirect=("authentication_failed", None))

    def __init__(self, reason: str, detail: str) -> None:
        self.reason = reason
        self.detail = detail
        super().__init__("authentication with the provider failed")


class AccountNotFound(SignInError):
    wire = Wire(
        404,
        "account_not_found",
        "no account exists for this provider identity",
        redirect=("account_not_found", "no_account_for_provider"),
    )


class IdentityLinkedElsewhere(SignInError):
    wire = Wire(
        409,
        "account_conflict",
        "this provider identity is linked to another account",
        redirect=("account_conflict", "identity_linked_to_another_account"),
    )


class NotAuthenticated(SignInError):
    """An operation that needs a signed-in caller (linking, re-authenticating) got none;
    ``intent`` says which, so the answer can tell the person what to do first."""

    wire = Wire(401, "unauthorized", headers={"WWW-Authenticate": "Bearer"})

    def __init__(self, message: str, intent: str = "link") -> None:
        self.intent = intent
        super().__init__(message)

    def public_message(self) -> str:
        """What a signed-out caller must do first, for the intent that needs a signed-in one."""
        return _SIGN_IN_FIRST.get(self.intent, "sign in first")


_SIGN_IN_FIRST = {
    "link": "sign in before linking another provider",
    "reauthenticate": "sign in before re-authenticating",
}


class LastIdentity(SignInError):
    """Unlinking the only provider identity of an account would lock its owner out."""

    wire = Wire(409, "last_provider")

    def __init__(self, provider: str) -> None:
        super().__init__(
            f"'{provider}' is the account's only linked provider; link another one before "
            "removing it"
        )


class IdentityNotLinked(SignInError):
    wire = Wire(404, "provider_not_linked")

    def __init__(self, provider: str) -> None:
        super().__init__(f"provider '{provider}' is not linked to this account")


class AccountGone(SignInError):
    """Deleted since the caller's token was issued."""

    wire = Wire(404, "account_not_found", "the signed-in account no longer exists")


class TemporarilyUnavailable(SignInError):
    """The service cannot take a new sign-in right now (its pending sign-ins are at capacity)."""

    wire = Wire(
        503,
        "temporarily_unavailable",
        "the service cannot start a sign-in right now; retry shortly",
        headers={"Retry-After": "60"},
    )


class ReauthenticationRefused(SignInError):
    """A re-authentication that did not prove the caller: another identity, or a provider
    authentication older than the request (the provider did not ask again)."""

    wire = Wire(403, "reauthentication_refused", redirect=("authentication_failed", None))

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__("the re-authentication did not confirm the signed-in user")


class SessionNotFound(SignInError):
    wire = Wire(404, "session_not_found", "no live session of this account has that id")


class AppNotFound(SignInError):
    """The account has neither a grant nor live tokens of that application (client_id)."""

    wire = Wire(404, "app_not_found")

    def __init__(self, client_id: str) -> None:
        self.client_id = client_id
        super().__init__("no application of this account has that client_id")


class ReauthenticationRequired(SignInError):
    """RFC 9470: the change needs a sign-in at the provider no older than ``max_age`` seconds."""

    wire = Wire(401, "reauthentication_required")

    def __init__(self, max_age: int) -> None:
        self.max_age = max_age
        super().__init__(
            f"this change needs a recent sign-in (within {max_age} seconds): sign in again "
            "with intent=reauthenticate"
        )

    def wire_headers(self) -> Mapping[str, str]:
        """RFC 9470 section 3: what authentication the client needs."""
        return {
            "WWW-Authenticate": f'Bearer error="insufficient_user_authentication", '
            f'error_description="A more recent authentication is required", '
            f"max_age={self.max_age}"
        }


class IdentityDisabled(SignInError):
    """Its provider reported the identity disabled (RISC ``account-disabled``) and not enabled
    again (docs/providers.md, "Provider events")."""

    wire = Wire(
        403,
        "access_denied",
        "sign-in through this provider account is disabled",
        redirect=("access_denied", "identity_disabled"),
        json_first=True,
    )

    def __init__(self, reason: str) -> None:
        self.reason = reason  # for the log and the audit only
        super().__init__()


class InvalidPasskeyChallenge(SignInError):
    """No challenge of this ceremony is waiting for this browser."""

    wire = Wire(400, "invalid_challenge")

    def __init__(self, detail: str) -> None:
        self.detail = detail  # for the log and the audit only
        super().__init__(
            "the passkey challenge is missing, expired, already used or was issued to another "
            "browser or ceremony: ask for new options"
        )


class InvalidPasskeyResponse(SignInError):
    """The browser's passkey response cannot be read (missing members, bad encodings)."""

    wire = Wire(400, "invalid_passkey_response")

    def __init__(self, detail: str) -> None:
        self.detail = detail
        super().__init__(f"the passkey response is malformed: {detail}")


class PasskeyNotVerified(SignInError):
    """The passkey response was read but failed a check: ``reason`` names which."""

    wire = Wire(400, "passkey_not_verified")

    def __init__(self, reason: str, account_id: str | None = None) -> None:
        self.reason = reason
        self.account_id = account_id  # the passkey's, when one was found (for the audit)
        super().__init__(f"the passkey response was not verified: {reason}")


class UnknownPasskey(SignInError):
    wire = Wire(401, "unknown_passkey", "no account has this passkey (it may have been removed)")


class PasskeyAlreadyRegistered(SignInError):
    """To this or another account."""

    wire = Wire(409, "passkey_already_registered", "this passkey is registered already")


class PasskeyNotFound(SignInError):
    wire = Wire(404, "passkey_not_found", "no passkey of this account has that id")


class LastSignInMethod(SignInError):
    wire = Wire(
        409,
        "last_sign_in_method",
        "this passkey is the account's only sign-in method; add another passkey or link a "
        "provider before removing it",
    )


class InvalidPasskeyName(SignInError):
    wire = Wire(400, "invalid_request")

    def __init__(self, limit: int) -> None:
        super().__init__(f"a passkey's name is 1 to {limit} characters without control characters")


class AccountDisabled(SignInError):
    """A provider reported an identity of the account disabled: a passkey sign-in is refused
    as one through that provider is (docs/passkeys.md)."""

    wire = Wire(403, "access_denied")

    def __init__(self, reason: str, account_id: str | None = None) -> None:
        self.reason = reason  # for the log and the audit only
        self.account_id = account_id
        super().__init__("sign-in to this account is disabled")


class ProviderUnavailable(ContractError):
    """A provider's configuration could not be loaded (discovery failed, …): an internal error."""

    wire = Wire(
        500, "internal_error", "the provider's configuration could not be loaded", logged=True
    )
