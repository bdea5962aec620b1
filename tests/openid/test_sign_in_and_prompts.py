"""Single sign-on, authgate's sign-in page and what each prompt does, named after the OIDF
basic OP plan's modules where one checks it.

The fake provider keeps its own long-lived session for the user (``login_at``): an ordinary
sign-in is answered from it and its ID tokens say so in ``auth_time``; only a request that
forces a login (``prompt=login``, ``max_age=0``) makes the user log in there again. So a
fresh ``auth_time`` proves that authgate asked for a fresh login.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from tests.fakeidp import FakeUser
from tests.support.jwt import claims_of

from .harness import (
    ADA,
    ISSUER,
    WEB_REDIRECT,
    Op,
    Request,
    local,
    parse_page,
    query_of,
)

HOUR = 3600


async def first_id_token(op: Op, **extra: str) -> dict[str, object]:
    """The claims of an ID token from a plain flow of a signed-in browser."""
    request = Request(extra=dict(extra))
    tokens = await op.tokens(request, await op.code(request))
    return await op.verify_id_token(tokens["id_token"], nonce=request.nonce)


async def test_single_sign_on_needs_no_provider_round_trip(op: Op) -> None:
    await op.sign_in()
    authorizations = op.idp["google"].hits["authorize"]
    first = await first_id_token(op)
    request = Request(client_id="native", redirect_uri="http://127.0.0.1:4000/callback")
    tokens = await op.tokens(request, await op.code(request), client_id="native", secret=None)
    second = await op.verify_id_token(tokens["id_token"], client_id="native", nonce=request.nonce)
    assert op.idp["google"].hits["authorize"] == authorizations
    assert second["sub"] == first["sub"] and second["sid"] == first["sid"]


async def test_the_sign_in_page_offers_every_provider_and_resumes_the_request(op: Op) -> None:
    request = Request(extra={"login_hint": "ada@example.com"})
    page = await op.authorize(request)
    assert page.status == 200 and page.content_type == "text/html"
    for header, value in (
        ("Cache-Control", "no-store"),
        ("X-Frame-Options", "DENY"),
        ("X-Content-Type-Options", "nosniff"),
    ):
        assert page.headers[header] == value
    csp = page.headers["Content-Security-Policy"]
    assert "default-src 'none'" in csp and "frame-ancestors 'none'" in csp
    assert "unsafe-inline" not in csp
    html = await page.text()
    assert "<script" not in html and "http://" not in html  # nothing external
    links = dict(parse_page(html).links)
    for label in ("Google", "Facebook", "Apple"):
        for intent in ("Sign in", "Create an account"):
            start = links[f"{intent} with {label}"]
            parts = urlsplit(start)
            assert parts.path == f"/v1/auth/{label.lower()}"
            params = query_of(start)
            assert params["intent"] == ("login" if intent == "Sign in" else "register")
            assert params["login_hint"] == "ada@example.com"
            assert "prompt" not in params
            resume = params["return_to"]
            assert resume.startswith(ISSUER + "/oauth2/authorize?")
            resumed = query_of(resume)
            assert resumed["state"] == request.state
            assert resumed["code_challenge"] == request.pkce.challenge
            # Nothing in the address marks the request as resumed: the session says so.
            assert "signin_started_at" not in resumed

    answer = await op.answer(await op.sign_in_from_page(page, intent="Create an account"))
    assert answer.redirect_uri == WEB_REDIRECT and answer.params["state"] == request.state
    # the provider was told who is signing in
    assert op.idp["google"].requests_to("authorize")[-1].query["login_hint"] == "ada@example.com"
    await op.tokens(request, answer)


async def test_the_provider_parameter_goes_straight_to_that_provider(op: Op) -> None:
    await op.sign_in()  # registers ADA
    op.session = None
    request = Request(extra={"provider": "google"})
    response = await op.authorize(request)
    assert response.status == 302
    start = response.headers["Location"]
    assert urlsplit(start).path == "/v1/auth/google"
    answer = await op.answer(await op.through_provider(start))
    await op.tokens(request, answer)
    # an unknown provider shows the page
    page = await op.authorize(Request(extra={"provider": "nobody"}), cookies=False)
    assert page.status == 200


async def test_oidcc_prompt_login(op: Op) -> None:
    google = op.idp["google"]
    google.login_at = op.clock.timestamp() - HOUR  # the provider's own session
    await op.sign_in()
    first = await first_id_token(op)
    op.clock.advance(5)
    request = Request(extra={"prompt": "login"})
    page = await op.authorize(request)
    assert page.status == 200 and "sign in again" in await page.text()
    answer = await op.answer(await op.sign_in_from_page(page))
    tokens = await op.tokens(request, answer)
    second = await op.verify_id_token(tokens["id_token"], nonce=request.nonce)
    assert second["auth_time"] > first["auth_time"]  # type: ignore[operator]
    assert abs(second["auth_time"] - op.clock.timestamp()) < 5  # type: ignore[operator]
    forced = google.requests_to("authorize")[-1].query
    assert forced["prompt"] == "login" and forced["max_age"] == "0"
    assert second["sub"] == first["sub"]


async def test_oidcc_prompt_none_not_logged_in(op: Op) -> None:
    request = Request(extra={"prompt": "none"})
    response = await op.authorize(request)
    assert response.status == 302
    answer = await op.answer(response)
    assert answer.redirect_uri == WEB_REDIRECT
    assert answer.params["error"] == "login_required"
    assert answer.params["state"] == request.state and len(request.state or "") >= 128
    assert answer.params["iss"] == ISSUER
    assert "code" not in answer.params


async def test_oidcc_prompt_none_logged_in(op: Op) -> None:
    await op.sign_in()
    first = await first_id_token(op)
    op.clock.advance(3)
    second = await first_id_token(op, prompt="none")
    assert second["sub"] == first["sub"] and second["auth_time"] == first["auth_time"]


async def test_oidcc_max_age_1(op: Op) -> None:
    op.idp["google"].login_at = op.clock.timestamp() - HOUR
    await op.sign_in()
    first = await first_id_token(op)
    op.clock.advance(2)
    request = Request(extra={"max_age": "1"})
    page = await op.authorize(request)
    assert page.status == 200
    answer = await op.answer(await op.sign_in_from_page(page))
    tokens = await op.tokens(request, answer)
    second = await op.verify_id_token(tokens["id_token"], nonce=request.nonce)
    assert second["auth_time"] > first["auth_time"]  # type: ignore[operator]
    assert op.clock.timestamp() - second["auth_time"] < 5  # type: ignore[operator]


async def test_oidcc_max_age_10000(op: Op) -> None:
    await op.sign_in()
    first = await first_id_token(op, max_age="15000")
    op.clock.advance(2)
    second = await first_id_token(op, max_age="10000")
    assert "auth_time" in first and "auth_time" in second
    assert second["auth_time"] == first["auth_time"] and second["sub"] == first["sub"]


async def test_max_age_older_than_the_session_signs_in_again(op: Op) -> None:
    await op.sign_in()
    op.clock.advance(120)
    page = await op.authorize(Request(extra={"max_age": "60"}))
    assert page.status == 200
    silent = await op.answer(await op.authorize(Request(extra={"max_age": "60", "prompt": "none"})))
    assert silent.params["error"] == "login_required"


async def test_a_forced_login_the_provider_does_not_date_proves_nothing(op: Op) -> None:
    """Asked to log the person in again, a provider whose ID token then states no auth_time
    proves nothing (the browser could have stripped prompt and max_age): login_required, and
    the ID token never carries the request's time."""
    op.idp["google"].send_auth_time = False
    op.idp["google"].login_at = op.clock.timestamp() - HOUR
    await op.sign_in()
    assert claims_of(op.session or "")["auth_time"] == 0  # an ordinary sign-in proved nothing
    op.clock.advance(5)
    request = Request(extra={"max_age": "60"})
    answer = await op.answer(await op.sign_in_from_page(await op.authorize(request)))
    assert answer.params["error"] == "login_required"
    assert op.idp["google"].forced_logins == 1


