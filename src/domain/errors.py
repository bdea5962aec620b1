"""The domain's failures. The HTTP entrypoint maps each to a status and body in one place."""

from __future__ import annotations

from collections.abc import Sequence


class SignInError(Exception):
    """Base of every expected failure of sign-in and of the account. ``str(e)`` is safe to
    show to a client."""


class InvalidProvider(SignInError):
    def __init__(self, given: str, supported: Sequence[str]) -> None:
        self.given = given
        self.supported = tuple(supported)
        super().__init__(
            f"unsupported provider '{given}'; valid providers: {', '.join(self.supported)}"
        )


class MissingParameter(SignInError):
    def __init__(self, name: str) -> None:
        self.name = name
        super().__init__(f"missing required parameter: {name}")


class InvalidRequest(SignInError):
    """A malformed request other than a missing redirect_uri (code/state absent, bad URI)."""


class InvalidState(SignInError):
    """The state is absent, expired, already used, for another provider or not this browser's."""

    def __init__(self, detail: str) -> None:
        self.detail = detail  # for the log only
        super().__init__("the sign-in state is missing, expired or does not match")


class AccessDenied(SignInError):
    """The user (or the provider) refused the authorization."""

    def __init__(self, provider_error: str, description: str | None = None) -> None:
        self.provider_error = provider_error
        self.description = description
        super().__init__("the authorization was denied")


class ProviderError(SignInError):
    """The provider answered the authorization with an error other than a denial."""

    def __init__(self, provider_error: str, description: str | None = None) -> None:
        self.provider_error = provider_error
        self.description = description
        super().__init__("the provider reported an error")


class AuthenticationFailed(SignInError):
    """The code exchange or the verification of the provider's answer failed.

    ``reason`` goes to the redirect (``token_exchange_failed``, ``invalid_id_token``, …);
    ``detail`` only to the log.
    """

    def __init__(self, reason: str, detail: str) -> None:
        self.reason = reason
        self.detail = detail
        super().__init__("authentication with the provider failed")


class AccountNotFound(SignInError):
    def __init__(self) -> None:
        super().__init__("no account exists for this provider identity")


class IdentityLinkedElsewhere(SignInError):
    """Linking an identity that already belongs to another account."""

    def __init__(self) -> None:
        super().__init__("this provider identity is linked to another account")


class NotAuthenticated(SignInError):
    """An operation that needs a signed-in caller (linking, re-authenticating) got none;
    ``intent`` says which, so the answer can tell the person what to do first."""

    def __init__(self, message: str, intent: str = "link") -> None:
        self.intent = intent
        super().__init__(message)


class LastIdentity(SignInError):
    """Unlinking the only provider identity of an account would lock its owner out."""

    def __init__(self, provider: str) -> None:
        self.provider = provider
        super().__init__(
            f"'{provider}' is the account's only linked provider; link another one before "
            "removing it"
        )


class IdentityNotLinked(SignInError):
    """The account holds no identity at that provider."""

    def __init__(self, provider: str) -> None:
        self.provider = provider
        super().__init__(f"provider '{provider}' is not linked to this account")


class AccountGone(SignInError):
    """The signed-in caller's account no longer exists (deleted since the token was issued)."""

    def __init__(self) -> None:
        super().__init__("the signed-in account no longer exists")


class TemporarilyUnavailable(SignInError):
    """The service cannot take a new sign-in right now (its pending sign-ins are at capacity)."""

    def __init__(self) -> None:
        super().__init__("the service cannot start a sign-in right now; retry shortly")


class ReauthenticationRefused(SignInError):
    """A re-authentication that did not prove the caller: another identity, or a provider
    authentication older than the request (the provider did not ask again)."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__("the re-authentication did not confirm the signed-in user")


class SessionNotFound(SignInError):
    """The account has no live session with that id."""

    def __init__(self) -> None:
        super().__init__("no live session of this account has that id")


class AppNotFound(SignInError):
    """The account has neither a grant nor live tokens of that application (client_id)."""

    def __init__(self, client_id: str) -> None:
        self.client_id = client_id
        super().__init__("no application of this account has that client_id")


class ReauthenticationRequired(SignInError):
    """RFC 9470: the change needs a sign-in at the provider no older than ``max_age`` seconds."""

    def __init__(self, max_age: int) -> None:
        self.max_age = max_age
        super().__init__(
            f"this change needs a recent sign-in (within {max_age} seconds): sign in again "
            "with intent=reauthenticate"
        )


class IdentityDisabled(SignInError):
    """Sign-in through this provider identity is refused: its provider reported the account
    disabled (RISC ``account-disabled``) and has not reported it enabled again."""

    def __init__(self, reason: str) -> None:
        self.reason = reason  # for the log and the audit only
        super().__init__("sign-in through this provider account is disabled")


class InvalidPasskeyChallenge(SignInError):
    """No challenge of this ceremony is waiting for this browser: none was asked for, it was
    used, it expired, or it was issued to another browser or the other ceremony."""

    def __init__(self, detail: str) -> None:
        self.detail = detail  # for the log and the audit only
        super().__init__(
            "the passkey challenge is missing, expired, already used or was issued to another "
            "browser or ceremony: ask for new options"
        )


class InvalidPasskeyResponse(SignInError):
    """The browser's passkey response cannot be read (missing members, bad encodings)."""

    def __init__(self, detail: str) -> None:
        self.detail = detail
        super().__init__(f"the passkey response is malformed: {detail}")


class PasskeyNotVerified(SignInError):
    """The passkey response was read but failed a check: ``reason`` names which (origin, RP
    ID, type, user presence or verification, signature, counter)."""

    def __init__(self, reason: str, account_id: str | None = None) -> None:
        self.reason = reason
        self.account_id = account_id  # the passkey's, when one was found (for the audit)
        super().__init__(f"the passkey response was not verified: {reason}")


class UnknownPasskey(SignInError):
    """No account holds the credential that signed (never registered, or removed)."""

    def __init__(self) -> None:
        super().__init__("no account has this passkey (it may have been removed)")


class PasskeyAlreadyRegistered(SignInError):
    """The credential is registered already (to this or another account)."""

    def __init__(self) -> None:
        super().__init__("this passkey is registered already")


class PasskeyNotFound(SignInError):
    """The account has no passkey with that id."""

    def __init__(self) -> None:
        super().__init__("no passkey of this account has that id")


class LastSignInMethod(SignInError):
    """Removing the passkey would leave the account with no way to sign in."""

    def __init__(self) -> None:
        super().__init__(
            "this passkey is the account's only sign-in method; add another passkey or link a "
            "provider before removing it"
        )


class InvalidPasskeyName(SignInError):
    def __init__(self, limit: int) -> None:
        super().__init__(f"a passkey's name is 1 to {limit} characters without control characters")


class AccountDisabled(SignInError):
    """A provider reported an identity of the account disabled (RISC account-disabled): a
    passkey sign-in to it is refused as a sign-in through that provider is."""

    def __init__(self, reason: str, account_id: str | None = None) -> None:
        self.reason = reason  # for the log and the audit only
        self.account_id = account_id
        super().__init__("sign-in to this account is disabled")


class ProviderUnavailable(Exception):
    """A provider's configuration could not be loaded (discovery failed, …): an internal error."""
