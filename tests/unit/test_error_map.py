"""The one error map (entrypoints/http/common/errors.py), tested once, table-driven: every domain
error has an answer, and each answer is the contract's (spec 7.1, 7.2)."""

from __future__ import annotations

import inspect
from urllib.parse import parse_qs, urlsplit

import pytest

from authgate.domain import errors
from authgate.entrypoints.http.common.errors import ANSWERS, callback_answer, http_error

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
        if issubclass(c, Exception) and c is not errors.SignInError
    }
    assert kinds <= set(ANSWERS)
    assert {type(e) for e, *_ in CASES} == kinds


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
