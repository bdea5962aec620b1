"""The one place where failures become HTTP answers (spec 7.1, 7.2).

:data:`ANSWERS` maps every domain error to its status, code and message, and — for the
callback, which answers a browser — to the redirect to the login page where there is one.
Operations let domain errors propagate: :func:`answer_error` is the API's exception handler
(:meth:`~authgate.entrypoints.rest.Api.on_exception`) and answers them, the providers' refused
event tokens included (RFC 8935 bodies) and the OpenID Provider's errors (RFC 6749 bodies,
:func:`oauth_refusal`); the callback answers :func:`callback_answer`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from urllib.parse import urlencode

import attrs
from aiohttp import web

from authgate.domain import errors
from authgate.domain.openid.refusals import (
    BearerTokenError,
    ClientNotAllowed,
    InsufficientScope,
    InvalidClient,
    NoAccessToken,
    OAuthError,
    OAuthRateLimited,
    OAuthUnavailable,
)
from authgate.entrypoints.rest import HttpError, json_response, log_safe
from authgate.ports.provider_events import (
    INVALID_REQUEST,
    EventTokenRejected,
    EventTokenUnavailable,
)
from authgate.ports.ratelimit import RateDecision

log = logging.getLogger("authgate.http")

# Callback responses carry no cacheable content and leak no URL (with its code) onward.
CALLBACK_HEADERS = {"Cache-Control": "no-store", "Referrer-Policy": "no-referrer"}


@attrs.frozen
class Answer:
    """How one kind of failure is answered.

    ``message``: the body's message (None: the error's own text, which is safe to show), or a
    function of the error for a message that depends on its values.
    ``redirect``: the callback's ``(error, reason)`` for the login page (reason None: the
    error's ``reason``); a callback failure without one answers JSON.
    ``json_first``: the callback answers JSON anyway to a client that accepts only JSON.
    ``headers``: fixed headers, or a function of the error for headers that carry its values.
    ``logged``: an outage the operator must see, logged as an error (with the request's path,
    which names the provider).
    """

    status: int
    code: str
    message: str | Callable[[Exception], str] | None = None
    redirect: tuple[str, str | None] | None = None
    json_first: bool = False
    headers: Mapping[str, str] | Callable[[Exception], Mapping[str, str]] = attrs.field(
        factory=dict
    )
    logged: bool = False

    def headers_for(self, e: Exception) -> Mapping[str, str]:
        return self.headers(e) if callable(self.headers) else self.headers

    def message_for(self, e: Exception) -> str:
        if callable(self.message):
            return self.message(e)
        return self.message or str(e)


def _step_up_challenge(e: Exception) -> Mapping[str, str]:
    # RFC 9470 section 3: the resource server tells the client what authentication it needs.
    max_age = getattr(e, "max_age", 0)
    return {
        "WWW-Authenticate": f'Bearer error="insufficient_user_authentication", '
        f'error_description="A more recent authentication is required", max_age={max_age}'
    }


# What a signed-out caller must do first, per intent that needs a signed-in one.
_SIGN_IN_FIRST = {
    "link": "sign in before linking another provider",
    "reauthenticate": "sign in before re-authenticating",
}


def _sign_in_first(e: Exception) -> str:
    return _SIGN_IN_FIRST.get(getattr(e, "intent", "link"), "sign in first")


ANSWERS: Mapping[type[Exception], Answer] = {
    errors.InvalidProvider: Answer(400, "invalid_provider"),
    errors.MissingParameter: Answer(400, "missing_parameter"),
    errors.InvalidRequest: Answer(400, "invalid_request"),
    errors.InvalidState: Answer(401, "invalid_state"),
    errors.NotAuthenticated: Answer(
        401,
        "unauthorized",
        _sign_in_first,
        headers={"WWW-Authenticate": "Bearer"},
    ),
    errors.AccessDenied: Answer(
        403,
        "access_denied",
        "the authorization was denied at the provider",
        redirect=("access_denied", "user_denied"),
        json_first=True,
    ),
    errors.ProviderError: Answer(
        502, "provider_error", redirect=("authentication_failed", "provider_error")
    ),
    errors.AuthenticationFailed: Answer(
        502, "authentication_failed", redirect=("authentication_failed", None)
    ),
    # The provider reported the account disabled (RISC account-disabled): the spec's
    # access_denied, with its own reason (docs/providers.md, "Provider events").
    errors.IdentityDisabled: Answer(
        403,
        "access_denied",
        "sign-in through this provider account is disabled",
        redirect=("access_denied", "identity_disabled"),
        json_first=True,
    ),
    errors.ReauthenticationRefused: Answer(
        403, "reauthentication_refused", redirect=("authentication_failed", None)
    ),
    errors.AccountNotFound: Answer(
        404, "account_not_found", redirect=("account_not_found", "no_account_for_provider")
    ),
    errors.IdentityLinkedElsewhere: Answer(
        409,
        "account_conflict",
        redirect=("account_conflict", "identity_linked_to_another_account"),
    ),
    errors.AccountGone: Answer(404, "account_not_found"),
    errors.IdentityNotLinked: Answer(404, "provider_not_linked"),
    errors.LastIdentity: Answer(409, "last_provider"),
    errors.SessionNotFound: Answer(404, "session_not_found"),
    errors.AppNotFound: Answer(404, "app_not_found"),
    errors.ReauthenticationRequired: Answer(
        401, "reauthentication_required", headers=_step_up_challenge
    ),
    errors.InvalidPasskeyChallenge: Answer(400, "invalid_challenge"),
    errors.InvalidPasskeyResponse: Answer(400, "invalid_passkey_response"),
    errors.PasskeyNotVerified: Answer(400, "passkey_not_verified"),
    errors.UnknownPasskey: Answer(401, "unknown_passkey"),
    errors.PasskeyAlreadyRegistered: Answer(409, "passkey_already_registered"),
    errors.PasskeyNotFound: Answer(404, "passkey_not_found"),
    errors.LastSignInMethod: Answer(409, "last_sign_in_method"),
    errors.InvalidPasskeyName: Answer(400, "invalid_request"),
    # Refused like a sign-in through a disabled provider identity (docs/passkeys.md).
    errors.AccountDisabled: Answer(403, "access_denied"),
    errors.TemporarilyUnavailable: Answer(
        503, "temporarily_unavailable", headers={"Retry-After": "60"}
    ),
    errors.ProviderUnavailable: Answer(
        500, "internal_error", "the provider's configuration could not be loaded", logged=True
    ),
    # A provider's keys cannot be loaded to verify its events: its delivery is retried (RFC
    # 8935 makes a 400 final).
    EventTokenUnavailable: Answer(
        503,
        "temporarily_unavailable",
        "the provider's keys cannot be loaded; retry later",
        headers={"Retry-After": "60", "Cache-Control": "no-store"},
        logged=True,
    ),
}

OIDC_LOGOUT = web.RequestKey("authgate_oidc_logout", bool)
"""Set on a request of an OpenID Connect back-channel logout receiver: its refusals carry that
specification's ``error`` and ``error_description`` besides RFC 8935's members."""


def _find(e: Exception) -> Answer | None:
    for kind in type(e).__mro__:
        found = ANSWERS.get(kind)
        if found is not None:
            return found
    return None


def answer_for(e: Exception) -> Answer:
    """The answer of ``e``'s class (or its nearest listed base); unlisted errors are bugs and
    propagate to the REST layer's 500."""
    found = _find(e)
    if found is None:
        raise e
    return found


