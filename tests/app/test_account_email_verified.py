"""GET /v1/account's ``emailVerified``: true only when the provider said the address is verified.

Sign-ins go through the fake providers end to end and the account is read back over HTTP, on
each storage adapter. The facebook shape's profile endpoint never says whether the address is
verified, so its accounts must read as unverified; GET /v1/account/providers keeps spec 2.2's
record unchanged.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from aiohttp import ClientResponse

from tests.fakeidp import FakeIdP, FakeUser, SettableClock

from .conftest import APP_URL, CALLBACK_URL, PROVIDERS, MakeService, SignIn


@pytest.fixture(params=["memory", "sqlite", "postgres"])
async def signin_on(
    request: pytest.FixtureRequest,
    make_service: MakeService,
    fake_idp: FakeIdP,
    idp_clock: SettableClock,
    tmp_path: Path,
) -> SignIn:
    """The service with the fake's three providers, on each kind of database."""
    url = {
        "memory": lambda: "memory://",
        "sqlite": lambda: f"sqlite:///{tmp_path}/authgate.db",
        "postgres": lambda: request.getfixturevalue("clean_postgres_url"),
    }[request.param]()
    client = await make_service(
        {
            "app": {
                "url": APP_URL,
                "callback_urls": [CALLBACK_URL.format(name=p) for p in PROVIDERS],
            },
            "database": {"url": url},
            "providers": {p: fake_idp.config(p) for p in PROVIDERS},
        },
        clock=idp_clock,
    )
    return SignIn(client, fake_idp, idp_clock)


def session_token(response: ClientResponse) -> str:
    assert response.status == 302, response.status
    assert "error=" not in response.headers["Location"], response.headers["Location"]
    for header in response.headers.getall("Set-Cookie", []):
        if header.startswith("session="):
            return header.split(";")[0].removeprefix("session=")
    raise AssertionError("the callback set no session cookie")


async def account(signin: SignIn, token: str) -> dict[str, Any]:
    response = await signin.client.get("/v1/account", headers={"Authorization": f"Bearer {token}"})
    assert response.status == 200, await response.text()
    body: dict[str, Any] = await response.json()
    return body


async def register(signin: SignIn, provider: str, user: FakeUser) -> str:
    return session_token(await signin.complete(provider, user=user, intent="register"))


async def test_facebook_shaped_email_of_unknown_verification_is_unverified(
    signin_on: SignIn,
) -> None:
    # The fake user is "verified", but a Graph-style profile answer never says so.
    user = FakeUser(sub="fb-ev", email="fred@example.com", email_verified=True)
    body = await account(signin_on, await register(signin_on, "facebook", user))
    assert body["email"] == "fred@example.com"
    assert body["emailVerified"] is False


@pytest.mark.parametrize("provider", ["google", "apple"])
async def test_an_email_the_provider_says_is_verified_is_verified(
    signin_on: SignIn, provider: str
) -> None:
    user = FakeUser(sub=f"{provider}-ev", email="gina@example.com", email_verified=True)
    body = await account(signin_on, await register(signin_on, provider, user))
    assert body["email"] == "gina@example.com"
    assert body["emailVerified"] is True


async def test_an_id_token_without_email_verified_is_unverified(signin_on: SignIn) -> None:
    user = FakeUser(sub="g-silent", email="sam@example.com", email_verified=None)
    body = await account(signin_on, await register(signin_on, "google", user))
    assert body["email"] == "sam@example.com"
    assert body["emailVerified"] is False


async def test_no_email_is_not_verified(signin_on: SignIn) -> None:
    user = FakeUser(sub="g-nomail", email=None)
    body = await account(signin_on, await register(signin_on, "google", user))
    assert body.get("email") is None
    assert body["emailVerified"] is False


async def test_linking_a_verified_provider_does_not_verify_the_accounts_email(
    signin_on: SignIn,
) -> None:
    first = FakeUser(sub="g-first", email="a@first.example", email_verified=None)
    # A google sign-in proves a login time (its signed auth_time): linking may follow at once.
    token = await register(signin_on, "google", first)
    auth = {"Authorization": f"Bearer {token}"}
    response = await signin_on.client.get(
        "/v1/auth/apple",
        params={"redirect_uri": CALLBACK_URL.format(name="apple"), "intent": "link"},
        headers={**auth, "Accept": "application/json"},
    )
    assert response.status == 200, await response.text()
    binding = response.cookies["__Host-authgate_binding"].value
    details = await response.json()
    back = await signin_on.idp.authorize(
        details["authorizationUrl"],
        user=FakeUser(sub="a-second", email="a@apple.example", email_verified=True),
    )
    linked = await signin_on.callback("apple", back.params, binding=binding, method=back.method)
    assert "error=" not in linked.headers["Location"], linked.headers["Location"]

    body = await account(signin_on, token)
    # The account's email is the primary (google) identity's, still unverified.
    assert (body["email"], body["emailVerified"]) == ("a@first.example", False)
    assert [p["provider"] for p in body["providers"]] == ["google", "apple"]
    # Spec 2.2's linked-provider record is unchanged (no email fields added to it).
    listing = await signin_on.client.get("/v1/account/providers", headers=auth)
    for record in (await listing.json())["providers"]:
        assert set(record) == {"provider", "providerId", "linkedAt", "isPrimary"}


async def test_email_verified_is_a_required_boolean_in_the_openapi_document(
    signin: SignIn,
) -> None:
    document = await (await signin.client.get("/openapi.json")).json()
    operation = document["paths"]["/v1/account"]["get"]
    schema = operation["responses"]["200"]["content"]["application/json"]["schema"]
    assert schema["properties"]["emailVerified"]["type"] == "boolean"
    assert "emailVerified" in schema["required"]
