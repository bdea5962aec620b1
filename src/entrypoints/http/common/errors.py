"""Where failures become HTTP answers, one renderer per wire format (spec 7.1, 7.2): the
contract's :class:`~authgate.domain.errors.ContractError`, RFC 6749 section 5.2's
:class:`~authgate.domain.openid.refusals.OAuthError`, RFC 6750's
:class:`~authgate.domain.openid.refusals.BearerTokenError` and RFC 8935's refused event tokens."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from urllib.parse import urlencode

from aiohttp import web

from authgate.domain.errors import ContractError
from authgate.domain.openid.refusals import OAUTH_REALM, BearerTokenError, OAuthError
from authgate.entrypoints.rest import HttpError, json_response, log_safe
from authgate.ports.provider_events import INVALID_REQUEST, EventTokenRejected
from authgate.ports.ratelimit import RateDecision

log = logging.getLogger("authgate.http")

# Callback responses carry no cacheable content and leak no URL (with its code) onward.
CALLBACK_HEADERS = {"Cache-Control": "no-store", "Referrer-Policy": "no-referrer"}
# The OpenID Provider's answers are never cached (RFC 6749 section 5.1).
OAUTH_NO_STORE = {"Cache-Control": "no-store", "Pragma": "no-cache"}

OIDC_LOGOUT = web.RequestKey("authgate_oidc_logout", bool)
"""Set on a request of an OpenID Connect back-channel logout receiver: its refusals carry that
specification's ``error`` and ``error_description`` besides RFC 8935's members."""


def answer_error(request: web.Request, e: Exception) -> web.StreamResponse | None:
    """The API's exception handler: an error's answer in its format; None (a logged 500) for
    anything else, a bug."""
    if isinstance(e, EventTokenRejected):
        body = event_refusal_body(e, oidc_logout=request.get(OIDC_LOGOUT, False))
        return json_response(body, e.status, {"Cache-Control": "no-store"})
    if isinstance(e, OAuthError):  # RFC 6749 section 5.2, never cached
        headers = {**OAUTH_NO_STORE, **e.wire_headers()}
        if isinstance(e, BearerTokenError):  # RFC 6750 section 3: the challenge first
            headers = {"WWW-Authenticate": _bearer_challenge(e), **headers}
        return json_response(oauth_body(e), e.status, headers)
    if not isinstance(e, ContractError):
        return None
    if e.wire.logged:
        log.error("%s %s: %s", request.method, log_safe(request.path), e)
    return http_error(e).response()


def oauth_body(e: OAuthError) -> dict[str, str]:
    """RFC 6749 section 5.2's body: ``{"error", "error_description"}``."""
    return {"error": e.error, "error_description": e.description}


def _bearer_challenge(e: BearerTokenError) -> str:
    return f'Bearer realm="{OAUTH_REALM}"' + "".join(
        f', {name}="{_challenge_text(value)}"' for name, value in e.challenge()
    )


def _challenge_text(value: str) -> str:
    # RFC 6750 section 3: the values' characters exclude '"' and '\\'.
    return "".join(c if " " <= c <= "~" and c not in '"\\' else "'" for c in value)


def oauth_example(e: OAuthError) -> HttpError:
    """An OpenID Provider's refusal as the OpenAPI document's example of it."""
    return HttpError(e.status, oauth_body(e))


def event_refusal_body(e: EventTokenRejected, *, oidc_logout: bool) -> dict[str, str]:
    """RFC 8935's ``{"err", "description"}`` (a back-channel logout's with OpenID Connect's
    ``error`` and ``error_description`` first, its section 2.8)."""
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
    """The contract's JSON answer of a failure (spec 2.5); anything else propagates."""
    if not isinstance(e, ContractError):
        raise e
    return app_error(e.wire.status, e.wire.code, e.public_message(), e.wire_headers())


def rate_limited(decision: RateDecision, message: str) -> HttpError:
    """429 ``rate_limited`` with ``Retry-After`` (and no caching)."""
    return app_error(
        429,
        "rate_limited",
        message,
        {"Retry-After": str(decision.retry_after_seconds), **CALLBACK_HEADERS},
    )


def callback_answer(e: Exception, login_url: str, json_only: bool) -> web.Response:
    """Spec 4.6 / 7.1 / 7.2: a redirect to the login page, or a JSON error."""
    if not isinstance(e, ContractError):
        raise e
    wire = e.wire
    if wire.redirect is not None and not (wire.json_first and json_only):
        error, reason = wire.redirect
        if reason is None:  # the error names its own reason (AuthenticationFailed)
            reason = str(getattr(e, "reason", error))
        location = f"{login_url}?{urlencode({'error': error, 'reason': reason})}"
        return web.Response(status=302, headers={"Location": location, **CALLBACK_HEADERS})
    body = {"error": wire.code, "message": e.public_message()}
    return json_response(body, wire.status, {**e.wire_headers(), **CALLBACK_HEADERS})
