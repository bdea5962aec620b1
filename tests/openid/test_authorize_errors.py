"""The authorization endpoint's refusals: an unknown client or redirect URI is an error page
and never a redirect; every other fault goes to the registered redirect_uri as an OAuth error,
with the state unchanged and the issuer (RFC 9207)."""

from __future__ import annotations

import base64
import json
import secrets

import pytest
from aiohttp import ClientResponse

from .harness import ISSUER, WEB_REDIRECT, Op, Request


async def error_page(response: ClientResponse) -> str:
    assert response.status == 400, await response.text()
    assert "Location" not in response.headers
    assert response.content_type == "text/html"
    assert response.headers["X-Frame-Options"] == "DENY"
    assert response.headers["Cache-Control"] == "no-store"
    assert "frame-ancestors 'none'" in response.headers["Content-Security-Policy"]
    return await response.text()


async def refusal(op: Op, request: Request, error: str, **kwargs: object) -> dict[str, str]:
    response = await op.authorize(request, **kwargs)  # type: ignore[arg-type]
    answer = await op.answer(response)
    assert answer.redirect_uri == request.redirect_uri
    assert answer.params["error"] == error, answer.params
    assert "code" not in answer.params
    assert answer.params["iss"] == ISSUER
    assert answer.params.get("state") == request.state
    return answer.params


async def test_oidcc_ensure_registered_redirect_uri(op: Op) -> None:
    await op.sign_in()
    html = await error_page(await op.authorize(Request(redirect_uri="https://evil.example/cb")))
    assert "is not registered for the client" in html
    # a registered one with a query added, or another path, is another URI
    for uri in (WEB_REDIRECT + "?x=1", "https://web.example.com/cb/", "https://WEB.example.com/cb"):
        await error_page(await op.authorize(Request(redirect_uri=uri)))


@pytest.mark.parametrize(
    "params",
    [
        {"client_id": "nobody"},
        {"client_id": ""},
        {"redirect_uri": ""},
    ],
)
async def test_an_unknown_client_or_missing_redirect_uri_is_an_error_page(
    op: Op, params: dict[str, str]
) -> None:
    request = Request()
    sent = {**request.params(), **params}
    response = await op.client.get("/oauth2/authorize", params=sent, allow_redirects=False)
    await error_page(response)


async def test_a_repeated_client_id_is_an_error_page(op: Op) -> None:
    query = [*Request().params().items(), ("client_id", "web")]
    await error_page(await op.client.get("/oauth2/authorize", params=query))


async def test_oidcc_response_type_missing(op: Op) -> None:
    request = Request()
    params = {k: v for k, v in request.params().items() if k != "response_type"}
    response = await op.client.get("/oauth2/authorize", params=params, allow_redirects=False)
    answer = await op.answer(response)
    assert answer.redirect_uri == WEB_REDIRECT
    assert answer.params["error"] == "invalid_request"
    assert answer.params["state"] == request.state
    assert "code" not in answer.params


@pytest.mark.parametrize("response_type", ["token", "id_token", "code id_token", "code token"])
async def test_only_the_code_flow_is_served(op: Op, response_type: str) -> None:
    await refusal(op, Request(extra={"response_type": response_type}), "unsupported_response_type")


async def test_oidcc_request_uri_unsigned_supported_correctly_or_rejected_as_unsupported(
    op: Op,
) -> None:
    await op.sign_in()
    request = Request(extra={"request_uri": "https://web.example.com/request.jwt"})
    await refusal(op, request, "request_uri_not_supported")


async def test_oidcc_unsigned_request_object_supported_correctly_or_rejected_as_unsupported(
    op: Op,
) -> None:
    await op.sign_in()
    request = Request(extra={"request": "eyJhbGciOiJub25lIn0.eyJzdGF0ZSI6IngifQ."})
    await refusal(op, request, "request_not_supported")


