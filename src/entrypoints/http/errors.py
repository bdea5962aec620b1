"""The one place where domain failures become HTTP answers (spec 7.1, 7.2)."""

from __future__ import annotations

from urllib.parse import urlencode

from aiohttp import web

from authgate.domain import errors
from authgate.entrypoints.rest import HttpError, json_response

# Callback responses carry no cacheable content and leak no URL (with its code) onward.
CALLBACK_HEADERS = {"Cache-Control": "no-store", "Referrer-Policy": "no-referrer"}


def app_error(status: int, code: str, message: str) -> HttpError:
    return HttpError(status, {"error": code, "message": message})


def initiation_error(e: errors.SignInError) -> HttpError:
    """Spec 4.5: the initiation answers JSON errors."""
    if isinstance(e, errors.InvalidProvider):
        return app_error(400, "invalid_provider", str(e))
    if isinstance(e, errors.MissingParameter):
        return app_error(400, "missing_parameter", str(e))
    if isinstance(e, errors.InvalidRequest):
        return app_error(400, "invalid_request", str(e))
    if isinstance(e, errors.TemporarilyUnavailable):
        return HttpError(
            503, {"error": "temporarily_unavailable", "message": str(e)}, {"Retry-After": "60"}
        )
    if isinstance(e, errors.NotAuthenticated):
        return HttpError(
            401,
            {"error": "unauthorized", "message": "sign in before linking another provider"},
            {"WWW-Authenticate": "Bearer"},
        )
    raise e


def login_redirect(login_url: str, error: str, reason: str) -> web.Response:
    """302 to ``{app_url}/login?error=…&reason=…`` (spec 7.2)."""
    location = f"{login_url}?{urlencode({'error': error, 'reason': reason})}"
    return web.Response(status=302, headers={"Location": location, **CALLBACK_HEADERS})


def callback_error(e: errors.SignInError, login_url: str, json_only: bool) -> web.Response:
    """Spec 4.6 / 7.1 / 7.2: a JSON error or a redirect to the login page."""
    if isinstance(e, errors.InvalidProvider):
        return _json(400, "invalid_provider", str(e))
    if isinstance(e, errors.AccessDenied):
        if json_only:
            return _json(403, "access_denied", "the authorization was denied at the provider")
        return login_redirect(login_url, "access_denied", "user_denied")
    if isinstance(e, errors.ProviderError):
        return login_redirect(login_url, "authentication_failed", "provider_error")
    if isinstance(e, errors.InvalidRequest):
        return _json(400, "invalid_request", str(e))
    if isinstance(e, errors.InvalidState):
        return _json(401, "invalid_state", str(e))
    if isinstance(e, errors.AuthenticationFailed):
        return login_redirect(login_url, "authentication_failed", e.reason)
    if isinstance(e, errors.AccountNotFound):
        return login_redirect(login_url, "account_not_found", "no_account_for_provider")
    if isinstance(e, errors.IdentityLinkedElsewhere):
        return login_redirect(login_url, "account_conflict", "identity_linked_to_another_account")
    raise e


def _json(status: int, code: str, message: str) -> web.Response:
    return json_response({"error": code, "message": message}, status, CALLBACK_HEADERS)
