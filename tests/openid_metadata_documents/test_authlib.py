"""A client library no one here wrote, as a client described by a metadata document: Authlib's
``AsyncOAuth2Client`` (httpx) builds the authorization request with PKCE and redeems the code
and the refresh token with its URL as ``client_id`` and no secret (``none``), the way an MCP
client does; the test plays only the browser."""

from __future__ import annotations

import warnings

from authlib.common.security import generate_token

from tests.openid.harness import ISSUER, query_of

from .conftest import DocumentSite, MakeOp

with warnings.catch_warnings():
    # Authlib's httpx client announces a move to httpx2; httpx is what is installed.
    warnings.simplefilter("ignore")
    from authlib.integrations.httpx_client import AsyncOAuth2Client

REDIRECT = "http://127.0.0.1:53682/callback"  # a native app's loopback port of the moment


async def test_authlib_as_a_document_client(make_op: MakeOp, site: DocumentSite) -> None:
    op = await make_op()
    url = site.document("/clients/tool.json")
    await op.sign_in()
    base = str(op.client.make_url("")).rstrip("/")
    async with AsyncOAuth2Client(
        url,
        scope="openid profile offline_access",
        redirect_uri=REDIRECT,
        code_challenge_method="S256",
        token_endpoint_auth_method="none",
    ) as client:
        verifier = generate_token(48)
        authorization, state = client.create_authorization_url(
            ISSUER + "/oauth2/authorize", code_verifier=verifier
        )
        consent = await op.open(authorization)
        assert site.host in await consent.text()
        answer = await op.answer(await op.consent(consent))
        assert answer.redirect_uri == REDIRECT and answer.params["state"] == state
        back = f"{answer.redirect_uri}?code={answer.code}&state={state}&iss={ISSUER}"
        token = await client.fetch_token(
            base + "/oauth2/token", authorization_response=back, code_verifier=verifier
        )
        assert token["token_type"] == "Bearer" and token["id_token"]
        refreshed = await client.refresh_token(
            base + "/oauth2/token", refresh_token=token["refresh_token"]
        )
        assert refreshed["access_token"] != token["access_token"]
    assert query_of(authorization)["client_id"] == url
    assert site.hits["/clients/tool.json"] == 1