async def test_a_fresh_login_is_offered_only_through_ways_that_prove_one(op: Op) -> None:
    """Facebook signs no login time: a request for a fresh login does not offer it, nor goes
    straight to it when named; a plain request offers every provider."""
    for extra in ({"max_age": "60"}, {"prompt": "login"}):
        html = await (await op.authorize(Request(extra=extra))).text()
        labels = [label for label, _ in parse_page(html).links]
        assert "Sign in with Google" in labels and "Sign in with Apple" in labels
        assert not any("Facebook" in label for label in labels), labels
        named = await op.authorize(Request(extra={**extra, "provider": "facebook"}))
        assert named.status == 200  # the page of the ways that prove, not facebook
    plain = await (await op.authorize(Request())).text()
    assert "Sign in with Facebook" in [label for label, _ in parse_page(plain).links]


async def test_a_forged_resume_mark_gives_no_code_without_a_new_login(op: Op) -> None:
    """signin_started_at in the address once marked a resumed request: whoever holds the
    browser could set it to the session's login time. It means nothing now."""
    await op.sign_in()
    proven = claims_of(op.session or "")["auth_time"]
    op.clock.advance(60)
    for extra in ({"prompt": "login"}, {"max_age": "10"}, {"max_age": "0"}):
        request = Request(extra={**extra, "signin_started_at": str(proven)})
        page = await op.authorize(request)
        assert page.status == 200, extra  # the sign-in page: a new login is needed
        assert "Location" not in page.headers


async def test_a_hint_for_another_account_is_never_relaxed_by_a_resume_mark(op: Op) -> None:
    await op.sign_in()
    request = Request()
    tokens = await op.tokens(request, await op.code(request))
    await op.sign_in(FakeUser(sub="grace-2", email="grace@example.com", name="Grace Hopper"))
    started = claims_of(op.session or "")["auth_time"]
    hinted = Request(
        extra={
            "prompt": "none",
            "id_token_hint": tokens["id_token"],
            "signin_started_at": str(started),
        }
    )
    answer = await op.answer(await op.authorize(hinted))
    assert answer.params["error"] == "login_required"