def answer_error(request: web.Request, e: Exception) -> web.StreamResponse | None:
    """The API's exception handler: the answer of a domain error that an operation let
    propagate; None (the REST layer's logged 500) for anything else, a bug."""
    if isinstance(e, EventTokenRejected):
        return event_refusal(e, oidc_logout=request.get(OIDC_LOGOUT, False))
    if isinstance(e, OAuthError):
        return oauth_refusal(e)
    answer = _find(e)
    if answer is None:
        return None
    if answer.logged:
        log.error("%s %s: %s", request.method, log_safe(request.path), e)
    return http_error(e).response()


# The realm of the provider's Basic challenge (RFC 7617 requires one).
OAUTH_REALM = "authgate"
OAUTH_RETRY_AFTER_SECONDS = 5


def oauth_refusal(e: OAuthError) -> web.Response:
    """RFC 6749 section 5.2: ``{"error", "error_description"}``, never cached. 400, but 401
    for ``invalid_client``, with ``WWW-Authenticate`` of the scheme the client tried in the
    ``Authorization`` header (Basic), 403 for a client that may not use the endpoint, 429
    with ``Retry-After`` for a client over its limit, and 503 with ``Retry-After`` for what
    is unavailable. A refused access token is a protected resource's answer instead
    (:func:`bearer_refusal`)."""
    if isinstance(e, BearerTokenError):
        return bearer_refusal(e)
    headers = {"Cache-Control": "no-store", "Pragma": "no-cache"}
    status = 400
    if isinstance(e, ClientNotAllowed):
        status = 403
    elif isinstance(e, OAuthRateLimited):
        status = 429
        headers["Retry-After"] = str(e.retry_after_seconds)
    elif isinstance(e, InvalidClient):
        status = 401
        if e.challenge is not None:
            headers["WWW-Authenticate"] = f'{e.challenge} realm="{OAUTH_REALM}", charset="UTF-8"'
    elif isinstance(e, OAuthUnavailable):
        status = 503
        headers["Retry-After"] = str(OAUTH_RETRY_AFTER_SECONDS)
    return json_response({"error": e.error, "error_description": e.description}, status, headers)


