"""Every error's answer on the wire, tested once, table-driven, through the renderers of
entrypoints/http/common/errors.py: every domain error has an answer, and each is its format's
(the contract's, spec 7.1, 7.2; RFC 6749; RFC 6750; RFC 8935), status, body and headers."""

from __future__ import annotations

import inspect
import json
from urllib.parse import parse_qs, urlsplit

import pytest
from aiohttp import web
from aiohttp.test_utils import make_mocked_request

from authgate.domain import errors
from authgate.domain.openid import refusals
from authgate.entrypoints.http.common.errors import (
    OIDC_LOGOUT,
    answer_error,
    callback_answer,
    http_error,
)
from authgate.ports.provider_events import EventTokenRejected, EventTokenUnavailable

LOGIN = "https://app.example.com/login"

CASES: list[tuple[Exception, int, str, tuple[str, str] | None]] = [
    (errors.InvalidProvider("x", ["google"]), 400, "invalid_provider", None),
    (errors.MissingParameter("redirect_uri"), 400, "missing_parameter", None),
    (errors.InvalidRequest("missing required parameter: code"), 400, "invalid_request", None),
    (errors.InvalidState("detail for the log"), 401, "invalid_state", None),
    (errors.NotAuthenticated("x"), 401, "unauthorized", None),
    (errors.AccessDenied("access_denied"), 403, "access_denied", ("access_denied", "user_denied")),
    (
        errors.IdentityDisabled("hijacking"),
        403,
        "access_denied",
        ("access_denied", "identity_disabled"),
    ),
    (
        errors.ProviderError("server_error"),
        502,
        "provider_error",
        ("authentication_failed", "provider_error"),
    ),
    (
        errors.AuthenticationFailed("token_exchange_failed", "detail"),
        502,
        "authentication_failed",
        ("authentication_failed", "token_exchange_failed"),
    ),
    (
        errors.AccountNotFound(),
        404,
        "account_not_found",
        ("account_not_found", "no_account_for_provider"),
    ),
    (
        errors.IdentityLinkedElsewhere(),
        409,
        "account_conflict",
        ("account_conflict", "identity_linked_to_another_account"),
    ),
    (errors.AccountGone(), 404, "account_not_found", None),
    (errors.IdentityNotLinked("facebook"), 404, "provider_not_linked", None),
    (errors.LastIdentity("google"), 409, "last_provider", None),
    (errors.SessionNotFound(), 404, "session_not_found", None),
    (errors.AppNotFound("web"), 404, "app_not_found", None),
    (
        errors.ReauthenticationRefused("reauthentication_identity_mismatch"),
        403,
        "reauthentication_refused",
        ("authentication_failed", "reauthentication_identity_mismatch"),
    ),
    (errors.ReauthenticationRequired(600), 401, "reauthentication_required", None),
    (errors.TemporarilyUnavailable(), 503, "temporarily_unavailable", None),
    (errors.ProviderUnavailable("discovery failed"), 500, "internal_error", None),
    (errors.InvalidPasskeyChallenge("detail"), 400, "invalid_challenge", None),
    (errors.InvalidPasskeyResponse("it cannot be decoded"), 400, "invalid_passkey_response", None),
    (errors.PasskeyNotVerified("the user was not verified"), 400, "passkey_not_verified", None),
    (errors.UnknownPasskey(), 401, "unknown_passkey", None),
    (errors.PasskeyAlreadyRegistered(), 409, "passkey_already_registered", None),
    (errors.PasskeyNotFound(), 404, "passkey_not_found", None),
    (errors.LastSignInMethod(), 409, "last_sign_in_method", None),
    (errors.InvalidPasskeyName(64), 400, "invalid_request", None),
    (errors.AccountDisabled("account-disabled"), 403, "access_denied", None),
]


def test_every_domain_error_has_an_answer() -> None:
    kinds = {
        c
        for _, c in inspect.getmembers(errors, inspect.isclass)
        if issubclass(c, Exception) and c not in (errors.SignInError, errors.ContractError)
    }
    assert {type(e) for e, *_ in CASES} == kinds
    for kind in kinds:
        assert http_error(next(e for e, *_ in CASES if type(e) is kind)).status


