"""GET|POST /v1/auth/{provider}/callback: spec 4.6, 7.1, 7.2, end to end with the fake."""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
from urllib.parse import parse_qs, urlsplit

import pytest
from aiohttp import ClientResponse

from tests.fakeidp import FakeIdP, FakeUser, SettableClock
from tests.fakeidp.model import Tamper, TokenMode

from .conftest import APP_URL, CALLBACK_URL, MakeService, SignIn

LOGIN = f"{APP_URL}/login"


def session_cookie(response: ClientResponse) -> str | None:
    for header in response.headers.getall("Set-Cookie", []):
        if header.startswith("session="):
            return header
    return None


def login_error(response: ClientResponse) -> dict[str, str]:
    """The error and reason of a redirect to the login page (asserting it is one)."""
    assert response.status == 302, response.status
    location = response.headers["Location"]
    assert location.startswith(LOGIN + "?"), location
    query = parse_qs(urlsplit(location).query)
    return {k: v[0] for k, v in query.items()}


async def linked(signin: SignIn, response: ClientResponse) -> list[dict[str, object]]:
    """The linked providers of the session a callback set."""
    cookie = session_cookie(response)
    assert cookie is not None
    token = cookie.split(";")[0].removeprefix("session=")
    listing = await signin.client.get(
        "/v1/account/providers", headers={"Authorization": f"Bearer {token}"}
    )
    assert listing.status == 200
    providers: list[dict[str, object]] = (await listing.json())["providers"]
    return providers


async def account_exists(signin: SignIn, provider: str, user: FakeUser) -> bool:
    """Whether a login (not a registration) with this identity finds an account."""
    response = await signin.complete(provider, user=user)
    return session_cookie(response) is not None


def assert_callback_headers(response: ClientResponse) -> None:
    assert response.headers["Cache-Control"] == "no-store"
    assert response.headers["Referrer-Policy"] == "no-referrer"


@pytest.mark.parametrize("provider", ["google", "facebook", "apple"])
async def test_register_sets_the_session_cookie_and_goes_to_onboarding(
    signin: SignIn, provider: str
) -> None:
    user = FakeUser(sub=f"{provider}-user-1", email=f"{provider}@example.com")
    response = await signin.complete(provider, user=user, intent="register")
    assert response.status == 302
    assert response.headers["Location"] == f"{APP_URL}/onboarding"
    assert_callback_headers(response)
    assert await response.read() == b""
    cookie = session_cookie(response)
    assert cookie is not None
    attributes = [a.strip() for a in cookie.split(";")[1:]]
    assert "HttpOnly" in attributes
    assert "Secure" in attributes
    assert "SameSite=Lax" in attributes
    assert "Path=/" in attributes
    max_age = next(int(a.split("=")[1]) for a in attributes if a.startswith("Max-Age="))
    assert 86390 <= max_age <= 86400
    providers = await linked(signin, response)
    assert len(providers) == 1
    record = providers[0]
    assert set(record) == {"provider", "providerId", "linkedAt", "isPrimary"}
    assert record["provider"] == provider
    assert record["providerId"] == f"user:{provider}:{user.sub}"
    assert record["isPrimary"] is True
    linked_at = dt.datetime.fromisoformat(str(record["linkedAt"]))
    assert abs((dt.datetime.now(dt.UTC) - linked_at).total_seconds()) < 60


async def test_login_goes_to_the_stored_destination_else_the_dashboard(signin: SignIn) -> None:
    user = FakeUser(sub="returning")
    await signin.complete(user=user, intent="register")
    response = await signin.complete(user=user, return_to="/settings?tab=security")
    assert response.headers["Location"] == f"{APP_URL}/settings?tab=security"
    response = await signin.complete(user=user)
    assert response.headers["Location"] == f"{APP_URL}/dashboard"
    assert session_cookie(response) is not None


@pytest.mark.parametrize(
    "return_to",
    [
        "//evil.example/x",
        "/\\evil.example",
        "https://app.example.com.evil.example/x",
        "https://evil.example/",
        "/x\r\nSet-Cookie: pwned=1",
        "javascript:alert(1)",
    ],
)
async def test_open_redirect_return_to_is_ignored(signin: SignIn, return_to: str) -> None:
    user = FakeUser(sub="redirect-victim")
    await signin.complete(user=user, intent="register")
    response = await signin.complete(user=user, return_to=return_to)
    assert response.headers["Location"] == f"{APP_URL}/dashboard"


