"""The token endpoint's grants over HTTP, on memory, SQLite and PostgreSQL: codes are single
use, short-lived and bound to their client, redirect URI and PKCE verifier; refresh tokens
rotate, are bound to their client and revoke their family when replayed."""

from __future__ import annotations

import asyncio
import base64
import datetime as dt
from typing import Any

import pytest

from authgate.domain.openid.records import SESSION_CLIENT_GRACE
from authgate.entrypoints.app import build as assembly
from tests.app.conftest import MakeService
from tests.fakeidp import FakeIdP, SettableClock
from tests.support.jwt import claims_of

from .conftest import op_config
from .harness import SECRET, THIRD_SECRET, Op, Request

OFFLINE = "openid offline_access"


async def family_live(op: Op, access_token: str) -> bool:
    """Whether the family an access token names is live (what userinfo and introspection
    ask), read from the store behind the HTTP API."""
    family = claims_of(access_token)["fam"]
    resources = op.client.app[assembly.RESOURCES]
    async with resources.stores.units.begin() as tx:
        return await tx.refresh_tokens.is_family_live(family, op.clock.now())


async def refused(response: Any, error: str = "invalid_grant", status: int = 400) -> None:
    assert response.status == status, await response.text()
    assert response.headers["Cache-Control"] == "no-store"
    body = await response.json()
    assert body["error"] == error
    assert isinstance(body["error_description"], str)


async def refresh(op: Op, token: str, **kwargs: Any) -> Any:
    form = {"grant_type": "refresh_token", "refresh_token": token}
    if "scope" in kwargs:
        form["scope"] = kwargs.pop("scope")
    return await op.token(form, **kwargs)


async def test_oidcc_codereuse(op_on: Op) -> None:
    op = op_on
    await op.sign_in()
    request = Request(scope=OFFLINE)
    answer = await op.code(request)
    first = await op.tokens(request, answer)
    await op.verify_id_token(first["id_token"], nonce=request.nonce)
    assert await family_live(op, first["access_token"])
    await refused(await op.redeem(request, answer))
    # what the first redemption issued is revoked with it
    assert not await family_live(op, first["access_token"])
    await refused(await refresh(op, first["refresh_token"]))


async def test_oidcc_codereuse_30seconds(op_on: Op) -> None:
    op = op_on
    await op.sign_in()
    request = Request()
    answer = await op.code(request)
    first = await op.tokens(request, answer)
    await op.verify_id_token(first["id_token"], nonce=request.nonce)
    op.clock.advance(30)
    await refused(await op.redeem(request, answer))
    assert not await family_live(op, first["access_token"])
    # the first access token stops working at userinfo
    stopped = await op.client.get(
        "/oauth2/userinfo", headers={"Authorization": f"Bearer {first['access_token']}"}
    )
    assert stopped.status == 401


async def test_a_code_lives_a_minute(op_on: Op) -> None:
    op = op_on
    await op.sign_in()
    request = Request()
    answer = await op.code(request)
    op.clock.advance(61)
    await refused(await op.redeem(request, answer))


async def test_a_code_is_bound_to_its_client_and_redirect_uri(op: Op) -> None:
    await op.sign_in()
    request = Request()
    answer = await op.code(request)
    await refused(
        await op.redeem(request, answer, client_id="third", secret=THIRD_SECRET, basic=False)
    )
    # spent by the wrong client: the right one is refused too
    await refused(await op.redeem(request, answer))
    request = Request()
    answer = await op.code(request)
    wrong = await op.token(
        {
            "grant_type": "authorization_code",
            "code": answer.code,
            "redirect_uri": "https://web.example.com/other",
            "code_verifier": request.pkce.verifier,
        }
    )
    await refused(wrong)
    no_verifier = await op.token(
        {
            "grant_type": "authorization_code",
            "code": (await op.code(request)).code,
            "redirect_uri": request.redirect_uri,
        }
    )
    await refused(no_verifier)


async def test_a_code_of_an_ended_session_is_refused(op: Op) -> None:
    session = await op.sign_in()
    request = Request()
    answer = await op.code(request)
    out = await op.client.post("/v1/auth/logout", headers={"Authorization": f"Bearer {session}"})
    assert out.status == 204
    await refused(await op.redeem(request, answer))


