"""A client described by a metadata document, through the whole code flow with PKCE on each
store: the sign-in page, the consent page naming the document's host beside the client's
(unchecked) name, the token endpoint with no secret, the ID token for the URL; consent asked
again every time; discovery saying the provider reads such documents."""

from __future__ import annotations

from authgate.domain.redirects import origin
from tests.openid.harness import Op, Request

from .conftest import NATIVE_REDIRECT, DocumentSite, MakeOp


def native(client_id: str, scope: str = "openid profile offline_access", **extra: str) -> Request:
    return Request(client_id=client_id, redirect_uri=NATIVE_REDIRECT, scope=scope, extra=extra)


async def test_code_flow_of_a_document_client(
    make_op: MakeOp, site: DocumentSite, database_url: str
) -> None:
    op = await make_op(database_url)
    url = site.document("/clients/tool.json")
    request = native(url)

    signin = await op.authorize(request)
    # the sign-in page too names the host beside the name the document gives
    assert f"Tool &lt;Runner&gt; ({site.host})" in await signin.text()
    page = await op.sign_in_from_page(signin, intent="Create an account")
    assert page.status == 200, await page.text()
    html = await page.text()
    # the name the document gives, escaped, with the host that serves the document beside it
    assert "Tool &lt;Runner&gt;" in html and "<Runner>" not in html
    assert f'<span class="host">({site.host})</span>' in html
    assert f"<strong>{site.host}</strong>" in html
    csp = page.headers["Content-Security-Policy"]
    assert f"form-action 'self' {origin(NATIVE_REDIRECT)};" in csp
    assert "frame-ancestors 'none'" in csp and "unsafe-inline" not in csp

    answer = await op.answer(await op.consent(page))
    assert answer.redirect_uri == NATIVE_REDIRECT and answer.params["state"] == request.state
    tokens = await op.tokens(request, answer, client_id=url, secret=None)
    claims = await op.verify_id_token(
        tokens["id_token"], client_id=url, nonce=request.nonce, access_token=tokens["access_token"]
    )
    assert claims["aud"] == url
    assert (await op.userinfo(tokens["access_token"]))["sub"] == claims["sub"]
    refreshed = await op.token(
        {"grant_type": "refresh_token", "refresh_token": tokens["refresh_token"]},
        client_id=url,
        secret=None,
    )
    assert refreshed.status == 200, await refreshed.text()
    assert site.hits["/clients/tool.json"] == 1  # one fetch, kept for every later step


async def test_consent_is_asked_every_time(make_op: MakeOp, site: DocumentSite) -> None:
    op = await make_op()
    url = site.document("/clients/tool.json")
    await op.sign_in()
    first = native(url)
    await op.tokens(
        first,
        await op.answer(await op.consent(await op.authorize(first))),
        client_id=url,
        secret=None,
    )

    # the same scopes, consented to a moment ago: asked again (a configured third party is not)
    again = await op.authorize(native(url))
    assert again.status == 200 and again.content_type == "text/html"
    assert "would like to" in await again.text()
    silent = await op.answer(await op.authorize(native(url, prompt="none")))
    assert silent.params["error"] == "consent_required"


async def test_discovery_says_documents_are_read(make_op: MakeOp, op: Op) -> None:
    on = await make_op()
    for path in ("/.well-known/openid-configuration", "/.well-known/oauth-authorization-server"):
        document = await (await on.client.get(path)).json()
        assert document["client_id_metadata_document_supported"] is True
        assert "none" in document["token_endpoint_auth_methods_supported"]
        # off (the default): the document is as it was, without the member
        assert (
            "client_id_metadata_document_supported" not in await (await op.client.get(path)).json()
        )


async def test_signing_out_fetches_nothing(make_op: MakeOp, site: DocumentSite) -> None:
    """Such a client takes no back-channel logout: a session's end does not look it up (a
    fetch there would happen inside the unit of work that ends the session)."""
    op = await make_op(min_cache_seconds=1)
    url = site.document("/clients/tool.json", headers={"Cache-Control": "max-age=10"})
    await op.sign_in()
    request = native(url)
    answer = await op.answer(await op.consent(await op.authorize(request)))
    await op.tokens(request, answer, client_id=url, secret=None)
    assert site.hits["/clients/tool.json"] == 1
    op.clock.advance(11)  # the document is due to be fetched again
    out = await op.client.post("/v1/auth/logout", headers={"Authorization": f"Bearer {op.session}"})
    assert out.status == 204
    assert site.hits["/clients/tool.json"] == 1
