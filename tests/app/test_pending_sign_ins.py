"""Pending sign-ins over HTTP: found by provider, state and browser together.

A caller-supplied state may be used by several browsers and providers at once (spec 4.5 rule
4: it is echoed, never refused); a callback that does not come from the browser that started
the sign-in, or that arrives at another provider, neither takes nor consumes it; client-chosen
text never turns into a 500 on any store; a full memory store refuses newcomers and keeps the
live sign-ins.
"""

from __future__ import annotations

import asyncio
from typing import Any
from urllib.parse import parse_qs, urlsplit

import asyncpg
import pytest
from aiohttp import ClientResponse

from tests.fakeidp import FakeIdP, FakeUser, SettableClock

from .conftest import APP_URL, CALLBACK_URL, PROVIDERS, MakeService, SignIn

STATE = "opaque-csrf-value-123"


def signed_in(response: ClientResponse) -> bool:
    return response.status == 302 and any(
        h.startswith("session=") for h in response.headers.getall("Set-Cookie", [])
    )


async def finish(
    signin: SignIn, provider: str, details: dict[str, Any], binding: str | None
) -> ClientResponse:
    """The provider's page and the callback, for a sign-in already started."""
    back = await signin.idp.authorize(details["authorizationUrl"])
    return await signin.callback(provider, back.params, binding=binding, method=back.method)


def state_in_url(details: dict[str, Any]) -> str:
    return parse_qs(urlsplit(details["authorizationUrl"]).query)["state"][0]


async def test_one_state_value_for_two_providers_is_echoed_and_completes_both(
    signin: SignIn,
) -> None:
    google, google_binding = await signin.begin("google", state=STATE, intent="register")
    facebook, facebook_binding = await signin.begin("facebook", state=STATE, intent="register")
    for details in (google, facebook):
        assert details["state"] == STATE
        assert state_in_url(details) == STATE
    assert signed_in(await finish(signin, "facebook", facebook, facebook_binding))
    assert signed_in(await finish(signin, "google", google, google_binding))


async def test_two_browsers_with_one_state_value_each_complete_their_own(signin: SignIn) -> None:
    first, first_binding = await signin.begin("google", state=STATE, intent="register")
    second, second_binding = await signin.begin("google", state=STATE, intent="register")
    assert first_binding != second_binding
    assert signed_in(await finish(signin, "google", second, second_binding))
    assert signed_in(await finish(signin, "google", first, first_binding))


async def test_a_browser_that_retries_with_the_same_state_completes_the_retry(
    signin: SignIn,
) -> None:
    _, binding = await signin.begin("google", state=STATE, intent="register")
    retry = await signin.client.get(
        "/v1/auth/google",
        params={
            "redirect_uri": CALLBACK_URL.format(name="google"),
            "state": STATE,
            "intent": "register",
        },
        headers={"Accept": "application/json", "Cookie": f"__Host-authgate_binding={binding}"},
    )
    assert retry.status == 200, await retry.text()
    assert signed_in(await finish(signin, "google", await retry.json(), binding))


async def test_a_callback_from_another_browser_neither_takes_nor_consumes(signin: SignIn) -> None:
    details, binding = await signin.begin("google", state=STATE, intent="register")
    _, other_binding = await signin.begin("google", intent="register")
    back = await signin.idp.authorize(details["authorizationUrl"])
    for stranger in (other_binding, "x" * 43):
        refused = await signin.callback("google", back.params, binding=stranger)
        assert refused.status == 401
        assert (await refused.json())["error"] == "invalid_state"
    assert signed_in(await signin.callback("google", back.params, binding=binding))


async def test_a_callback_at_another_provider_consumes_nothing(signin: SignIn) -> None:
    details, binding = await signin.begin("google", state=STATE, intent="register")
    back = await signin.idp.authorize(details["authorizationUrl"])
    elsewhere = await signin.callback("facebook", back.params, binding=binding)
    assert elsewhere.status == 401
    assert (await elsewhere.json())["error"] == "invalid_state"
    assert signed_in(await signin.callback("google", back.params, binding=binding))


async def test_an_error_callback_from_a_stranger_cannot_cancel_a_sign_in(signin: SignIn) -> None:
    details, binding = await signin.begin("google", state=STATE, intent="register")
    for stranger in (None, "y" * 43):
        cancel = await signin.callback(
            "google", {"state": STATE, "error": "access_denied"}, binding=stranger
        )
        assert cancel.status == 302
        assert "error=access_denied" in cancel.headers["Location"]
    assert signed_in(await finish(signin, "google", details, binding))