async def test_login_with_an_unknown_identity_is_account_not_found(signin: SignIn) -> None:
    response = await signin.complete(user=FakeUser(sub="stranger"))
    assert login_error(response) == {
        "error": "account_not_found",
        "reason": "no_account_for_provider",
    }
    assert session_cookie(response) is None
    assert_callback_headers(response)


async def test_denial_redirects_or_answers_403_to_json_only_clients(signin: SignIn) -> None:
    response = await signin.complete(deny=True)
    assert login_error(response) == {"error": "access_denied", "reason": "user_denied"}
    response = await signin.complete(deny=True, headers={"Accept": "application/json"})
    assert response.status == 403
    assert (await response.json())["error"] == "access_denied"
    assert session_cookie(response) is None


async def test_other_provider_errors_redirect_with_a_provider_error_reason(signin: SignIn) -> None:
    details, binding = await signin.begin()
    response = await signin.callback(
        "google", {"error": "server_error", "state": details["state"]}, binding=binding
    )
    assert login_error(response) == {"error": "authentication_failed", "reason": "provider_error"}


async def test_a_provider_error_consumes_the_state(signin: SignIn) -> None:
    details, binding = await signin.begin()
    state = details["state"]
    await signin.callback("google", {"error": "access_denied", "state": state}, binding=binding)
    response = await signin.callback("google", {"code": "x", "state": state}, binding=binding)
    assert response.status == 401


async def test_missing_code_or_state_is_invalid_request(signin: SignIn) -> None:
    details, binding = await signin.begin()
    response = await signin.callback("google", {"state": details["state"]}, binding=binding)
    assert response.status == 400
    assert await response.json() == {
        "error": "invalid_request",
        "message": "missing required parameter: code",
    }
    assert_callback_headers(response)
    response = await signin.callback("google", {"code": "abc"}, binding=binding)
    assert await response.json() == {
        "error": "invalid_request",
        "message": "missing required parameter: state",
    }


async def test_invalid_provider_on_the_callback(signin: SignIn) -> None:
    response = await signin.client.get("/v1/auth/myspace/callback?code=a&state=b")
    assert response.status == 400
    assert (await response.json())["error"] == "invalid_provider"


async def assert_invalid_state(response: ClientResponse) -> None:
    assert response.status == 401
    assert (await response.json())["error"] == "invalid_state"
    assert session_cookie(response) is None


async def test_replayed_state_is_refused(signin: SignIn) -> None:
    details, binding = await signin.begin(intent="register")
    back = await signin.idp.authorize(details["authorizationUrl"], user=FakeUser(sub="replay"))
    first = await signin.callback("google", back.params, binding=binding)
    assert session_cookie(first) is not None
    await assert_invalid_state(await signin.callback("google", back.params, binding=binding))


async def test_expired_state_is_refused(signin: SignIn) -> None:
    user = FakeUser(sub="slowpoke")
    details, binding = await signin.begin(intent="register")
    back = await signin.idp.authorize(details["authorizationUrl"], user=user)
    signin.clock.advance(601)
    await assert_invalid_state(await signin.callback("google", back.params, binding=binding))
    assert not await account_exists(signin, "google", user)


async def test_state_of_another_provider_unknown_or_empty_is_refused(signin: SignIn) -> None:
    details, binding = await signin.begin("google", intent="register")
    back = await signin.idp.authorize(details["authorizationUrl"], user=FakeUser(sub="x1"))
    await assert_invalid_state(await signin.callback("facebook", back.params, binding=binding))
    forged = {"code": back.params["code"], "state": "made-up-state"}
    await assert_invalid_state(await signin.callback("google", forged, binding=binding))