@pytest.mark.parametrize(("error", "status", "code", "redirect"), CASES)
def test_json_answer(error: Exception, status: int, code: str, redirect: object) -> None:
    answer = http_error(error)
    assert answer.status == status
    assert answer.body["error"] == code
    assert answer.body["message"]
    # A detail meant for the log never reaches the body.
    assert "detail" not in answer.body["message"] or isinstance(error, errors.InvalidRequest)


@pytest.mark.parametrize(("error", "status", "code", "redirect"), CASES)
def test_callback_answer(
    error: Exception, status: int, code: str, redirect: tuple[str, str] | None
) -> None:
    response = callback_answer(error, LOGIN, json_only=False)
    assert response.headers["Cache-Control"] == "no-store"
    assert response.headers["Referrer-Policy"] == "no-referrer"
    if redirect is None:
        assert response.status == status
        return
    assert response.status == 302
    location = urlsplit(response.headers["Location"])
    assert f"{location.scheme}://{location.netloc}{location.path}" == LOGIN
    assert parse_qs(location.query) == {"error": [redirect[0]], "reason": [redirect[1]]}


def test_a_denial_answers_json_to_a_client_that_accepts_only_json() -> None:
    response = callback_answer(errors.AccessDenied("access_denied"), LOGIN, json_only=True)
    assert response.status == 403
    # Other redirects stay redirects whatever the client accepts.
    other = callback_answer(errors.AccountNotFound(), LOGIN, json_only=True)
    assert other.status == 302


def test_an_unmapped_error_is_a_bug_for_the_500_handler() -> None:
    with pytest.raises(KeyError):
        http_error(KeyError("not a domain error"))


NO_STORE = {"Cache-Control": "no-store", "Pragma": "no-cache"}
FIXED = {"Content-Type": "application/json"}

