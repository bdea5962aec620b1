"""``private_key_jwt`` at ``POST /oauth2/token``: the assertion's ``aud`` is the issuer, one
string. The token endpoint's URL, or a list (even of the issuer alone), is ``invalid_client``
(the OpenID Foundation's 2025 advisory on assertion audiences), and the code is left for the
client to redeem with a proper assertion."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from joserfc import jwt
from joserfc.jwk import ECKey

from tests.app.conftest import MakeService
from tests.fakeidp import FakeIdP, SettableClock

from .conftest import op_config
from .harness import CLIENTS, ISSUER, Op, Request

KEY = ECKey.generate_key("P-256", parameters={"kid": "signed-1"})
TOKEN_ENDPOINT = ISSUER + "/oauth2/token"
JWT_REDIRECT = "https://signed.example.com/cb"
JWT_BEARER = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"


@pytest.fixture
async def jwt_op(make_service: MakeService, fake_idp: FakeIdP, idp_clock: SettableClock) -> Op:
    clients = {
        **CLIENTS,
        "signed": {
            "name": "Signed app",
            "type": "confidential",
            "token_endpoint_auth_method": "private_key_jwt",
            "jwks": {"keys": [KEY.as_dict(private=False)]},
            "redirect_uris": [JWT_REDIRECT],
            "first_party": True,
        },
    }
    client = await make_service(op_config(fake_idp, clients=clients), clock=idp_clock)
    return Op(client, fake_idp, idp_clock)


def assertion(op: Op, aud: Any) -> str:
    now = int(op.clock.timestamp())
    claims = {
        "iss": "signed",
        "sub": "signed",
        "aud": aud,
        "jti": uuid.uuid4().hex,
        "iat": now,
        "exp": now + 60,
    }
    return jwt.encode({"alg": "ES256", "kid": KEY.kid}, claims, KEY, algorithms=["ES256"])


async def redeem(op: Op, request: Request, code: str, aud: Any) -> tuple[int, dict[str, Any]]:
    response = await op.client.post(
        "/oauth2/token",
        data={
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": request.redirect_uri,
            "code_verifier": request.pkce.verifier,
            "client_assertion_type": JWT_BEARER,
            "client_assertion": assertion(op, aud),
        },
    )
    body: dict[str, Any] = await response.json()
    return response.status, body


async def test_an_assertion_for_anything_but_the_issuer_alone_is_invalid_client(
    jwt_op: Op,
) -> None:
    await jwt_op.sign_in()
    request = Request(client_id="signed", redirect_uri=JWT_REDIRECT)
    code = (await jwt_op.code(request)).code
    for aud in (TOKEN_ENDPOINT, [ISSUER], [ISSUER, TOKEN_ENDPOINT], ISSUER + "/"):
        status, body = await redeem(jwt_op, request, code, aud)
        assert status == 401, (aud, body)
        assert body["error"] == "invalid_client", (aud, body)
    # Client authentication comes first: the code is still there for the genuine request.
    status, body = await redeem(jwt_op, request, code, ISSUER)
    assert status == 200, body
    claims = await jwt_op.verify_id_token(body["id_token"], client_id="signed", nonce=request.nonce)
    assert claims["aud"] == "signed"