async def test_binding_cookie_missing_or_mismatching_is_refused(signin: SignIn) -> None:
    user = FakeUser(sub="csrf-victim")
    # The attacker's own code and state, replayed in the victim's browser (login CSRF).
    details, _attacker_binding = await signin.begin(intent="register")
    back = await signin.idp.authorize(details["authorizationUrl"], user=user)
    await assert_invalid_state(await signin.callback("google", back.params, binding=None))
    details, _attacker_binding = await signin.begin(intent="register")
    back = await signin.idp.authorize(details["authorizationUrl"], user=user)
    victim_binding = "v" * 43
    await assert_invalid_state(await signin.callback("google", back.params, binding=victim_binding))
    assert not await account_exists(signin, "google", user)


@pytest.mark.parametrize("tamper", list(Tamper))
async def test_forged_id_tokens_are_refused(signin: SignIn, tamper: Tamper) -> None:
    user = FakeUser(sub=f"victim-{tamper.value}")
    signin.idp.google.tamper = tamper
    response = await signin.complete(user=user, intent="register")
    assert login_error(response)["error"] == "authentication_failed"
    assert session_cookie(response) is None
    signin.idp.google.tamper = None
    assert not await account_exists(signin, "google", user)


@pytest.mark.parametrize("mode", [TokenMode.DOWN, TokenMode.GARBAGE, TokenMode.NO_ACCESS_TOKEN])
async def test_token_exchange_failure(signin: SignIn, mode: TokenMode) -> None:
    signin.idp.google.token_mode = mode
    user = FakeUser(sub=f"exchange-{mode.value}")
    response = await signin.complete(user=user, intent="register")
    assert login_error(response) == {
        "error": "authentication_failed",
        "reason": "token_exchange_failed",
    }
    signin.idp.google.token_mode = TokenMode.OK
    assert not await account_exists(signin, "google", user)


async def test_a_code_with_another_sign_ins_verifier_fails_pkce(signin: SignIn) -> None:
    # The code was issued for sign-in A's challenge; the state (and so the verifier) is B's.
    details_a, _ = await signin.begin(intent="register")
    details_b, binding_b = await signin.begin(intent="register")
    back_a = await signin.idp.authorize(details_a["authorizationUrl"], user=FakeUser(sub="pk"))
    response = await signin.callback(
        "google", {"code": back_a.params["code"], "state": details_b["state"]}, binding=binding_b
    )
    assert login_error(response) == {
        "error": "authentication_failed",
        "reason": "token_exchange_failed",
    }


async def test_unverified_email_is_refused(signin: SignIn) -> None:
    response = await signin.complete(
        user=FakeUser(sub="unverified", email_verified=False), intent="register"
    )
    assert login_error(response) == {
        "error": "authentication_failed",
        "reason": "email_not_verified",
    }


async def test_link_a_second_provider_and_refuse_one_owned_by_another_account(
    signin: SignIn,
) -> None:
    alice = await signin.complete("google", user=FakeUser(sub="alice"), intent="register")
    token = session_cookie(alice).split(";")[0].removeprefix("session=")  # type: ignore[union-attr]
    bob = await signin.complete("facebook", user=FakeUser(sub="bob"), intent="register")
    assert session_cookie(bob) is not None
    auth = {"Authorization": f"Bearer {token}"}

    async def link(provider: str, user: FakeUser) -> ClientResponse:
        response = await signin.client.get(
            f"/v1/auth/{provider}",
            params={
                "redirect_uri": f"https://api.example.com/v1/auth/{provider}/callback",
                "intent": "link",
            },
            headers={**auth, "Accept": "application/json"},
        )
        assert response.status == 200
        binding = response.cookies["__Host-authgate_binding"].value
        details = await response.json()
        back = await signin.idp.authorize(details["authorizationUrl"], user=user)
        return await signin.callback(provider, back.params, binding=binding, method=back.method)

    linked_apple = await link("apple", FakeUser(sub="alice-apple"))
    assert linked_apple.headers["Location"] == f"{APP_URL}/dashboard"
    providers = await linked(signin, linked_apple)
    assert [(p["provider"], p["isPrimary"]) for p in providers] == [
        ("google", True),
        ("apple", False),
    ]
    stolen = await link("facebook", FakeUser(sub="bob"))
    assert login_error(stolen) == {
        "error": "account_conflict",
        "reason": "identity_linked_to_another_account",
    }
    assert session_cookie(stolen) is None
    listing = await signin.client.get("/v1/account/providers", headers=auth)
    assert [p["provider"] for p in (await listing.json())["providers"]] == ["google", "apple"]


