"""The verification page and the device authorization endpoint beyond the flow, on memory
(nothing here is a store's to decide): codes guessed or mistyped are counted per client
address and then refused, the form refuses what did not come from it, the pages carry the
provider pages' headers, and discovery names the endpoint and the grant."""

from __future__ import annotations

from tests.app.conftest import MakeService
from tests.fakeidp import FakeIdP, SettableClock
from tests.openid.harness import SAME_ORIGIN, parse_page
from tests.openid_device.conftest import DEVICE_GRANT, ISSUER, Device, device_config


async def test_wrong_codes_are_counted_then_refused(memory_device: Device) -> None:
    device = memory_device
    started = await device.start()
    # Three failures an hour here (ratelimit.device_failures): a mistyped code, a code of
    # letters outside the alphabet, a code of no request.
    for typed in ("BCDF-GHJ", "AEIO-U123", "ZZZZ-ZZZZ"):
        page = await device.page(typed)
        assert page.status == 400, typed
        text = await page.text()
        assert "not valid" in text
        assert parse_page(text).forms[0]["action"] == ISSUER + "/oauth2/device"
    # Spent: even the right code is refused now, with Retry-After.
    refused = await device.page(started["user_code"])
    assert refused.status == 429
    assert int(refused.headers["Retry-After"]) > 0
    assert "Too many codes" in await refused.text()
    # The device itself is not judged by the page's budget.
    assert await device.poll_error(started["device_code"]) == "authorization_pending"


async def test_right_codes_spend_no_failures(memory_device: Device) -> None:
    device = memory_device
    for _ in range(4):  # more than the three failures allowed
        started = await device.start()
        page = await device.page(started["user_code"])
        assert page.status == 200, await page.text()


async def test_device_requests_are_limited_per_address(memory_device: Device) -> None:
    device = memory_device
    statuses = [(await device.request()).status for _ in range(21)]  # 20/minute here
    assert statuses[:20] == [200] * 20
    assert statuses[20] == 429
    refused = await device.request()
    assert (await refused.json())["error"] == "temporarily_unavailable"


async def test_the_form_refuses_what_did_not_come_from_it(memory_device: Device) -> None:
    device = memory_device
    started = await device.start()
    page = await device.page(started["user_code"])
    page = await device.sign_in_there(page)
    form = parse_page(await page.text()).forms[0]
    fields = dict(form["fields"])
    approve = [*form["fields"], ("decision", "approve")]

    cross_site = await device.open(
        form["action"],
        method="POST",
        data=approve,
        headers={"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"},
    )
    assert cross_site.status == 403
    forged = [(k, "x" * 43 if k == "csrf" else v) for k, v in approve]
    assert (
        await device.open(form["action"], method="POST", data=forged, headers=SAME_ORIGIN)
    ).status == 403
    # The form's token is this browser's: without its cookie the form is refused.
    key, device.device_key = device.device_key, None
    assert (
        await device.open(form["action"], method="POST", data=approve, headers=SAME_ORIGIN)
    ).status == 403
    device.device_key = key
    assert await device.poll_error(started["device_code"]) == "authorization_pending"

    assert fields["user_code"] == started["user_code"]
    done = await device.answer(page)
    assert done.status == 200
    # Answered: the same form again finds no pending request.
    again = await device.answer(page)
    assert again.status == 400


async def test_the_pages_carry_the_provider_pages_headers(memory_device: Device) -> None:
    device = memory_device
    entry = await device.page()
    assert entry.status == 200
    assert 'name="user_code"' in await entry.text()
    started = await device.start()
    page = await device.sign_in_there(await device.page(started["user_code"]))
    for response in (entry, page):
        csp = response.headers["Content-Security-Policy"]
        assert "default-src 'none'" in csp and "frame-ancestors 'none'" in csp
        assert "unsafe-inline" not in csp
        assert response.headers["X-Frame-Options"] == "DENY"
        assert response.headers["Cache-Control"] == "no-store"
        assert response.headers["X-Content-Type-Options"] == "nosniff"
    # A browser sends the form's Origin only under a policy that passes it on to the same
    # origin (no-referrer makes it "null", which the same-origin guard refuses).
    assert page.headers["Referrer-Policy"] == "same-origin"
    cookie = page.cookies["__Host-authgate_device"]
    assert cookie["samesite"] == "Strict" and cookie["secure"] and cookie["httponly"]


async def test_scopes_are_those_of_the_code_flow(memory_device: Device) -> None:
    device = memory_device
    for scope in ("profile", "openid email"):  # no openid; email not allowed to "cli"
        response = await device.request("cli", scope)
        assert response.status == 400, scope
        assert (await response.json())["error"] == "invalid_scope"
    started = await device.start("cli", "openid unknown-scope")  # unknown ones are left out
    page = await device.sign_in_there(await device.page(started["user_code"]))
    assert "unknown-scope" not in await page.text()
    default = await device.request("cli", None)
    assert default.status == 200


async def test_discovery_names_the_endpoint_and_the_grant(memory_device: Device) -> None:
    for path in ("/.well-known/openid-configuration", "/.well-known/oauth-authorization-server"):
        document = await (await memory_device.client.get(path)).json()
        assert document["device_authorization_endpoint"] == ISSUER + "/oauth2/device_authorization"
        assert DEVICE_GRANT in document["grant_types_supported"]


async def test_polls_before_the_answer_are_no_failures_of_the_address(
    make_service: MakeService, fake_idp: FakeIdP, idp_clock: SettableClock
) -> None:
    # Three failed token requests a minute here: devices waiting behind one address (an
    # office's command-line tools) poll far more than that, and fail nothing.
    config = device_config(fake_idp, ratelimit={"token_failures": "3/minute"})
    device = Device(await make_service(config, clock=idp_clock), fake_idp, idp_clock)
    started = [await device.start() for _ in range(3)]
    for _ in range(3):
        for each in started:
            assert await device.poll_error(each["device_code"]) == "authorization_pending"
        for each in started:  # too soon: slow_down, no failure either
            assert await device.poll_error(each["device_code"]) == "slow_down"
        idp_clock.advance(60)
    # A real failure still counts: three unknown device codes spend the budget.
    for _ in range(3):
        assert await device.poll_error("unknown-" + "x" * 40) == "invalid_grant"
    refused = await device.poll(started[0]["device_code"])
    assert refused.status == 429
