"""What the OpenAPI document says beyond the types: the tags and example error bodies, each built
the way the operation answers it, so that an example cannot drift from the contract."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from authgate.domain import errors
from authgate.domain.scopes import ACCOUNT_MANAGE, READ_SCOPES
from authgate.entrypoints.http.common.errors import app_error, http_error
from authgate.entrypoints.http.common.session_auth import cross_site_refusal
from authgate.entrypoints.rest import Api, HttpError
from authgate.entrypoints.rest.security import insufficient_scope, unauthorized

SIGN_IN = "sign-in"
ACCOUNT = "account"
PROVIDER_EVENTS = "provider-events"
PASSKEYS = "passkeys"
OPENID_PROVIDER = "openid-provider"

TAGS = {
    SIGN_IN: "Signing in with an identity provider (also registering, linking another "
    "provider, re-authenticating) and signing out.",
    ACCOUNT: "The signed-in caller's account: linked providers, sessions, deletion and "
    "export; and the public keys that verify session tokens.",
    PROVIDER_EVENTS: "Security events that identity providers push to the service "
    "(back-channel logout, Apple notifications, RISC).",
    PASSKEYS: "Passkeys (WebAuthn): a sign-in method of an account beside its providers — "
    "adding one, signing in with one, listing, renaming and removing them.",
    OPENID_PROVIDER: "The service as the OpenID Provider of the applications registered "
    "under clients: its discovery document.",
}

Examples = dict[int, dict[str, dict[str, Any]]]


def describe_tags(api: Api, *names: str) -> None:
    """Describe these tags on the API's document."""
    for name in names:
        api.describe_tag(name, TAGS[name])


def error_examples(*failures: Exception) -> Examples:
    """Example error bodies by status, then by code (the first of a code wins)."""
    found: Examples = {}
    for failure in failures:
        answer = failure if isinstance(failure, HttpError) else http_error(failure)
        found.setdefault(answer.status, {}).setdefault(str(answer.body["error"]), answer.body)
    return found


def unknown_provider(configured: Sequence[str]) -> errors.InvalidProvider:
    return errors.InvalidProvider("example", list(configured))


NO_CREDENTIAL = unauthorized("missing bearer token")
BAD_TOKEN = unauthorized("invalid or expired bearer token")
CROSS_SITE = cross_site_refusal()
STEP_UP = errors.ReauthenticationRequired(300)


def rate_limited_example(message: str) -> HttpError:
    """The 429 of a rate limit that answers ``message``."""
    return app_error(429, "rate_limited", message)


READ_SCOPE = insufficient_scope(frozenset(READ_SCOPES))
MANAGE_SCOPE = insufficient_scope(frozenset({ACCOUNT_MANAGE}))
# What a read of the caller's account refuses: no credential, or one without a read scope.
READ_REFUSALS = (NO_CREDENTIAL, READ_SCOPE)
# What a change to the caller's account refuses before its own rules: no credential, a stale
# sign-in, a credential without account:manage, a cookie sent from another site.
CHANGE_REFUSALS = (NO_CREDENTIAL, STEP_UP, MANAGE_SCOPE, CROSS_SITE)