async def test_an_error_callback_from_the_browser_itself_consumes_its_state(
    signin: SignIn,
) -> None:
    details, binding = await signin.begin("google", state=STATE, intent="register")
    back = await signin.idp.authorize(details["authorizationUrl"])
    denied = await signin.callback(
        "google", {"state": STATE, "error": "access_denied"}, binding=binding
    )
    assert denied.status == 302
    replay = await signin.callback("google", back.params, binding=binding)
    assert replay.status == 401


async def test_one_pending_sign_in_is_taken_by_exactly_one_of_concurrent_callbacks(
    signin: SignIn,
) -> None:
    details, binding = await signin.begin("google", state=STATE, intent="register")
    back = await signin.idp.authorize(details["authorizationUrl"])
    answers = await asyncio.gather(
        *(signin.callback("google", back.params, binding=binding) for _ in range(8))
    )
    assert sum(signed_in(a) for a in answers) == 1
    assert sorted(a.status for a in answers) == [302] + [401] * 7


@pytest.mark.parametrize("state", ["a\x00b", "line\nbreak", "\x7f", "x" * 513])
async def test_a_state_with_control_characters_or_too_long_is_a_400_at_initiation(
    signin: SignIn, state: str
) -> None:
    response = await signin.start("google", state=state)
    assert response.status == 400
    assert (await response.json())["error"] == "invalid_request"


async def test_non_ascii_return_to_is_percent_encoded_in_location(
    signin: SignIn, fake_idp: FakeIdP
) -> None:
    user = FakeUser(sub="return-to-user")
    assert signed_in(await signin.complete("google", user=user, intent="register"))
    response = await signin.complete("google", user=user, return_to="/café/✓?q=naïve")
    assert signed_in(response)
    location = response.headers["Location"]
    assert location.isascii()
    assert location == f"{APP_URL}/caf%C3%A9/%E2%9C%93?q=na%C3%AFve"


# -- the memory store's bound ------------------------------------------------------------


async def test_a_full_memory_store_answers_503_and_keeps_live_sign_ins(
    make_service: MakeService, fake_idp: FakeIdP, idp_clock: SettableClock
) -> None:
    client = await make_service(
        {
            "app": {"url": APP_URL, "callback_urls": [CALLBACK_URL.format(name="google")]},
            "state": {"memory_max_entries": 3},
            "providers": {"google": fake_idp.config("google")},
        },
        clock=idp_clock,
    )
    signin = SignIn(client, fake_idp, idp_clock)
    started = [await signin.begin("google", intent="register") for _ in range(3)]
    full = await signin.start("google", intent="register")
    assert full.status == 503
    assert (await full.json())["error"] == "temporarily_unavailable"
    assert int(full.headers["Retry-After"]) > 0
    for details, binding in started:
        assert signed_in(await finish(signin, "google", details, binding))
    # Room again once the live ones were taken.
    assert (await signin.start("google")).status == 200


# -- PostgreSQL: client-chosen text never reaches SQL as an error --------------------------


@pytest.fixture
async def pg_signin(
    make_service: MakeService, fake_idp: FakeIdP, idp_clock: SettableClock, clean_postgres_url: str
) -> tuple[SignIn, str]:
    client = await make_service(
        {
            "app": {
                "url": APP_URL,
                "callback_urls": [CALLBACK_URL.format(name=p) for p in PROVIDERS],
            },
            "database": {"url": clean_postgres_url},
            "providers": {p: fake_idp.config(p) for p in PROVIDERS},
        },
        clock=idp_clock,
    )
    return SignIn(client, fake_idp, idp_clock), clean_postgres_url


async def test_postgres_nul_in_state_is_the_contract_answer(pg_signin: tuple[SignIn, str]) -> None:
    signin, _ = pg_signin
    start = await signin.start("google", state="nul\x00state")
    assert start.status == 400
    assert (await start.json())["error"] == "invalid_request"
    _, binding = await signin.begin("google")
    callback = await signin.callback(
        "google", {"code": "c", "state": "nul\x00state"}, binding=binding
    )
    assert callback.status == 401
    assert (await callback.json())["error"] == "invalid_state"


