"""RFC 8707 resource indicators over HTTP: ``resource`` (repeatable) at the authorization
endpoint, the token endpoint (code and client credentials) and refresh; the access token's
``aud`` is the resources (a string for one, a list for several), the ID token's stays the
client; a code and a token family remember the resources, a later request may narrow them,
never widen (``invalid_target``); userinfo serves only tokens whose audience is the client."""

from __future__ import annotations

from typing import Any

import pytest
from aiohttp import ClientResponse

from tests.openid.harness import Answer, Op, Request
from tests.support.jwt import claims_of

from .conftest import (
    MCP,
    OTHER_API,
    PARTNER_REDIRECT,
    RESOURCE_REDIRECT,
    SSF,
    basic,
    client_token,
    introspect,
    issued,
    refused,
    token_request,
)

OFFLINE = "openid profile offline_access"


def tools_request(scope: str = OFFLINE) -> Request:
    return Request(client_id="tools", redirect_uri=RESOURCE_REDIRECT, scope=scope)


async def authorize(op: Op, request: Request, resources: tuple[str, ...]) -> ClientResponse:
    """The browser at the authorization endpoint with ``request`` and its resources."""
    params = [*request.params().items(), *(("resource", r) for r in resources)]
    response = await op.client.get(
        "/oauth2/authorize",
        params=params,
        headers={"Accept": "text/html", **op.cookie_header()},
        allow_redirects=False,
    )
    op.keep_cookies(response)
    return response


async def code_for(op: Op, request: Request, resources: tuple[str, ...]) -> Answer:
    answer = await op.answer(await authorize(op, request, resources))
    assert "code" in answer.params, answer.params
    return answer


async def redeem(
    op: Op, request: Request, answer: Answer, resources: tuple[str, ...] = ()
) -> ClientResponse:
    fields = [
        ("grant_type", "authorization_code"),
        ("code", answer.code),
        ("redirect_uri", request.redirect_uri),
        ("code_verifier", request.pkce.verifier),
        *(("resource", r) for r in resources),
    ]
    return await token_request(op, "tools", fields)


async def refresh(op: Op, token: str, resources: tuple[str, ...] = ()) -> ClientResponse:
    fields = [("grant_type", "refresh_token"), ("refresh_token", token)]
    fields += [("resource", r) for r in resources]
    return await token_request(op, "tools", fields)


def aud(token: str) -> Any:
    return claims_of(token)["aud"]


async def test_a_clients_token_is_for_the_resources_asked(machine: Op) -> None:
    one = await issued(await client_token(machine, resources=(MCP,)))
    assert aud(one["access_token"]) == MCP
    both = await issued(await client_token(machine, resources=(MCP, SSF, MCP)))
    assert aud(both["access_token"]) == [MCP, SSF]
    described = await introspect(machine, both["access_token"])
    assert described["active"] is True and described["aud"] == [MCP, SSF]
    assert (await introspect(machine, one["access_token"]))["aud"] == MCP


@pytest.mark.parametrize(
    "resource",
    [OTHER_API, "https://mcp.example.com/#frag", "not a uri", "relative/path", MCP + "x"],
)
async def test_a_resource_not_registered_is_invalid_target(
    memory_machine: Op, resource: str
) -> None:
    await refused(await client_token(memory_machine, resources=(MCP, resource)), "invalid_target")


async def test_the_code_flow_issues_tokens_for_the_resources_authorized(machine: Op) -> None:
    op = machine
    await op.sign_in()
    request = tools_request()
    answer = await code_for(op, request, (MCP, SSF))
    body = await issued(await redeem(op, request, answer))
    assert aud(body["access_token"]) == [MCP, SSF]
    # the ID token is for the client, whatever the access token is for
    claims = await op.verify_id_token(body["id_token"], client_id="tools", nonce=request.nonce)
    assert claims["aud"] == "tools"
    described = await introspect(op, body["access_token"])
    assert described["active"] is True and described["aud"] == [MCP, SSF]
    assert described["sub"] == claims["sub"]

    # a refresh without resource: the family's resources; with one: narrowed to it
    again = await issued(await refresh(op, body["refresh_token"]))
    assert aud(again["access_token"]) == [MCP, SSF]
    narrowed = await issued(await refresh(op, again["refresh_token"], (SSF,)))
    assert aud(narrowed["access_token"]) == SSF
    # narrowing one access token does not narrow the grant
    wide = await issued(await refresh(op, narrowed["refresh_token"]))
    assert aud(wide["access_token"]) == [MCP, SSF]
    # never wider: a resource registered for the client but not authorized
    await refused(await refresh(op, wide["refresh_token"], (MCP, OTHER_API)), "invalid_target")
    # the refused refresh spent nothing: the token still rotates
    await issued(await refresh(op, wide["refresh_token"]))


async def test_the_token_request_may_narrow_the_codes_resources(machine: Op) -> None:
    op = machine
    await op.sign_in()
    request = tools_request()
    answer = await code_for(op, request, (MCP, SSF))
    # wider than the code: refused, and the code is not spent
    await refused(await redeem(op, request, answer, (OTHER_API,)), "invalid_target")
    body = await issued(await redeem(op, request, answer, (MCP,)))
    assert aud(body["access_token"]) == MCP
    # the family keeps what the code was granted
    again = await issued(await refresh(op, body["refresh_token"]))
    assert aud(again["access_token"]) == [MCP, SSF]


