"""``POST /oauth2/revoke`` (RFC 7009) on memory, SQLite and PostgreSQL: a token of the
authenticated client revokes its whole family at once; anything else answers 200 and changes
nothing; the client's own errors are RFC 6749 section 5.2's."""

from __future__ import annotations

from tests.fakeidp import FakeUser
from tests.openid_resource.conftest import SPA_ORIGIN, Provider, basic

CAROL = FakeUser(sub="carol-1", email="carol@example.com", name="Carol C")


async def test_a_refresh_token_revokes_its_family(provider: Provider) -> None:
    person = await provider.sign_in(CAROL)
    issued = await provider.issue(person)
    kept = await provider.issue(person)  # another grant of the same client and session
    assert issued.refresh_token is not None
    answer = await provider.revoke(issued.refresh_token)
    assert answer.status == 200
    assert answer.headers["Cache-Control"] == "no-store"
    assert await answer.read() == b""
    assert not await provider.active(issued.refresh_token)
    assert not await provider.active(issued.access_token)
    assert await provider.active(kept.access_token)
    # Revoking again is no error.
    assert (await provider.revoke(issued.refresh_token)).status == 200


async def test_an_access_token_revokes_its_family_whatever_the_hint_says(
    provider: Provider,
) -> None:
    person = await provider.sign_in(CAROL)
    issued = await provider.issue(person)
    assert issued.refresh_token is not None
    # The hint is wrong: it is not trusted, the token says what it is.
    answer = await provider.revoke(issued.access_token, token_type_hint="refresh_token")
    assert answer.status == 200
    assert not await provider.active(issued.access_token)
    assert not await provider.active(issued.refresh_token)


async def test_another_clients_token_or_an_unknown_one_changes_nothing(
    provider: Provider,
) -> None:
    person = await provider.sign_in(CAROL)
    issued = await provider.issue(person, client_id="web")
    assert issued.refresh_token is not None
    for token in (issued.refresh_token, issued.access_token, "unknown", person.session_token):
        answer = await provider.client.post(
            "/oauth2/revoke",
            data={
                "token": token,
                "client_id": "other",
                "client_secret": "other-secret-" + "o" * 32,
            },
        )
        assert answer.status == 200, token
    assert await provider.active(issued.access_token)
    assert await provider.active(issued.refresh_token)


async def test_a_public_client_revokes_its_own_tokens(provider: Provider) -> None:
    person = await provider.sign_in(CAROL)
    issued = await provider.issue(person, client_id="spa")
    assert issued.refresh_token is not None
    answer = await provider.client.post(
        "/oauth2/revoke",
        data={"token": issued.refresh_token, "client_id": "spa"},
        headers={"Origin": SPA_ORIGIN},
    )
    assert answer.status == 200
    assert answer.headers["Access-Control-Allow-Origin"] == SPA_ORIGIN
    assert not await provider.active(issued.access_token)


async def test_the_clients_errors(memory_provider: Provider) -> None:
    provider = memory_provider
    client = provider.client
    person = await provider.sign_in(CAROL)
    issued = await provider.issue(person)
    assert issued.refresh_token is not None

    wrong = await client.post(
        "/oauth2/revoke",
        data={"token": issued.refresh_token},
        headers={"Authorization": "Basic d2ViOm5vdC10aGUtc2VjcmV0"},  # web:not-the-secret
    )
    assert wrong.status == 401
    assert (await wrong.json())["error"] == "invalid_client"
    assert wrong.headers["WWW-Authenticate"].startswith("Basic ")
    anonymous = await client.post("/oauth2/revoke", data={"token": issued.refresh_token})
    assert anonymous.status == 401
    missing = await client.post("/oauth2/revoke", data={}, headers=basic("web"))
    assert missing.status == 400
    assert (await missing.json())["error"] == "invalid_request"
    twice = await client.post(
        "/oauth2/revoke",
        data=f"token={issued.refresh_token}&token=x",
        headers={**basic("web"), "Content-Type": "application/x-www-form-urlencoded"},
    )
    assert twice.status == 400
    not_a_form = await client.post(
        "/oauth2/revoke", json={"token": issued.refresh_token}, headers=basic("web")
    )
    assert not_a_form.status == 400
    # None of them revoked anything.
    assert await provider.active(issued.refresh_token)