async def test_concurrent_first_sign_ins_of_one_identity_create_one_account(
    signin: SignIn,
) -> None:
    user = FakeUser(sub="stampede")
    starts = [await signin.begin(intent="register") for _ in range(10)]
    backs = [await signin.idp.authorize(d["authorizationUrl"], user=user) for d, _ in starts]
    responses = await asyncio.gather(
        *(
            signin.callback("google", back.params, binding=binding)
            for back, (_, binding) in zip(backs, starts, strict=True)
        )
    )
    locations = [r.headers["Location"] for r in responses]
    assert locations.count(f"{APP_URL}/onboarding") == 1
    assert locations.count(f"{APP_URL}/dashboard") == 9
    ids = set()
    for response in responses:
        providers = await linked(signin, response)
        assert len(providers) == 1
        ids.add(providers[0]["providerId"])
    assert ids == {"user:google:stampede"}


async def test_no_code_token_or_secret_reaches_the_log(
    signin: SignIn, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    details, binding = await signin.begin("apple", intent="register")
    back = await signin.idp.authorize(details["authorizationUrl"], user=FakeUser(sub="quiet"))
    response = await signin.callback("apple", back.params, binding=binding, method=back.method)
    cookie = session_cookie(response)
    assert cookie is not None
    signin.idp.google.token_mode = TokenMode.ERROR_ECHO
    details_g, binding_g = await signin.begin("google")
    back_g = await signin.idp.authorize(details_g["authorizationUrl"])
    await signin.callback("google", back_g.params, binding=binding_g)
    secrets = [
        back.params["code"],
        back_g.params["code"],
        cookie.split(";")[0].removeprefix("session="),
        binding,
        signin.idp.google.client_secret,
        *signin.idp.apple.access_tokens,
        *signin.idp.google.access_tokens,
    ]
    assert "sign-in event" in caplog.text
    for secret in secrets:
        assert secret not in caplog.text


async def test_form_post_callback_without_a_body_or_with_json(signin: SignIn) -> None:
    response = await signin.client.post("/v1/auth/apple/callback")
    assert response.status == 400
    assert (await response.json())["error"] == "invalid_request"
    response = await signin.client.post("/v1/auth/apple/callback", json={"code": "a"})
    assert response.status == 415


async def test_the_form_post_callback_is_documented(signin: SignIn) -> None:
    document = await (await signin.client.get("/openapi.json")).json()
    post = document["paths"]["/v1/auth/{provider}/callback"]["post"]
    form = post["requestBody"]["content"]["application/x-www-form-urlencoded"]["schema"]
    assert set(form["properties"]) == {"code", "state", "error", "error_description", "user", "iss"}
    assert post["requestBody"]["required"] is False
    get = document["paths"]["/v1/auth/{provider}/callback"]["get"]
    params = {p["name"]: p["required"] for p in get["parameters"]}
    assert params == {
        "provider": True,
        "code": True,
        "state": True,
        "error": False,
        "error_description": False,
        "iss": False,
    }
    assert {"302", "400", "401", "403", "429", "500"} <= set(get["responses"])


async def test_relaxed_binding_admits_a_missing_cookie_but_never_a_wrong_one(
    make_service: MakeService, fake_idp: FakeIdP, idp_clock: SettableClock
) -> None:
    client = await make_service(
        {
            "app": {"url": APP_URL, "callback_urls": [CALLBACK_URL.format(name="google")]},
            "state": {"require_binding_cookie": False},
            "providers": {"google": fake_idp.config("google")},
        },
        clock=idp_clock,
    )
    relaxed = SignIn(client, fake_idp, idp_clock)
    details, _ = await relaxed.begin(intent="register")
    back = await fake_idp.authorize(details["authorizationUrl"], user=FakeUser(sub="app-1"))
    response = await relaxed.callback("google", back.params, binding=None)
    assert session_cookie(response) is not None
    details, _ = await relaxed.begin(intent="register")
    back = await fake_idp.authorize(details["authorizationUrl"], user=FakeUser(sub="app-2"))
    await assert_invalid_state(await relaxed.callback("google", back.params, binding="w" * 43))
