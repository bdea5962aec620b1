"""The device authorization grant (RFC 8628) over HTTP on memory, SQLite and PostgreSQL: a
device asks, the person signs in through the fake identity provider on the verification page
and approves or denies with the page's form, and the device's polls get what RFC 8628 says."""

from __future__ import annotations

import asyncio
import base64
import re

from tests.openid.harness import SECRET
from tests.openid_device.conftest import DEVICE_GRANT, ISSUER, Device
from tests.support.jwt import claims_of

USER_CODE = re.compile(r"[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}")


async def test_a_device_gets_tokens_once_the_person_approves(device: Device) -> None:
    started = await device.start("cli", "openid profile offline_access")
    assert USER_CODE.fullmatch(started["user_code"])
    assert started["verification_uri"] == ISSUER + "/oauth2/device"
    assert started["verification_uri_complete"] == (
        f"{ISSUER}/oauth2/device?user_code={started['user_code']}"
    )
    assert (started["expires_in"], started["interval"]) == (600, 5)
    code = started["device_code"]
    assert len(code) >= 43

    assert await device.poll_error(code) == "authorization_pending"
    # At once again: faster than the interval, which grows by five seconds.
    assert await device.poll_error(code) == "slow_down"
    device.clock.advance(6)  # within the new interval of ten seconds
    assert await device.poll_error(code) == "slow_down"
    device.clock.advance(16)
    assert await device.poll_error(code) == "authorization_pending"

    # The person types the code as it comes (lower case, a space for the dash), signs in.
    typed = started["user_code"].lower().replace("-", " ")
    page = await device.page(typed)
    assert page.status == 200
    assert "Sign in with Google" in await page.text()
    page = await device.sign_in_there(page)
    assert page.status == 200, await page.text()
    text = await page.text()
    assert "Connect Deploy CLI?" in text
    assert started["user_code"] in text
    assert "Stay connected while you are away" in text  # offline_access, in words
    assert "See your name" in text
    done = await device.answer(page, "approve")
    assert done.status == 200, await done.text()
    assert "Device connected" in await done.text()

    device.clock.advance(16)
    answer = await device.poll(code)
    assert answer.status == 200, await answer.text()
    assert answer.headers["Cache-Control"] == "no-store"
    tokens = await answer.json()
    assert tokens["token_type"] == "Bearer"
    assert tokens["scope"] == "openid profile offline_access"
    claims = await device.verify_id_token(
        tokens["id_token"], client_id="cli", access_token=tokens["access_token"]
    )
    assert device.session is not None
    session = claims_of(device.session)
    assert (claims["sub"], claims["sid"]) == (session["sub"], session["sid"])
    info = await device.userinfo(tokens["access_token"])
    assert info["sub"] == session["sub"] and info["name"] == "Ada Lovelace"
    assert tokens["refresh_token"]

    # Issued once: the same device code again is refused, and the tokens stay good.
    assert await device.poll_error(code) == "invalid_grant"
    refreshed = await device.token(
        {"grant_type": "refresh_token", "refresh_token": tokens["refresh_token"]},
        client_id="cli",
        secret=None,
    )
    assert refreshed.status == 200, await refreshed.text()


async def test_a_denied_request_answers_access_denied(device: Device) -> None:
    started = await device.start()
    done = await device.approve(started["user_code"], "deny")
    assert done.status == 200
    assert "Request denied" in await done.text()
    assert await device.poll_error(started["device_code"]) == "access_denied"
    # The page no longer knows the code: it was answered.
    again = await device.page(started["user_code"])
    assert again.status == 400
    assert "not valid" in await again.text()


async def test_an_expired_request_answers_expired_token(device: Device) -> None:
    started = await device.start()
    device.clock.advance(601)
    assert await device.poll_error(started["device_code"]) == "expired_token"
    page = await device.page(started["user_code"])
    assert page.status == 400


async def test_approved_too_late_is_not_approved(device: Device) -> None:
    started = await device.start()
    page = await device.page(started["user_code"])
    page = await device.sign_in_there(page)
    assert page.status == 200
    device.clock.advance(601)
    late = await device.answer(page, "approve")
    assert late.status == 400  # the request expired: the code's form again, nothing approved
    assert "not valid" in await late.text()
    assert await device.poll_error(started["device_code"]) == "expired_token"


async def test_only_one_of_two_concurrent_polls_gets_the_tokens(device: Device) -> None:
    started = await device.start("tv")
    done = await device.approve(started["user_code"])
    assert done.status == 200
    answers = await asyncio.gather(
        device.poll(started["device_code"], "tv"), device.poll(started["device_code"], "tv")
    )
    assert sorted(a.status for a in answers) == [200, 400]
    refused = next(a for a in answers if a.status == 400)
    assert (await refused.json())["error"] == "invalid_grant"


async def test_a_confidential_client_authenticates_and_codes_are_its_own(device: Device) -> None:
    started = await device.start("tv")
    await device.approve(started["user_code"])
    # Another client cannot redeem it.
    assert await device.poll_error(started["device_code"], "cli") == "invalid_grant"
    wrong = await device.token(
        {"grant_type": DEVICE_GRANT, "device_code": started["device_code"]},
        client_id="tv",
        secret="not-the-secret-of-more-than-thirty-two-characters",
    )
    assert wrong.status == 401
    assert (await wrong.json())["error"] == "invalid_client"
    answer = await device.poll(started["device_code"], "tv")
    assert answer.status == 200, await answer.text()
    tokens = await answer.json()
    assert "refresh_token" not in tokens  # no offline_access asked
    await device.verify_id_token(tokens["id_token"], client_id="tv")


async def test_a_client_without_the_grant_type_is_refused(device: Device) -> None:
    # "web" may use the code flow only.
    raw = base64.b64encode(f"web:{SECRET}".encode()).decode()
    asked = await device.client.post(
        "/oauth2/device_authorization",
        data={"scope": "openid"},
        headers={"Authorization": f"Basic {raw}"},
    )
    assert asked.status == 400
    assert (await asked.json())["error"] == "unauthorized_client"
    polled = await device.token({"grant_type": DEVICE_GRANT, "device_code": "x" * 43})
    assert polled.status == 400
    assert (await polled.json())["error"] == "unauthorized_client"
    unknown = await device.request("nobody")
    assert unknown.status == 401
    assert (await unknown.json())["error"] == "invalid_client"


async def test_approval_is_consent_listed_among_the_persons_applications(device: Device) -> None:
    started = await device.start("cli", "openid profile")
    await device.approve(started["user_code"])
    assert device.session is not None
    listed = await device.client.get(
        "/v1/account/apps", headers={"Authorization": f"Bearer {device.session}"}
    )
    assert listed.status == 200, await listed.text()
    apps = (await listed.json())["apps"]
    assert [(a["clientId"], sorted(a["scopes"])) for a in apps] == [("cli", ["openid", "profile"])]


async def test_a_request_approved_in_a_session_that_ended_gets_nothing(device: Device) -> None:
    started = await device.start()
    await device.approve(started["user_code"])
    assert device.session is not None
    out = await device.client.post(
        "/v1/auth/logout", headers={"Authorization": f"Bearer {device.session}"}
    )
    assert out.status == 204
    assert await device.poll_error(started["device_code"]) == "invalid_grant"