async def test_oidcc_refresh_token(op_on: Op) -> None:
    op = op_on
    await op.sign_in()
    # offline_access is advertised: the suite asks for it with prompt=consent (a first-party
    # client is not asked)
    request = Request(scope=OFFLINE, extra={"prompt": "consent"})
    first = await op.tokens(request, await op.code(request))
    assert first["scope"] == OFFLINE
    id_claims = await op.verify_id_token(first["id_token"], nonce=request.nonce)
    response = await refresh(op, first["refresh_token"])
    assert response.status == 200, await response.text()
    assert response.headers["Cache-Control"] == "no-store"
    assert response.content_type == "application/json"
    second = await response.json()
    assert second["token_type"] == "Bearer"
    assert second["refresh_token"] != first["refresh_token"]
    assert second["access_token"] != first["access_token"]
    refreshed = await op.verify_id_token(second["id_token"], access_token=second["access_token"])
    for claim in ("iss", "sub", "aud", "azp", "auth_time", "sid"):
        assert refreshed[claim] == id_claims[claim]
    # another client's refresh token: invalid_grant, and it still works for its own client
    await refused(
        await refresh(
            op, second["refresh_token"], client_id="third", secret=THIRD_SECRET, basic=False
        )
    )
    third = await refresh(op, second["refresh_token"])
    assert third.status == 200, await third.text()


async def test_a_replaced_refresh_token_revokes_its_family(op_on: Op) -> None:
    op = op_on
    await op.sign_in()
    request = Request(scope=OFFLINE)
    first = await op.tokens(request, await op.code(request))
    second = await (await refresh(op, first["refresh_token"])).json()
    await refused(await refresh(op, first["refresh_token"]))
    # the thief's copy and the rightful holder's current token both end
    await refused(await refresh(op, second["refresh_token"]))
    assert not await family_live(op, second["access_token"])


async def test_refresh_may_narrow_the_scope_never_widen_it(op: Op) -> None:
    await op.sign_in()
    request = Request(scope="openid profile offline_access")
    first = await op.tokens(request, await op.code(request))
    wider = await refresh(op, first["refresh_token"], scope="openid profile email offline_access")
    await refused(wider, "invalid_scope")
    narrower = await refresh(op, first["refresh_token"], scope="openid")
    assert narrower.status == 200, await narrower.text()
    body = await narrower.json()
    assert body["scope"] == "openid"
    assert claims_of(body["access_token"])["scope"] == "openid"
    # the new refresh token keeps the whole grant
    again = await refresh(op, body["refresh_token"])
    assert (await again.json())["scope"] == "openid profile offline_access"


async def test_offline_access_decides_whether_a_refresh_token_is_issued(op: Op) -> None:
    await op.sign_in()
    request = Request(scope="openid profile")
    tokens = await op.tokens(request, await op.code(request))
    assert "refresh_token" not in tokens


async def test_a_refresh_token_expires(op: Op) -> None:
    await op.sign_in()
    request = Request(scope=OFFLINE)
    first = await op.tokens(request, await op.code(request))
    op.clock.advance(30 * 86400 + 1)
    await refused(await refresh(op, first["refresh_token"]))


async def test_a_refresh_token_dies_with_its_session_when_the_session_expires(
    op_on: Op,
) -> None:
    """The session (24 hours without use here) ends before the refresh token would (30
    days): the token ends with it, at once, whether or not the expiry was acted on yet."""
    op = op_on
    await op.sign_in()
    request = Request(scope=OFFLINE)
    first = await op.tokens(request, await op.code(request))
    second = await (await refresh(op, first["refresh_token"])).json()
    op.clock.advance(86400 + 1)
    await refused(await refresh(op, second["refresh_token"]))