def bearer_refusal(e: BearerTokenError) -> web.Response:
    """RFC 6750 section 3: the protected resource's challenge, ``WWW-Authenticate: Bearer``
    with the error (none for a request without a token), and the same error as JSON. 401;
    403 for ``insufficient_scope`` (naming the scope needed); 400 for ``invalid_request``;
    429 with ``Retry-After`` for a client address over its limit."""
    challenge = f'Bearer realm="{OAUTH_REALM}"'
    status = 401
    more: dict[str, str] = {}
    if not isinstance(e, NoAccessToken):
        # RFC 6750 section 3: the description's characters exclude '"' and '\\'.
        described = "".join(c if " " <= c <= "~" and c not in '"\\' else "'" for c in e.description)
        challenge += f', error="{e.error}", error_description="{described}"'
        if isinstance(e, InsufficientScope):
            status = 403
            challenge += f', scope="{e.scope}"'
        elif isinstance(e, OAuthRateLimited):
            status = 429
            more["Retry-After"] = str(e.retry_after_seconds)
        elif e.error == "invalid_request":
            status = 400
    headers = {
        "WWW-Authenticate": challenge,
        "Cache-Control": "no-store",
        "Pragma": "no-cache",
        **more,
    }
    return json_response({"error": e.error, "error_description": e.description}, status, headers)


def event_refusal(e: EventTokenRejected, *, oidc_logout: bool) -> web.Response:
    """400 with RFC 8935's ``{"err", "description"}`` (and, for a back-channel logout, the
    OpenID Connect ``error`` and ``error_description`` first, its section 2.8)."""
    return json_response(
        event_refusal_body(e, oidc_logout=oidc_logout), 400, {"Cache-Control": "no-store"}
    )


def event_refusal_body(e: EventTokenRejected, *, oidc_logout: bool) -> dict[str, str]:
    """The body of :func:`event_refusal`."""
    body: dict[str, str] = {"err": e.code, "description": e.description}
    if oidc_logout:
        body = {"error": INVALID_REQUEST, "error_description": e.description, **body}
    return body


def app_error(
    status: int, code: str, message: str, headers: Mapping[str, str] | None = None
) -> HttpError:
    """An application error body (spec 2.5) as an exception the REST layer answers."""
    return HttpError(status, {"error": code, "message": message}, dict(headers or {}))


def http_error(e: Exception) -> HttpError:
    """The JSON answer of a failure of a JSON operation."""
    answer = answer_for(e)
    return app_error(answer.status, answer.code, answer.message_for(e), answer.headers_for(e))


def rate_limited(decision: RateDecision, message: str) -> HttpError:
    """429 ``rate_limited`` with ``Retry-After`` (and no caching)."""
    return app_error(
        429,
        "rate_limited",
        message,
        {"Retry-After": str(decision.retry_after_seconds), **CALLBACK_HEADERS},
    )


def login_redirect(login_url: str, error: str, reason: str) -> web.Response:
    """302 to ``{app_url}/login?error=…&reason=…`` (spec 7.2)."""
    location = f"{login_url}?{urlencode({'error': error, 'reason': reason})}"
    return web.Response(status=302, headers={"Location": location, **CALLBACK_HEADERS})


def callback_answer(e: Exception, login_url: str, json_only: bool) -> web.Response:
    """Spec 4.6 / 7.1 / 7.2: a redirect to the login page, or a JSON error."""
    answer = answer_for(e)
    if answer.redirect is not None and not (answer.json_first and json_only):
        error, reason = answer.redirect
        if reason is None:  # the error names its own reason (AuthenticationFailed)
            reason = str(getattr(e, "reason", error))
        return login_redirect(login_url, error, reason)
    body = {"error": answer.code, "message": answer.message_for(e)}
    return json_response(body, answer.status, {**answer.headers_for(e), **CALLBACK_HEADERS})