# Each answer exactly: status, body and the headers the error adds.
WIRE: list[tuple[Exception, int, dict[str, str], dict[str, str]]] = [
    (
        errors.NotAuthenticated("x", intent="reauthenticate"),
        401,
        {"error": "unauthorized", "message": "sign in before re-authenticating"},
        {"WWW-Authenticate": "Bearer"},
    ),
    (
        errors.NotAuthenticated("x", intent="other"),
        401,
        {"error": "unauthorized", "message": "sign in first"},
        {"WWW-Authenticate": "Bearer"},
    ),
    (
        errors.ReauthenticationRequired(600),
        401,
        {
            "error": "reauthentication_required",
            "message": "this change needs a recent sign-in (within 600 seconds): sign in "
            "again with intent=reauthenticate",
        },
        {
            "WWW-Authenticate": 'Bearer error="insufficient_user_authentication", '
            'error_description="A more recent authentication is required", max_age=600'
        },
    ),
    (
        errors.TemporarilyUnavailable(),
        503,
        {
            "error": "temporarily_unavailable",
            "message": "the service cannot start a sign-in right now; retry shortly",
        },
        {"Retry-After": "60"},
    ),
    (
        errors.ProviderUnavailable("discovery failed"),
        500,
        {"error": "internal_error", "message": "the provider's configuration could not be loaded"},
        {},
    ),
    (
        EventTokenUnavailable("keys"),
        503,
        {
            "error": "temporarily_unavailable",
            "message": "the provider's keys cannot be loaded; retry later",
        },
        {"Retry-After": "60", "Cache-Control": "no-store"},
    ),
    (
        refusals.OAuthInvalidRequest("code is missing"),
        400,
        {"error": "invalid_request", "error_description": "code is missing"},
        NO_STORE,
    ),
    (
        refusals.InvalidClient("the secret is wrong"),
        401,
        {"error": "invalid_client", "error_description": "client authentication failed"},
        NO_STORE,
    ),
    (
        refusals.InvalidClient("the secret is wrong", challenge="Basic"),
        401,
        {"error": "invalid_client", "error_description": "client authentication failed"},
        {**NO_STORE, "WWW-Authenticate": 'Basic realm="authgate", charset="UTF-8"'},
    ),
    (
        refusals.OAuthUnavailable("the client's keys cannot be fetched; retry later"),
        503,
        {
            "error": "temporarily_unavailable",
            "error_description": "the client's keys cannot be fetched; retry later",
        },
        {**NO_STORE, "Retry-After": "5"},
    ),
    (
        refusals.InvalidGrant("the code was used already"),
        400,
        {"error": "invalid_grant", "error_description": "the code was used already"},
        NO_STORE,
    ),
    (
        refusals.UnsupportedGrantType("no"),
        400,
        {"error": "unsupported_grant_type", "error_description": "no"},
        NO_STORE,
    ),
    (
        refusals.InvalidScope("wider"),
        400,
        {"error": "invalid_scope", "error_description": "wider"},
        NO_STORE,
    ),
    (
        refusals.ClientNotAllowed("this client may not introspect tokens"),
        403,
        {
            "error": "unauthorized_client",
            "error_description": "this client may not introspect tokens",
        },
        NO_STORE,
    ),
    (
        refusals.OAuthRateLimited(7),
        429,
        {
            "error": "temporarily_unavailable",
            "error_description": "too many requests; retry in 7 s",
        },
        {**NO_STORE, "Retry-After": "7"},
    ),
    (
        refusals.NoAccessToken(),
        401,
        {"error": "invalid_token", "error_description": "an access token is required"},
        {"WWW-Authenticate": 'Bearer realm="authgate"', **NO_STORE},
    ),
    (
        refusals.InvalidAccessToken("expired"),
        401,
        {
            "error": "invalid_token",
            "error_description": "the access token is invalid, expired or revoked",
        },
        {
            "WWW-Authenticate": 'Bearer realm="authgate", error="invalid_token", '
            'error_description="the access token is invalid, expired or revoked"',
            **NO_STORE,
        },
    ),
    (
        refusals.InsufficientScope("openid"),
        403,
        {
            "error": "insufficient_scope",
            "error_description": "the access token lacks the openid scope",
        },
        {
            "WWW-Authenticate": 'Bearer realm="authgate", error="insufficient_scope", '
            'error_description="the access token lacks the openid scope", scope="openid"',
            **NO_STORE,
        },
    ),
    (
        refusals.BearerRateLimited(3),
        429,
        {
            "error": "temporarily_unavailable",
            "error_description": "too many requests; retry in 3 s",
        },
        {
            "WWW-Authenticate": 'Bearer realm="authgate", error="temporarily_unavailable", '
            'error_description="too many requests; retry in 3 s"',
            **NO_STORE,
            "Retry-After": "3",
        },
    ),
    (
        refusals.BearerInvalidRequest('sent "twice" \\ é'),
        400,
        {"error": "invalid_request", "error_description": 'sent "twice" \\ é'},
        {
            "WWW-Authenticate": 'Bearer realm="authgate", error="invalid_request", '
            "error_description=\"sent 'twice' ' '\"",
            **NO_STORE,
        },
    ),
    (
        EventTokenRejected("invalid_issuer", "the issuer is not the provider's"),
        400,
        {"err": "invalid_issuer", "description": "the issuer is not the provider's"},
        {"Cache-Control": "no-store"},
    ),
]


def _answer(error: Exception, oidc_logout: bool = False) -> web.Response:
    http = make_mocked_request("POST", "/any")
    http[OIDC_LOGOUT] = oidc_logout
    response = answer_error(http, error)
    assert isinstance(response, web.Response)
    return response


@pytest.mark.parametrize(("error", "status", "body", "headers"), WIRE)
def test_wire_answer(
    error: Exception, status: int, body: dict[str, str], headers: dict[str, str]
) -> None:
    response = _answer(error)
    assert response.status == status
    assert isinstance(response.body, bytes)
    assert json.loads(response.body) == body
    assert list(response.headers.items()) == list({**headers, **FIXED}.items())


def test_a_back_channel_logout_refusal_names_the_error_as_openid_connect_does() -> None:
    response = _answer(EventTokenRejected("invalid_key", "bad key"), oidc_logout=True)
    assert response.status == 400
    assert isinstance(response.body, bytes)
    assert list(json.loads(response.body).items()) == [
        ("error", "invalid_request"),
        ("error_description", "bad key"),
        ("err", "invalid_key"),
        ("description", "bad key"),
    ]


def test_anything_else_is_left_to_the_500_handler() -> None:
    assert answer_error(make_mocked_request("GET", "/"), KeyError("a bug")) is None