async def test_postgres_nul_and_odd_text_in_an_error_callback_are_stored_cleaned(
    pg_signin: tuple[SignIn, str],
) -> None:
    signin, url = pg_signin
    _, binding = await signin.begin("google", state=STATE)
    response = await signin.callback(
        "google",
        {"state": STATE, "error": "weird\x00error\u2028", "error_description": "d\x00"},
        binding=binding,
    )
    assert response.status == 302
    assert "reason=provider_error" in response.headers["Location"]
    conn = await asyncpg.connect(url)
    try:
        detail = await conn.fetchval("SELECT detail FROM sign_in_events ORDER BY id DESC LIMIT 1")
    finally:
        await conn.close()
    assert detail == "weird\ufffderror\ufffd"


async def test_postgres_undecodable_user_agent_is_stored_cleaned(
    pg_signin: tuple[SignIn, str],
) -> None:
    signin, url = pg_signin
    details, binding = await signin.begin("google", intent="register")
    back = await signin.idp.authorize(details["authorizationUrl"])
    # Raw bytes that are not UTF-8: aiohttp hands them over as lone surrogates.
    server = signin.client.server
    reader, writer = await asyncio.open_connection(server.host, server.port)
    query = "&".join(f"{k}={v}" for k, v in back.params.items())
    writer.write(
        f"GET /v1/auth/google/callback?{query} HTTP/1.1\r\nHost: x\r\n"
        f"Cookie: __Host-authgate_binding={binding}\r\nConnection: close\r\n".encode()
        + b"User-Agent: agent \xff\xfe\r\n\r\n"
    )
    status_line = (await reader.read()).split(b"\r\n", 1)[0]
    writer.close()
    assert b" 302 " in status_line
    conn = await asyncpg.connect(url)
    try:
        row = await conn.fetchrow(
            "SELECT outcome, user_agent FROM sign_in_events ORDER BY id DESC LIMIT 1"
        )
    finally:
        await conn.close()
    assert row is not None
    assert row["outcome"] == "registered"
    assert row["user_agent"] == "agent \ufffd\ufffd"


# -- RFC 9207: the issuer of the authorization response -------------------------------------


@pytest.mark.parametrize("method", ["GET", "POST"])
async def test_a_response_from_another_issuer_is_refused_before_the_code_is_redeemed(
    signin: SignIn, fake_idp: FakeIdP, method: str
) -> None:
    details, binding = await signin.begin("google", intent="register")
    back = await signin.idp.authorize(details["authorizationUrl"])
    mixed_up = {**back.params, "iss": "https://attacker.example"}
    response = await signin.callback("google", mixed_up, binding=binding, method=method)
    assert response.status == 302
    query = parse_qs(urlsplit(response.headers["Location"]).query)
    assert query == {"error": ["authentication_failed"], "reason": ["invalid_issuer"]}
    assert not signed_in(response)


async def test_a_response_with_the_providers_own_issuer_signs_in(
    signin: SignIn, fake_idp: FakeIdP
) -> None:
    details, binding = await signin.begin("google", intent="register")
    back = await signin.idp.authorize(details["authorizationUrl"])
    own = {**back.params, "iss": fake_idp.config("google")["issuer"]}
    assert signed_in(await signin.callback("google", own, binding=binding))


async def test_an_issuer_less_provider_accepts_no_iss(signin: SignIn, fake_idp: FakeIdP) -> None:
    details, binding = await signin.begin("facebook", intent="register")
    back = await signin.idp.authorize(details["authorizationUrl"])
    google_iss = {**back.params, "iss": fake_idp.config("google")["issuer"]}
    response = await signin.callback("facebook", google_iss, binding=binding)
    assert "reason=invalid_issuer" in response.headers["Location"]


async def test_a_callback_url_of_another_provider_is_refused_at_initiation(
    signin: SignIn,
) -> None:
    response = await signin.client.get(
        "/v1/auth/google",
        params={"redirect_uri": CALLBACK_URL.format(name="facebook")},
        headers={"Accept": "application/json"},
    )
    assert response.status == 400
    body = await response.json()
    assert body["error"] == "invalid_request"
    assert "redirect_uri" in body["message"]
    assert (await signin.start("facebook")).status == 200


async def test_a_callback_url_that_names_no_provider_is_refused_at_start_up(
    make_service: MakeService,
) -> None:
    from authgate.entrypoints.app.config import ConfigError

    with pytest.raises(ConfigError, match=r"app\.callback_urls: .*names no configured provider"):
        await make_service({"app": {"url": APP_URL, "callback_urls": ["https://x.example/cb"]}})