async def test_oidcc_ensure_request_object_with_redirect_uri(op: Op) -> None:
    """The registered redirect_uri only inside an unsigned request object, an unregistered
    one as the plain parameter: request objects are not supported, so the plain one is the
    request's, and it earns the error page, never a redirect to either URI."""
    await op.sign_in()
    bad = "https://evil.example/cb-" + secrets.token_urlsafe(8)
    inner = Request()
    payload = {**inner.params(), "redirect_uri": WEB_REDIRECT}
    body = base64.urlsafe_b64encode(json.dumps(payload).encode()).rstrip(b"=").decode()
    request = Request(redirect_uri=bad, extra={"request": f"eyJhbGciOiJub25lIn0.{body}."})
    response = await op.authorize(request)
    html = await error_page(response)
    # The page names the plain parameter's URI (the one compared), not the request object's.
    assert f"the redirect_uri &#x27;{bad}&#x27; is not registered for the client" in html
    assert WEB_REDIRECT not in html


@pytest.mark.parametrize(
    ("extra", "error"),
    [
        ({"scope": "profile"}, "invalid_scope"),
        ({"code_challenge_method": "plain"}, "invalid_request"),
        ({"code_challenge": "short"}, "invalid_request"),
        ({"prompt": "none login"}, "invalid_request"),
        ({"max_age": "-1"}, "invalid_request"),
        ({"max_age": "soon"}, "invalid_request"),
        ({"response_mode": "fragment"}, "invalid_request"),
        ({"nonce": "x" * 600}, "invalid_request"),
    ],
)
async def test_malformed_requests_are_refused_at_the_redirect_uri(
    op: Op, extra: dict[str, str], error: str
) -> None:
    await op.sign_in()
    await refusal(op, Request(extra=extra), error)


async def test_pkce_is_required(op: Op) -> None:
    await op.sign_in()
    request = Request()
    for dropped in ("code_challenge", "code_challenge_method"):
        params = {k: v for k, v in request.params().items() if k != dropped}
        response = await op.client.get(
            "/oauth2/authorize", params=params, headers=op.cookie_header(), allow_redirects=False
        )
        assert (await op.answer(response)).params["error"] == "invalid_request"


async def test_scope_values_the_provider_does_not_serve_are_ignored(op: Op) -> None:
    # OpenID Connect Core 3.1.2.1: a scope value not understood is ignored, not refused (the
    # OIDF suite sends address and phone when it runs without discovery).
    await op.sign_in()
    request = Request(scope="openid address phone admin email")
    tokens = await op.tokens(request, await op.code(request))
    assert tokens["scope"].split() == ["openid", "email"]


async def test_a_scope_the_client_may_not_have_is_invalid_scope(op: Op) -> None:
    await op.sign_in()
    request = Request(
        client_id="native", redirect_uri="http://127.0.0.1:9/callback", scope="openid email"
    )
    await refusal(op, request, "invalid_scope")


async def test_a_repeated_parameter_is_invalid_request(op: Op) -> None:
    await op.sign_in()
    request = Request()
    query = [*request.params().items(), ("scope", "openid")]
    response = await op.client.get(
        "/oauth2/authorize", params=query, headers=op.cookie_header(), allow_redirects=False
    )
    answer = await op.answer(response)
    assert answer.params["error"] == "invalid_request"
    assert answer.params["state"] == request.state


async def test_an_error_in_form_post_mode_is_posted(op: Op) -> None:
    request = Request(extra={"response_mode": "form_post", "prompt": "none"})
    response = await op.authorize(request)
    assert response.status == 200 and response.content_type == "text/html"
    answer = await op.answer(response)
    assert answer.redirect_uri == WEB_REDIRECT
    assert answer.params["error"] == "login_required"
    assert answer.params["state"] == request.state


async def test_a_state_with_characters_to_escape_comes_back_unchanged(op: Op) -> None:
    await op.sign_in()
    state = "a b&c=d+é/\"'<>" + "x" * 200
    answer = await op.answer(await op.authorize(Request(state=state)))
    assert answer.params["state"] == state
    posted = await op.answer(
        await op.authorize(Request(state=state, extra={"response_mode": "form_post"}))
    )
    assert posted.params["state"] == state


async def test_a_state_too_long_is_refused_without_echoing_it(op: Op) -> None:
    await op.sign_in()
    answer = await op.answer(await op.authorize(Request(state="x" * 1025)))
    assert answer.redirect_uri == WEB_REDIRECT
    assert answer.params["error"] == "invalid_request"
    assert "longer than 1024" in answer.params["error_description"]
    assert "state" not in answer.params
    assert answer.params["iss"] == ISSUER
    # one character less is a state like any other
    state = "x" * 1024
    assert (await op.answer(await op.authorize(Request(state=state)))).params["state"] == state
