"""Withdrawing consent spends the codes already issued: a code the application holds when the
person withdraws (``DELETE /v1/account/apps/{client_id}``) is ``invalid_grant`` at the token
endpoint, and nothing it could have issued is left working or unlisted. On memory, SQLite and
PostgreSQL."""

from __future__ import annotations

from typing import Any

import attrs
from aiohttp import ClientResponse

from authgate.entrypoints.app import build as assembly
from authgate.entrypoints.app.build import Resources
from tests.support.jwt import claims_of

from .harness import SAME_ORIGIN, THIRD_REDIRECT, THIRD_SECRET, Answer, Op, Request


def third(scope: str = "openid profile offline_access") -> Request:
    return Request(client_id="third", redirect_uri=THIRD_REDIRECT, scope=scope)


def resources(op: Op) -> Resources:
    found: Resources = op.client.app[assembly.RESOURCES]
    return found


async def withdraw(op: Op, client_id: str) -> ClientResponse:
    """The person withdraws, on the account page (the session cookie, from this site)."""
    return await op.client.delete(
        f"/v1/account/apps/{client_id}", headers={**op.cookie_header(), **SAME_ORIGIN}
    )


async def apps(op: Op) -> list[dict[str, Any]]:
    answer = await op.client.get("/v1/account/apps", headers=op.cookie_header())
    assert answer.status == 200, await answer.text()
    listed: list[dict[str, Any]] = (await answer.json())["apps"]
    return listed


async def redeem_third(op: Op, request: Request, answer: Answer) -> ClientResponse:
    return await op.redeem(request, answer, client_id="third", secret=THIRD_SECRET, basic=False)


async def refused(response: ClientResponse) -> str:
    assert response.status == 400, await response.text()
    body = await response.json()
    assert "access_token" not in body and "refresh_token" not in body
    error: str = body["error"]
    return error


async def test_consent_code_withdraw_redeem_is_invalid_grant(op_on: Op) -> None:
    op = op_on
    await op.sign_in()
    request = third()
    answer = await op.answer(await op.consent(await op.authorize(request)))
    assert [a["clientId"] for a in await apps(op)] == ["third"]

    withdrawn = await withdraw(op, "third")
    assert withdrawn.status == 204, await withdrawn.text()
    op.clock.advance(10)  # the application redeems ten seconds later

    assert await refused(await redeem_third(op, request, answer)) == "invalid_grant"
    assert await apps(op) == []
    # Nothing was issued: no family of the client, live or not.
    async with resources(op).stores.units.begin() as tx:
        families = await tx.refresh_tokens.for_account(op_account(op))
    assert [f for f in families if f.client_id == "third"] == []
    # The next authorization asks for consent again.
    page = await op.authorize(third())
    assert page.status == 200 and "form" in await page.text()


async def test_a_code_is_refused_once_its_grant_is_gone_even_if_it_was_not_spent(
    op_on: Op,
) -> None:
    """The redemption's own check, whatever removed the grant: a code issued just as the
    consent was withdrawn (after the withdrawal spent the codes it found) gets nothing."""
    op = op_on
    await op.sign_in()
    request = third()
    answer = await op.answer(await op.consent(await op.authorize(request)))
    async with resources(op).stores.units.begin() as tx:
        assert await tx.grants.remove(op_account(op), "third")
    assert await refused(await redeem_third(op, request, answer)) == "invalid_grant"
    # The code is spent by the attempt: a later grant does not revive it.
    again = third()
    await redeem_third(op, again, await op.answer(await op.consent(await op.authorize(again))))
    assert await refused(await redeem_third(op, request, answer)) == "invalid_grant"


async def test_a_code_of_a_wider_request_than_the_grant_is_refused(op_on: Op) -> None:
    """A grant covers a code only with all its scopes."""
    op = op_on
    await op.sign_in()
    request = third("openid profile email")
    answer = await op.answer(await op.consent(await op.authorize(request)))
    async with resources(op).stores.units.begin() as tx:
        kept = await tx.grants.get(op_account(op), "third")
        assert kept is not None
        await tx.grants.remove(op_account(op), "third")
        await tx.grants.put(attrs.evolve(kept, scopes=frozenset({"openid", "profile"})))
    assert await refused(await redeem_third(op, request, answer)) == "invalid_grant"


async def test_withdrawing_a_first_party_application_spends_its_codes(op_on: Op) -> None:
    """An application that needs no consent has no grant: its outstanding code is what
    withdrawing it finds, and spends."""
    op = op_on
    await op.sign_in()
    request = Request(scope="openid offline_access")  # "web", first party
    answer = await op.code(request)
    withdrawn = await withdraw(op, "web")
    assert withdrawn.status == 204, await withdrawn.text()
    assert await refused(await op.redeem(request, answer)) == "invalid_grant"
    # With nothing left of it, a second withdrawal finds no application.
    assert (await withdraw(op, "web")).status == 404


def op_account(op: Op) -> str:
    """The signed-in person's account id (the session token's subject)."""
    assert op.session is not None
    subject: str = claims_of(op.session)["sub"]
    return subject
