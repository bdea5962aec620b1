"""The OIDF basic OP plan's userinfo and scope modules as the suite runs them: a whole code
flow (authorize, token, the ID token's standard checks), then ``/oauth2/userinfo`` with the
access token the flow issued, on memory, SQLite and PostgreSQL. The subject at userinfo is
the ID token's; scope claims come from userinfo, never the ID token."""

from __future__ import annotations

import json
from typing import Any

from .harness import ADA, Op, Request, userinfo_answer


async def flow(op: Op, request: Request) -> tuple[dict[str, Any], dict[str, Any]]:
    """A signed-in browser's code flow: the tokens and the ID token's checked claims."""
    await op.sign_in()
    tokens = await op.tokens(request, await op.code(request))
    claims = await op.verify_id_token(
        tokens["id_token"], nonce=request.nonce, access_token=tokens["access_token"]
    )
    return tokens, claims


async def test_oidcc_userinfo_get(op_on: Op) -> None:
    op = op_on
    tokens, id_claims = await flow(op, Request(scope="openid profile email"))
    body = await op.userinfo(tokens["access_token"])
    assert body["sub"] == id_claims["sub"]
    assert body["name"] == ADA.name and body["email"] == ADA.email


async def test_oidcc_userinfo_post_header(op_on: Op) -> None:
    op = op_on
    tokens, id_claims = await flow(op, Request(scope="openid profile"))
    response = await op.client.post(
        "/oauth2/userinfo", headers={"Authorization": f"Bearer {tokens['access_token']}"}
    )
    body = await userinfo_answer(response, op.clock.timestamp())
    assert body["sub"] == id_claims["sub"] and body["name"] == ADA.name


async def test_oidcc_userinfo_post_body(op_on: Op) -> None:
    """Optional in the plan (an error only warns); authgate serves it (RFC 6750 § 2.2)."""
    op = op_on
    tokens, id_claims = await flow(op, Request(scope="openid profile"))
    response = await op.client.post(
        "/oauth2/userinfo", data={"access_token": tokens["access_token"]}
    )
    body = await userinfo_answer(response, op.clock.timestamp())
    assert body["sub"] == id_claims["sub"] and body["name"] == ADA.name


async def test_oidcc_scope_profile(op: Op) -> None:
    tokens, id_claims = await flow(op, Request(scope="openid profile"))
    body = await op.userinfo(tokens["access_token"])
    assert body == {"sub": id_claims["sub"], "name": ADA.name}


async def test_oidcc_scope_email(op: Op) -> None:
    tokens, id_claims = await flow(op, Request(scope="openid email"))
    # verify_id_token has checked that neither the email claims nor name are in it
    body = await op.userinfo(tokens["access_token"])
    assert body == {
        "sub": id_claims["sub"],
        "email": ADA.email,
        "email_verified": ADA.email_verified,
    }


async def test_oidcc_claims_essential(op: Op) -> None:
    """The ``claims`` parameter is not supported (discovery says so) and is ignored: the flow
    succeeds, ``name`` stays out of the ID token; userinfo gives what the scope allows (the
    suite only warns when the essential ``name`` is missing)."""
    claims = {"userinfo": {"name": {"essential": True}}}
    request = Request(extra={"claims": json.dumps(claims)})
    tokens, id_claims = await flow(op, request)
    assert "name" not in id_claims
    body = await op.userinfo(tokens["access_token"])
    assert body == {"sub": id_claims["sub"]}
    # with the profile scope, name is there as the scope gives it
    tokens, id_claims = await flow(op, Request(scope="openid profile", extra=request.extra))
    assert "name" not in id_claims
    assert (await op.userinfo(tokens["access_token"]))["name"] == ADA.name