async def test_a_provider_that_proves_no_login_ends_the_request_instead_of_looping(
    op: Op,
) -> None:
    """Apple documents no way to force a login; without its auth_time nothing proves one:
    the resumed request ends with login_required, not another round."""
    op.idp["apple"].send_auth_time = False
    request = Request(extra={"prompt": "login"})
    page = await op.authorize(request)
    resumed = await op.sign_in_from_page(page, provider="Apple", intent="Create an account")
    answer = await op.answer(resumed)
    assert answer.params["error"] == "login_required"
    assert answer.params["state"] == request.state
    # without a freshness demand the same session signs in at once
    await first_id_token(op)


async def test_oidcc_id_token_hint(op: Op) -> None:
    await op.sign_in()
    request = Request()
    tokens = await op.tokens(request, await op.code(request))
    first = await op.verify_id_token(tokens["id_token"], nonce=request.nonce)
    op.clock.advance(3)
    hinted = Request(extra={"prompt": "none", "id_token_hint": tokens["id_token"]})
    again = await op.tokens(hinted, await op.code(hinted))
    second = await op.verify_id_token(again["id_token"], nonce=hinted.nonce)
    assert second["sub"] == first["sub"] and second["auth_time"] == first["auth_time"]

    # another account signed in: the hint's account is not, silently
    await op.sign_in(FakeUser(sub="grace-2", email="grace@example.com", name="Grace Hopper"))
    other = await op.answer(await op.authorize(hinted))
    assert other.params["error"] == "login_required"
    # without prompt=none the browser is asked to sign in
    page = await op.authorize(Request(extra={"id_token_hint": tokens["id_token"]}))
    assert page.status == 200
    # a hint this provider did not sign
    forged = await op.answer(await op.authorize(Request(extra={"id_token_hint": "e30.e30.x"})))
    assert forged.params["error"] == "invalid_request"


async def test_oidcc_login_hint(op: Op) -> None:
    hint = "buffy@api.example.com"
    page = await op.authorize(Request(extra={"login_hint": hint}))
    assert page.status == 200
    assert all(
        query_of(href)["login_hint"] == hint for _, href in parse_page(await page.text()).links
    )
    await op.sign_in()
    await first_id_token(op, login_hint=hint)


async def test_a_resumed_request_is_not_an_open_redirect(op: Op) -> None:
    """The sign-in returns only to the authorization endpoint itself, which checks the
    request again: a forged resume to an unregistered redirect_uri is an error page."""
    await op.sign_in()
    bad = Request(redirect_uri="https://evil.example/cb")
    forged = f"{ISSUER}/oauth2/authorize?" + "&".join(
        f"{k}={v}" for k, v in {**bad.params(), "signin_started_at": "1"}.items()
    )
    page = await op.open(forged)
    assert page.status == 400 and "Location" not in page.headers
    # a return_to that only looks like the endpoint is refused by the sign-in
    start = await op.client.get(
        "/v1/auth/google",
        params={
            "redirect_uri": f"{ISSUER}/v1/auth/google/callback",
            "return_to": f"{ISSUER}/oauth2/authorize.evil?x=1",
        },
        headers={"Accept": "application/json"},
    )
    binding = start.cookies["__Host-authgate_binding"].value
    back = await op.idp.authorize((await start.json())["authorizationUrl"], user=ADA)
    callback = await op.client.get(
        "/v1/auth/google/callback",
        params=back.params,
        headers={"Cookie": f"__Host-authgate_binding={binding}"},
        allow_redirects=False,
    )
    assert "oauth2" not in callback.headers["Location"]


async def test_a_stale_resume_mark_is_ignored(op: Op) -> None:
    await op.sign_in()
    op.clock.advance(10)
    request = Request(extra={"prompt": "login", "signin_started_at": "1000"})
    page = await op.authorize(request)
    assert page.status == 200  # not satisfied by an old sign-in, not an error either


async def test_the_session_cookie_reaches_the_endpoint_from_another_site(op: Op) -> None:
    """The session cookie (SameSite=Lax, Path=/) rides on a top-level navigation from the
    application's site."""
    answer = await op.client.get(
        "/v1/auth/google",
        params={"redirect_uri": f"{ISSUER}/v1/auth/google/callback", "intent": "register"},
        headers={"Accept": "application/json"},
    )
    binding = answer.cookies["__Host-authgate_binding"].value
    back = await op.idp.authorize((await answer.json())["authorizationUrl"], user=ADA)
    callback = await op.client.get(
        "/v1/auth/google/callback",
        params=back.params,
        headers={"Cookie": f"__Host-authgate_binding={binding}"},
        allow_redirects=False,
    )
    cookie = callback.cookies["session"]
    assert cookie["samesite"] == "Lax" and cookie["path"] == "/"
    op.session = cookie.value
    headers = {"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate"}
    response = await op.client.get(
        local(f"{ISSUER}/oauth2/authorize"),
        params=Request().params(),
        headers={**op.cookie_header(), **headers},
        allow_redirects=False,
    )
    assert "code" in query_of(response.headers["Location"])
    assert claims_of(op.session)["sid"]