async def test_a_code_without_resources_gets_tokens_for_the_client_only(memory_machine: Op) -> None:
    op = memory_machine
    await op.sign_in()
    request = tools_request()
    answer = await code_for(op, request, ())
    await refused(await redeem(op, request, answer, (MCP,)), "invalid_target")
    body = await issued(await redeem(op, request, answer))
    assert aud(body["access_token"]) == "tools"
    await refused(await refresh(op, body["refresh_token"], (MCP,)), "invalid_target")
    info = await op.userinfo(body["access_token"])
    assert isinstance(info["sub"], str)


async def test_an_unregistered_resource_at_authorize_is_answered_invalid_target(
    memory_machine: Op,
) -> None:
    op = memory_machine
    await op.sign_in()
    request = tools_request()
    for resources in ((OTHER_API + "/more",), (MCP, "https://mcp.example.com/#f")):
        answer = await op.answer(await authorize(op, request, resources))
        assert answer.redirect_uri == RESOURCE_REDIRECT
        assert answer.params["error"] == "invalid_target", answer.params
        assert answer.params["state"] == request.state
        assert "code" not in answer.params


async def test_the_resources_survive_the_sign_in(memory_machine: Op) -> None:
    """A request that needs a sign-in first is resumed with its resources."""
    op = memory_machine
    request = tools_request()
    page = await authorize(op, request, (SSF,))
    resumed = await op.sign_in_from_page(page, intent="Create an account")
    answer = await op.answer(resumed)
    body = await issued(await redeem(op, request, answer))
    assert aud(body["access_token"]) == SSF


async def test_userinfo_serves_only_a_token_for_the_client(memory_machine: Op) -> None:
    op = memory_machine
    await op.sign_in()
    request = tools_request()
    answer = await code_for(op, request, (MCP,))
    body = await issued(await redeem(op, request, answer))
    refused_info = await op.client.get(
        "/oauth2/userinfo", headers={"Authorization": f"Bearer {body['access_token']}"}
    )
    assert refused_info.status == 401
    assert 'error="invalid_token"' in refused_info.headers["WWW-Authenticate"]
    # the same person's token for the client itself is served
    plain = tools_request()
    tokens = await issued(await redeem(op, plain, await code_for(op, plain, ())))
    assert (await op.userinfo(tokens["access_token"]))["sub"] == claims_of(body["access_token"])[
        "sub"
    ]


async def test_revoking_a_resource_token_ends_its_family(machine: Op) -> None:
    op = machine
    await op.sign_in()
    request = tools_request()
    body = await issued(await redeem(op, request, await code_for(op, request, (MCP,))))
    answer = await op.client.post(
        "/oauth2/revoke", data={"token": body["access_token"]}, headers=basic("tools")
    )
    assert answer.status == 200
    assert await introspect(op, body["access_token"]) == {"active": False}
    await refused(await refresh(op, body["refresh_token"]), "invalid_grant")


async def test_the_resources_survive_the_consent_page(machine: Op) -> None:
    """Another party's application: the consent page carries the request, resources included,
    and the approved code is for them."""
    op = machine
    await op.sign_in()
    request = Request(client_id="partner", redirect_uri=PARTNER_REDIRECT, scope="openid email")
    page = await authorize(op, request, (MCP,))
    answer = await op.answer(await op.consent(page))
    assert answer.redirect_uri == PARTNER_REDIRECT
    fields = [
        ("grant_type", "authorization_code"),
        ("code", answer.code),
        ("redirect_uri", request.redirect_uri),
        ("code_verifier", request.pkce.verifier),
    ]
    body = await issued(await token_request(op, "partner", fields))
    assert aud(body["access_token"]) == MCP
    claims = await op.verify_id_token(body["id_token"], client_id="partner", nonce=request.nonce)
    assert claims["aud"] == "partner"


async def test_an_apis_scope_the_client_is_allowed_rides_the_code_flow(machine: Op) -> None:
    """A person's application for an MCP server asks for the server's scope: kept when the
    client's allowed_scopes name it, ignored otherwise (as any scope not served)."""
    op = machine
    await op.sign_in()
    request = tools_request(scope="openid mcp:tools ssf.manage offline_access")
    body = await issued(await redeem(op, request, await code_for(op, request, (MCP,))))
    assert body["scope"] == "openid mcp:tools offline_access"
    claims = claims_of(body["access_token"])
    assert claims["scope"] == "openid mcp:tools offline_access" and claims["aud"] == MCP
    narrowed = await token_request(
        op,
        "tools",
        [
            ("grant_type", "refresh_token"),
            ("refresh_token", body["refresh_token"]),
            ("scope", "mcp:tools"),
        ],
    )
    assert claims_of((await issued(narrowed))["access_token"])["scope"] == "mcp:tools"
    # another client that is not allowed the scope: ignored, the rest goes on
    await op.sign_in()
    other = Request(scope="openid mcp:tools")
    answer = await op.code(other)
    assert (await op.tokens(other, answer))["scope"] == "openid"
