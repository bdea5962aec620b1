"""The consent page of a client that is not first-party: once per account, client and scope
set, again with prompt=consent; approving is a same-origin form bound to the browser, the
session and the request; declining answers access_denied."""

from __future__ import annotations

from typing import Any

from authgate.domain.redirects import origin
from tests.fakeidp import FakeUser

from .harness import ISSUER, SAME_ORIGIN, THIRD_REDIRECT, THIRD_SECRET, Op, Request, parse_page


def third(scope: str = "openid profile", **extra: str) -> Request:
    return Request(client_id="third", redirect_uri=THIRD_REDIRECT, scope=scope, extra=extra)


async def redeem(op: Op, request: Request, answer: Any) -> dict[str, Any]:
    return await op.tokens(request, answer, client_id="third", secret=THIRD_SECRET, basic=False)


async def test_consent_is_asked_once_per_scope_set(op: Op) -> None:
    await op.sign_in()
    request = third()
    page = await op.authorize(request)
    assert page.status == 200 and page.content_type == "text/html"
    assert page.headers["X-Frame-Options"] == "DENY"
    assert page.headers["Cache-Control"] == "no-store"
    csp = page.headers["Content-Security-Policy"]
    # The form posts here and the answer's redirect goes to the application's origin: a
    # browser holds that redirect to form-action too.
    assert f"form-action 'self' {origin(THIRD_REDIRECT)};" in csp
    assert "frame-ancestors 'none'" in csp
    html = await page.text()
    assert "Third &lt;Party&gt; &amp; Co" in html and "<Party>" not in html
    assert "See your name" in html and "Know who you are" in html
    cookie = page.cookies["__Host-authgate_consent"]
    assert cookie["samesite"] == "Strict" and cookie["httponly"] and cookie["secure"]
    answer = await op.answer(await op.consent(page))
    assert answer.params["state"] == request.state
    await redeem(op, request, answer)

    # the same scopes again, or fewer: no page
    for again in (third(), third("openid")):
        await redeem(op, again, await op.code(again))
    # a wider request asks again, marking what is new
    wider = third("openid profile email")
    page = await op.authorize(wider)
    assert page.status == 200
    assert "(new)" in await page.text()
    await redeem(op, wider, await op.answer(await op.consent(page)))
    # prompt=consent asks even when granted
    asked = third(prompt="consent")
    page = await op.authorize(asked)
    assert page.status == 200
    await redeem(op, asked, await op.answer(await op.consent(page)))


async def test_consent_is_per_account(op: Op) -> None:
    await op.sign_in()
    page = await op.authorize(third())
    await op.answer(await op.consent(page))
    await op.sign_in(FakeUser(sub="grace-2", email="grace@example.com", name="Grace"))
    assert (await op.authorize(third())).status == 200


async def test_declining_answers_access_denied(op: Op) -> None:
    await op.sign_in()
    request = third()
    answer = await op.answer(await op.consent(await op.authorize(request), "deny"))
    assert answer.params["error"] == "access_denied"
    assert answer.params["state"] == request.state and answer.params["iss"] == ISSUER
    assert (await op.authorize(request)).status == 200  # nothing was granted


async def test_prompt_none_without_consent_is_consent_required(op: Op) -> None:
    await op.sign_in()
    request = third(prompt="none")
    answer = await op.answer(await op.authorize(request))
    assert answer.params["error"] == "consent_required"
    assert answer.params["state"] == request.state


async def test_offline_access_is_consented_to_like_any_scope(op: Op) -> None:
    await op.sign_in()
    request = third("openid offline_access", prompt="consent")
    page = await op.authorize(request)
    assert "Stay connected while you are away" in await page.text()
    tokens = await redeem(op, request, await op.answer(await op.consent(page)))
    assert tokens["refresh_token"]


async def consent_form(op: Op, request: Request) -> tuple[str, list[tuple[str, str]]]:
    page = await op.authorize(request)
    form = parse_page(await page.text()).forms[0]
    return form["action"], [*form["fields"], ("decision", "approve")]


async def test_the_consent_form_must_come_from_this_site(op: Op) -> None:
    await op.sign_in()
    action, fields = await consent_form(op, third())
    cross = await op.open(
        action, method="POST", data=fields, headers={"Origin": "https://evil.example"}
    )
    assert cross.status == 403 and cross.content_type == "text/html"
    ok = await op.open(action, method="POST", data=fields, headers=SAME_ORIGIN)
    assert "code" in (await op.answer(ok)).params


async def test_the_consent_form_is_bound_to_the_browser_session_request_and_time(
    op: Op,
) -> None:
    await op.sign_in()
    action, fields = await consent_form(op, third())

    async def post(data: list[tuple[str, str]], **changes: Any) -> int:
        saved = (op.session, op.consent_key)
        op.session = changes.get("session", op.session)
        op.consent_key = changes.get("key", op.consent_key)
        try:
            answer = await op.open(action, method="POST", data=data, headers=SAME_ORIGIN)
        finally:
            op.session, op.consent_key = saved
        return answer.status

    # another browser's key
    assert await post(fields, key="A" * 43) == 403
    # the request changed: a wider scope slipped in
    widened = [(k, "openid profile email" if k == "scope" else v) for k, v in fields]
    assert await post(widened) == 403
    # a token of another session
    other_session = op.session
    await op.sign_in()
    assert op.session != other_session
    assert await post(fields) == 403
    op.session = other_session
    # too old
    op.clock.advance(601)
    assert await post(fields) == 403


async def test_without_a_session_the_consent_form_starts_again(op: Op) -> None:
    await op.sign_in()
    action, fields = await consent_form(op, third())
    op.session = None
    answer = await op.open(action, method="POST", data=fields, headers=SAME_ORIGIN)
    assert answer.status == 303
    assert answer.headers["Location"].startswith(ISSUER + "/oauth2/authorize?")


async def test_a_consent_form_is_single_use(op: Op) -> None:
    await op.sign_in()
    request = third()
    page = await op.authorize(request)
    html = await page.text()
    first = await op.answer(await op.consent(page))
    await redeem(op, request, first)
    # The same form posted again (a replay, a double click): nothing is recorded, no code.
    again = await op.consent(page)
    assert again.status == 409 and "Location" not in again.headers
    assert "answered already" in await again.text()
    assert html == await page.text()  # the very form that was answered


async def test_a_consent_form_does_not_grant_again_after_a_withdrawal(op: Op) -> None:
    await op.sign_in()
    request = third(prompt="consent")
    await op.answer(await op.consent(await op.authorize(third())))  # consented once
    page = await op.authorize(request)  # shown while the grant exists
    withdrawn = await op.client.delete(
        "/v1/account/apps/third", headers={**op.cookie_header(), **SAME_ORIGIN}
    )
    assert withdrawn.status == 204, await withdrawn.text()
    replayed = await op.consent(page)
    assert replayed.status == 409
    # Nothing was granted: the next request asks again.
    assert (await op.authorize(third())).status == 200
    listed = await op.client.get("/v1/account/apps", headers=op.cookie_header())
    assert [a["clientId"] for a in (await listed.json())["apps"]] == []
