"""CORS on the provider's browser-facing endpoints (token, userinfo, revocation): only for the
origins public clients registered, narrowed to the calling client's own once it is known;
never ``*``, never with credentials; preflights included."""

from __future__ import annotations

from tests.fakeidp import FakeUser
from tests.openid_resource.conftest import SPA_ORIGIN, Provider, basic

ERIN = FakeUser(sub="erin-1", email="erin@example.com", name="Erin E")
ELSEWHERE = "https://elsewhere.example"


def preflight(origin: str, method: str = "POST") -> dict[str, str]:
    return {
        "Origin": origin,
        "Access-Control-Request-Method": method,
        "Access-Control-Request-Headers": "authorization",
    }


async def test_preflights_answer_public_clients_origins_only(memory_provider: Provider) -> None:
    client = memory_provider.client
    endpoints = (
        ("/oauth2/token", "POST"),
        ("/oauth2/userinfo", "GET, POST"),
        ("/oauth2/revoke", "POST"),
    )
    for path, methods in endpoints:
        answer = await client.options(path, headers=preflight(SPA_ORIGIN))
        assert answer.status == 204, path
        assert answer.headers["Access-Control-Allow-Origin"] == SPA_ORIGIN
        assert answer.headers["Access-Control-Allow-Methods"] == methods
        assert "Authorization" in answer.headers["Access-Control-Allow-Headers"]
        assert "Access-Control-Allow-Credentials" not in answer.headers
        # Another origin, and a confidential client's (which registers none): refused.
        for origin in (ELSEWHERE, "https://web.example.com"):
            refused = await client.options(path, headers=preflight(origin))
            assert refused.status == 403, (path, origin)
            assert "Access-Control-Allow-Origin" not in refused.headers


async def test_userinfo_answers_the_public_clients_own_origin(memory_provider: Provider) -> None:
    provider = memory_provider
    person = await provider.sign_in(ERIN)
    spa = await provider.issue(person, client_id="spa")
    web = await provider.issue(person, client_id="web")

    def called_from(origin: str, token: str) -> dict[str, str]:
        return {"Origin": origin, "Authorization": f"Bearer {token}"}

    answer = await provider.client.get(
        "/oauth2/userinfo", headers=called_from(SPA_ORIGIN, spa.access_token)
    )
    assert answer.status == 200
    assert answer.headers["Access-Control-Allow-Origin"] == SPA_ORIGIN
    assert answer.headers["Access-Control-Expose-Headers"] == "WWW-Authenticate"
    assert "Access-Control-Allow-Credentials" not in answer.headers
    assert "Origin" in answer.headers["Vary"]
    # A confidential client's token, sent from the public client's origin: the answer is not
    # for that page.
    other = await provider.client.get(
        "/oauth2/userinfo", headers=called_from(SPA_ORIGIN, web.access_token)
    )
    assert other.status == 200
    assert "Access-Control-Allow-Origin" not in other.headers
    # From an origin nobody registered: no CORS headers at all.
    foreign = await provider.client.get(
        "/oauth2/userinfo", headers=called_from(ELSEWHERE, spa.access_token)
    )
    assert "Access-Control-Allow-Origin" not in foreign.headers
    # A refusal stays readable by a registered origin (the page learns its token is bad).
    refused = await provider.client.get("/oauth2/userinfo", headers=called_from(SPA_ORIGIN, "bad"))
    assert refused.status == 401
    assert refused.headers["Access-Control-Allow-Origin"] == SPA_ORIGIN


async def test_revocation_answers_the_public_clients_own_origin(memory_provider: Provider) -> None:
    provider = memory_provider
    person = await provider.sign_in(ERIN)
    web = await provider.issue(person, client_id="web")
    assert web.refresh_token is not None
    confidential = await provider.client.post(
        "/oauth2/revoke",
        data={"token": web.refresh_token},
        headers={**basic("web"), "Origin": SPA_ORIGIN},
    )
    assert confidential.status == 200
    assert "Access-Control-Allow-Origin" not in confidential.headers
    public = await provider.client.post(
        "/oauth2/revoke",
        data={"token": "unknown", "client_id": "spa"},
        headers={"Origin": SPA_ORIGIN, "Cookie": "session=ignored"},
    )
    assert public.status == 200
    assert public.headers["Access-Control-Allow-Origin"] == SPA_ORIGIN
    assert "Access-Control-Allow-Credentials" not in public.headers
