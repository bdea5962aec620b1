"""authgate's sign-in page (the authorization endpoint's, authgate as an OpenID Provider)
offers "Sign in with a passkey" when passkeys are on: its script runs the ceremony against the
API and goes on to the authorization request, resumed. Here the test plays the browser and
the script (the software authenticator of tests/support/webauthn.py): a code for the
application, also for a request that asks for a fresh login (prompt=login)."""

from __future__ import annotations

import base64
import hashlib
import re
from html import unescape

from authgate.entrypoints.http.openid.pages import PASSKEY_SCRIPT
from tests.app.conftest import MakeService
from tests.fakeidp import FakeIdP, SettableClock
from tests.support.webauthn import SoftAuthenticator

from .conftest import op_config
from .harness import ISSUER, Op, Request

PASSKEYS = {"enabled": True, "rp_id": "example.com", "origins": [ISSUER]}


async def passkey_op(make_service: MakeService, fake_idp: FakeIdP, idp_clock: SettableClock) -> Op:
    client = await make_service(op_config(fake_idp, passkeys=PASSKEYS), clock=idp_clock)
    return Op(client, fake_idp, idp_clock)


async def add_passkey(op: Op, authenticator: SoftAuthenticator) -> None:
    token = await op.sign_in()
    bearer = {"Authorization": f"Bearer {token}"}
    asked = await op.client.post("/v1/account/passkeys/registration/options", headers=bearer)
    binding = asked.cookies["__Host-authgate_binding"].value
    created = authenticator.create(await asked.json(), ISSUER)
    answer = await op.client.post(
        "/v1/account/passkeys/registration",
        json=created,
        headers={**bearer, "Cookie": f"__Host-authgate_binding={binding}"},
    )
    assert answer.status == 201, await answer.text()
    op.session = None  # a browser that is not signed in


async def sign_in_with_the_page_passkey(
    op: Op, page_html: str, authenticator: SoftAuthenticator
) -> str:
    """What the page's script does: its button's data, the ceremony; where it goes next."""
    button = re.search(r'<button type="button" id="passkey" ([^>]*)>', page_html)
    assert button is not None, page_html
    data = dict(re.findall(r'data-([a-z-]+)="([^"]*)"', button.group(1)))
    assert unescape(data["api"]) == ISSUER
    return_to = unescape(data["return-to"])
    asked = await op.client.post("/v1/passkeys/authentication/options")
    binding = asked.cookies["__Host-authgate_binding"].value
    assertion = authenticator.get(await asked.json(), ISSUER)
    answer = await op.client.post(
        "/v1/passkeys/authentication",
        json={**assertion, "returnTo": return_to},
        headers={"Cookie": f"__Host-authgate_binding={binding}"},
    )
    assert answer.status == 200, await answer.text()
    op.session = answer.cookies["session"].value
    redirect_to = (await answer.json())["redirectTo"]
    assert redirect_to == return_to  # the authorization request, resumed
    return str(redirect_to)


async def test_the_sign_in_page_signs_in_with_a_passkey_and_resumes_the_request(
    make_service: MakeService, fake_idp: FakeIdP, idp_clock: SettableClock
) -> None:
    op = await passkey_op(make_service, fake_idp, idp_clock)
    authenticator = SoftAuthenticator()
    await add_passkey(op, authenticator)
    for extra in ({}, {"prompt": "login"}):
        request = Request(extra=extra)
        page = await op.authorize(request)
        assert page.status == 200
        html = await page.text()
        assert "Sign in with a passkey" in html
        # The page's one script is allowed by its hash, and may call the service itself.
        digest = base64.b64encode(hashlib.sha256(PASSKEY_SCRIPT.encode()).digest()).decode()
        policy = page.headers["Content-Security-Policy"]
        assert f"script-src 'sha256-{digest}'" in policy
        assert "connect-src 'self'" in policy
        assert f"<script>{PASSKEY_SCRIPT}</script>" in html
        resumed = await op.open(await sign_in_with_the_page_passkey(op, html, authenticator))
        answer = await op.answer(resumed)
        assert answer.redirect_uri == request.redirect_uri
        assert answer.params["state"] == request.state
        tokens = await op.tokens(request, answer)
        assert "id_token" in tokens


async def test_without_passkeys_the_page_has_no_script(
    make_service: MakeService, fake_idp: FakeIdP, idp_clock: SettableClock
) -> None:
    client = await make_service(op_config(fake_idp), clock=idp_clock)
    op = Op(client, fake_idp, idp_clock)
    page = await op.authorize(Request())
    html = await page.text()
    assert "passkey" not in html and "<script" not in html
    assert "script-src" not in page.headers["Content-Security-Policy"]


async def test_the_page_offers_no_passkey_where_browsers_could_not_use_it(
    make_service: MakeService, fake_idp: FakeIdP, idp_clock: SettableClock
) -> None:
    # Passkeys on for the application's pages only: the issuer's page is not one of them.
    elsewhere = {**PASSKEYS, "origins": ["https://app.example.com"]}
    client = await make_service(op_config(fake_idp, passkeys=elsewhere), clock=idp_clock)
    page = await Op(client, fake_idp, idp_clock).authorize(Request())
    assert page.status == 200
    assert "passkey" not in await page.text()
