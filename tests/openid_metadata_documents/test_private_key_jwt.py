"""A confidential client described by a metadata document: private_key_jwt with its keys in
the document (``jwks``) or at a ``jwks_uri`` fetched under the same policy; keys that change
with the document are the ones checked once it is fetched again."""

from __future__ import annotations

import uuid
from typing import Any

from aiohttp import web
from joserfc import jwt
from joserfc.jwk import ECKey

from tests.openid.harness import ISSUER, Op, Request

from .conftest import DocumentSite, MakeOp

REDIRECT = "https://tools.example.net/cb"
JWT_BEARER = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"


def assertion(op: Op, client_id: str, key: ECKey) -> str:
    now = int(op.clock.timestamp())
    claims = {
        "iss": client_id,
        "sub": client_id,
        "aud": ISSUER,
        "jti": uuid.uuid4().hex,
        "iat": now,
        "exp": now + 60,
    }
    return jwt.encode({"alg": "ES256", "kid": key.kid}, claims, key, algorithms=["ES256"])


async def code_and_redeem(op: Op, client_id: str, key: ECKey) -> tuple[int, dict[str, Any]]:
    request = Request(client_id=client_id, redirect_uri=REDIRECT, scope="openid")
    page = await op.authorize(request)
    answer = await op.answer(await op.consent(page))
    response = await op.client.post(
        "/oauth2/token",
        data={
            "grant_type": "authorization_code",
            "code": answer.code,
            "redirect_uri": REDIRECT,
            "code_verifier": request.pkce.verifier,
            "client_assertion_type": JWT_BEARER,
            "client_assertion": assertion(op, client_id, key),
        },
    )
    return response.status, await response.json()


def confidential(url: str, **keys: Any) -> dict[str, Any]:
    return {
        "client_id": url,
        "client_name": "Tool server",
        "redirect_uris": [REDIRECT],
        "token_endpoint_auth_method": "private_key_jwt",
        **keys,
    }


async def test_keys_in_the_document(make_op: MakeOp, site: DocumentSite) -> None:
    op = await make_op(min_cache_seconds=1)
    await op.sign_in()
    first = ECKey.generate_key("P-256", parameters={"kid": "one"})
    second = ECKey.generate_key("P-256", parameters={"kid": "two"})
    path = "/clients/server.json"
    url = site.url(path)

    def publish(key: ECKey) -> None:
        body = confidential(url, jwks={"keys": [key.as_dict(private=False)]})
        site.document(path, headers={"Cache-Control": "max-age=60"}, **body)

    publish(first)
    status, body = await code_and_redeem(op, url, first)
    assert status == 200 and body["token_type"] == "Bearer"
    # someone else's key is refused
    status, body = await code_and_redeem(op, url, second)
    assert status == 401 and body["error"] == "invalid_client"
    # the document's keys change; once it is fetched again the new key is the one checked
    publish(second)
    op.clock.advance(61)
    status, _ = await code_and_redeem(op, url, second)
    assert status == 200
    status, _ = await code_and_redeem(op, url, first)
    assert status == 401


async def test_keys_at_a_jwks_uri(make_op: MakeOp, site: DocumentSite) -> None:
    op = await make_op()
    await op.sign_in()
    key = ECKey.generate_key("P-256", parameters={"kid": "one"})

    async def keys(_: web.Request) -> web.Response:
        return web.json_response({"keys": [key.as_dict(private=False)]})

    jwks_uri = site.serve("/clients/jwks.json", keys)
    url = site.url("/clients/server.json")
    site.document("/clients/server.json", **confidential(url, jwks_uri=jwks_uri))
    status, body = await code_and_redeem(op, url, key)
    assert status == 200, body
    assert site.hits["/clients/jwks.json"] == 1 and site.hits["/clients/server.json"] == 1


async def test_private_keys_in_the_document_are_refused(
    make_op: MakeOp, site: DocumentSite
) -> None:
    op = await make_op()
    key = ECKey.generate_key("P-256", parameters={"kid": "one"})
    path = "/clients/server.json"
    site.document(path, **confidential(site.url(path), jwks={"keys": [key.as_dict(private=True)]}))
    request = Request(client_id=site.url(path), redirect_uri=REDIRECT)
    assert (await op.authorize(request)).status == 400
