"""Loopback redirect URIs at the authorization endpoint: any port only for a public (native)
client, as RFC 8252 section 7.3 describes; a confidential web client's loopback address is
matched exactly, and another port is an error page, never a redirect."""

from __future__ import annotations

import pytest

from tests.app.conftest import MakeService
from tests.fakeidp import FakeIdP, SettableClock

from .conftest import op_config
from .harness import CLIENTS, SECRET, Op, Request
from .test_authorize_errors import error_page

LOCAL_WEB = "http://127.0.0.1:8080/cb"


@pytest.fixture
async def local_op(make_service: MakeService, fake_idp: FakeIdP, idp_clock: SettableClock) -> Op:
    """The provider on memory with a confidential client whose server runs on loopback (a
    developer's machine)."""
    clients = {
        **CLIENTS,
        "local-web": {
            "name": "Local web app",
            "type": "confidential",
            "secrets": [SECRET],
            "redirect_uris": [LOCAL_WEB],
            "first_party": True,
        },
    }
    client = await make_service(op_config(fake_idp, clients=clients), clock=idp_clock)
    return Op(client, fake_idp, idp_clock)


@pytest.mark.parametrize(
    "presented",
    ["http://127.0.0.1:9090/cb", "http://127.0.0.1/cb", "http://127.0.0.1:51234/cb"],
)
async def test_a_confidential_clients_loopback_uri_on_another_port_is_an_error_page(
    local_op: Op, presented: str
) -> None:
    await local_op.sign_in()
    request = Request(client_id="local-web", redirect_uri=presented)
    html = await error_page(await local_op.authorize(request))
    assert f"redirect_uri &#x27;{presented}&#x27; is not registered" in html


async def test_a_confidential_clients_loopback_uri_works_as_registered(local_op: Op) -> None:
    await local_op.sign_in()
    request = Request(client_id="local-web", redirect_uri=LOCAL_WEB)
    answer = await local_op.code(request)
    assert answer.redirect_uri == LOCAL_WEB
    tokens = await local_op.tokens(request, answer, client_id="local-web")
    await local_op.verify_id_token(tokens["id_token"], client_id="local-web", nonce=request.nonce)


async def test_a_public_clients_loopback_uri_still_takes_any_port(local_op: Op) -> None:
    await local_op.sign_in()
    request = Request(client_id="native", redirect_uri="http://127.0.0.1:61234/callback")
    answer = await local_op.code(request)
    assert answer.redirect_uri == "http://127.0.0.1:61234/callback"