async def test_the_session_remembers_its_client_past_its_absolute_expiry(op: Op) -> None:
    """The record of who received tokens in the session (whom to tell when it ends) outlives
    the session by a grace, so that a session that ends by expiring is still found with its
    clients when the logout worker looks, and a purge cannot take them first."""
    session = await op.sign_in()
    request = Request(scope=OFFLINE)
    await op.tokens(request, await op.code(request))
    sid = claims_of(session)["sid"]
    resources = op.client.app[assembly.RESOURCES]
    async with resources.stores.units.begin() as tx:
        record = await tx.sessions.get(sid)
        [served] = await tx.session_clients.for_session(sid)
    assert record is not None
    assert served.expires_at == record.absolute_expires_at + SESSION_CLIENT_GRACE
    assert dt.timedelta(hours=1) <= SESSION_CLIENT_GRACE


async def test_concurrent_refreshes_have_one_winner_and_end_the_family(
    op_on: Op, request: pytest.FixtureRequest
) -> None:
    op = op_on
    await op.sign_in()
    auth = Request(scope=OFFLINE)
    first = await op.tokens(auth, await op.code(auth))
    answers = await asyncio.gather(*(refresh(op, first["refresh_token"]) for _ in range(2)))
    statuses = sorted(a.status for a in answers)
    assert statuses == [200, 400], statuses
    winner = next(a for a in answers if a.status == 200)
    body = await winner.json()
    # the loser was a reuse: the family, the winner's new token with it, is revoked
    await refused(await refresh(op, body["refresh_token"]))
    assert not await family_live(op, body["access_token"])


@pytest.mark.parametrize(
    ("form", "error"),
    [
        ({}, "invalid_request"),
        ({"grant_type": "password", "username": "a", "password": "b"}, "unsupported_grant_type"),
        # a grant of the provider, but not one this client is registered for
        ({"grant_type": "client_credentials"}, "unauthorized_client"),
        ({"grant_type": "urn:ietf:params:oauth:grant-type:jwt-bearer"}, "unsupported_grant_type"),
        ({"grant_type": "authorization_code"}, "invalid_request"),
        ({"grant_type": "refresh_token"}, "invalid_request"),
        (
            {"grant_type": "authorization_code", "code": "nope", "redirect_uri": "x"},
            "invalid_grant",
        ),
        ({"grant_type": "refresh_token", "refresh_token": "nope"}, "invalid_grant"),
    ],
)
async def test_token_request_errors(op: Op, form: dict[str, str], error: str) -> None:
    await refused(await op.token(form), error)


async def test_a_repeated_parameter_or_another_media_type_is_invalid_request(op: Op) -> None:
    basic = {"Authorization": "Basic " + base64.b64encode(f"web:{SECRET}".encode()).decode()}
    repeated = await op.client.post(
        "/oauth2/token",
        data="grant_type=refresh_token&refresh_token=a&refresh_token=b",
        headers={**basic, "Content-Type": "application/x-www-form-urlencoded"},
    )
    await refused(repeated, "invalid_request")
    as_json = await op.client.post(
        "/oauth2/token", json={"grant_type": "refresh_token"}, headers=basic
    )
    await refused(as_json, "invalid_request")


async def test_client_authentication_comes_first(op: Op) -> None:
    await refused(
        await op.token({"grant_type": "refresh_token", "refresh_token": "x"}, secret="wrong" * 8),
        "invalid_client",
        401,
    )


async def test_each_client_has_its_own_token_budget(
    make_service: MakeService, fake_idp: FakeIdP, idp_clock: SettableClock
) -> None:
    config = op_config(fake_idp, ratelimit={"token": "2/minute"})
    op = Op(await make_service(config, clock=idp_clock), fake_idp, idp_clock)
    form = {"grant_type": "refresh_token", "refresh_token": "unknown"}
    for _ in range(2):
        await refused(await op.token(form))
    limited = await op.token(form)
    assert limited.status == 429
    assert int(limited.headers["Retry-After"]) >= 1
    assert limited.headers["Cache-Control"] == "no-store"
    assert (await limited.json())["error"] == "temporarily_unavailable"
    # another client is not held back
    await refused(await op.token(form, client_id="third", secret=THIRD_SECRET, basic=False))
    # a failed authentication spends nothing of the client's budget, and is not let through
    await refused(await op.token(form, secret="wrong" * 8), "invalid_client", 401)
