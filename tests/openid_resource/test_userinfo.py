"""``/oauth2/userinfo`` for tokens minted as the token endpoint mints them, on memory, SQLite
and PostgreSQL: each way of presenting the token, the claims of each scope; and RFC 6750's
refusals. The OIDF modules themselves, through a whole code flow, are in
tests/openid/test_userinfo_flow.py."""

from __future__ import annotations

import datetime as dt
from typing import Any

from aiohttp import ClientResponse
from joserfc.jwk import KeySet, RSAKey

from authgate.adapters.jose import JwtTokenSigner
from tests.fakeidp import FakeUser
from tests.openid_resource.conftest import ISSUER, Provider

ALICE = FakeUser(sub="alice-1", email="alice@example.com", email_verified=True, name="Alice A")


async def claims_of(answer: ClientResponse) -> dict[str, Any]:
    """The checks every successful userinfo answer must pass (the OIDF modules' own): 200,
    JSON, never cached, ``sub`` a string, standard claims of their types."""
    assert answer.status == 200, await answer.text()
    assert answer.content_type == "application/json"
    assert answer.headers["Cache-Control"] == "no-store"
    body: dict[str, Any] = await answer.json()
    assert isinstance(body["sub"], str) and body["sub"]
    for name in ("email", "name"):
        assert name not in body or isinstance(body[name], str)
    assert "email_verified" not in body or isinstance(body["email_verified"], bool)
    return body


async def test_a_bearer_header_by_get_answers_the_scopes_claims(provider: Provider) -> None:
    person = await provider.sign_in(ALICE)
    issued = await provider.issue(person)
    body = await claims_of(await provider.userinfo(issued.access_token))
    # sub is the ID token's: the account id.
    assert body == {
        "sub": person.account_id,
        "email": "alice@example.com",
        "email_verified": True,
        "name": "Alice A",
    }


async def test_a_bearer_header_by_post_is_answered(provider: Provider) -> None:
    person = await provider.sign_in(ALICE)
    issued = await provider.issue(person)
    answer = await provider.client.post(
        "/oauth2/userinfo", headers={"Authorization": f"Bearer {issued.access_token}"}
    )
    body = await claims_of(answer)
    assert body["sub"] == person.account_id and body["email"] == "alice@example.com"


async def test_the_token_in_a_form_body_is_answered(provider: Provider) -> None:
    person = await provider.sign_in(ALICE)
    issued = await provider.issue(person)
    answer = await provider.client.post(
        "/oauth2/userinfo", data={"access_token": issued.access_token}
    )
    body = await claims_of(answer)
    assert body["sub"] == person.account_id and body["name"] == "Alice A"


async def test_the_email_scope_gives_the_email_claims(provider: Provider) -> None:
    person = await provider.sign_in(ALICE)
    issued = await provider.issue(person, scopes=("openid", "email"))
    body = await claims_of(await provider.userinfo(issued.access_token))
    assert body == {"sub": person.account_id, "email": "alice@example.com", "email_verified": True}


async def test_the_profile_scope_gives_the_name(provider: Provider) -> None:
    person = await provider.sign_in(ALICE)
    issued = await provider.issue(person, scopes=("openid", "profile"))
    body = await claims_of(await provider.userinfo(issued.access_token))
    assert body == {"sub": person.account_id, "name": "Alice A"}


async def test_openid_alone_is_the_subject_alone_and_missing_claims_are_left_out(
    memory_provider: Provider,
) -> None:
    provider = memory_provider
    person = await provider.sign_in(ALICE)
    issued = await provider.issue(person, scopes=("openid",))
    assert await claims_of(await provider.userinfo(issued.access_token)) == {
        "sub": person.account_id
    }
    # An account without an email or name: the claims are absent, never null or empty.
    bare = await provider.sign_in(FakeUser(sub="bare-1", email=None, name=None))
    issued = await provider.issue(bare)
    assert await claims_of(await provider.userinfo(issued.access_token)) == {"sub": bare.account_id}


def challenge(answer: ClientResponse) -> str:
    return answer.headers["WWW-Authenticate"]


async def test_without_openid_the_token_is_refused_for_its_scope(
    memory_provider: Provider,
) -> None:
    provider = memory_provider
    person = await provider.sign_in(ALICE)
    issued = await provider.issue(person, scopes=("email", "offline_access"))
    answer = await provider.userinfo(issued.access_token)
    assert answer.status == 403
    assert challenge(answer).startswith('Bearer realm="authgate", error="insufficient_scope"')
    assert 'scope="openid"' in challenge(answer)
    assert (await answer.json())["error"] == "insufficient_scope"
    assert answer.headers["Cache-Control"] == "no-store"


async def test_rfc6750_refusals(memory_provider: Provider) -> None:
    provider = memory_provider
    client = provider.client
    person = await provider.sign_in(ALICE)
    issued = await provider.issue(person)

    # No token at all: a bare challenge (RFC 6750 section 3.1), for GET and POST alike.
    for answer in (
        await client.get("/oauth2/userinfo"),
        await client.post("/oauth2/userinfo"),
        await client.get("/oauth2/userinfo", headers={"Authorization": "Basic eDp5"}),
    ):
        assert answer.status == 401
        assert challenge(answer) == 'Bearer realm="authgate"'

    # Tokens that are not active access tokens of this provider.
    other_signer = JwtTokenSigner(
        KeySet([RSAKey.generate_key(2048, parameters={"kid": "elsewhere"})]), issuer=ISSUER
    )
    foreign = issued.claims.claims()
    del foreign["iss"]
    head, body, signature = issued.access_token.split(".")
    tampered = f"{head}.{body[:-2]}AA.{signature}"
    for token in (
        "not-a-token",
        person.session_token,  # a session token is no access token
        other_signer.access_token(foreign),  # signed by another key
        tampered,
    ):
        answer = await provider.userinfo(token)
        assert answer.status == 401, token
        assert challenge(answer).startswith('Bearer realm="authgate", error="invalid_token"')
        assert (await answer.json())["error"] == "invalid_token"

    # Sent twice (header and form), or a Bearer header without a token: 400 invalid_request.
    both = await client.post(
        "/oauth2/userinfo",
        data={"access_token": issued.access_token},
        headers={"Authorization": f"Bearer {issued.access_token}"},
    )
    assert both.status == 400
    assert 'error="invalid_request"' in challenge(both)
    empty = await client.get("/oauth2/userinfo", headers={"Authorization": "Bearer "})
    assert empty.status == 400
    # A form body must be a form, its fields each once.
    for data, content_type in (
        ("access_token=a&access_token=b", "application/x-www-form-urlencoded"),
        ('{"access_token": "x"}', "application/json"),
    ):
        answer = await client.post(
            "/oauth2/userinfo", data=data, headers={"Content-Type": content_type}
        )
        assert answer.status == 400, data
        assert (await answer.json())["error"] == "invalid_request"

    # Still good after all of that; and not once it expired.
    assert (await provider.userinfo(issued.access_token)).status == 200
    provider.clock.advance(dt.timedelta(minutes=5, seconds=1).total_seconds())
    assert (await provider.userinfo(issued.access_token)).status == 401
