"""GET /v1/auth/{provider}: spec 4.5, rules 1-7, against the fake providers."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

from tests.fakeidp import FakeIdP

from .conftest import CALLBACK_URL, SignIn


async def test_provider_details_body_and_authorization_url(signin: SignIn) -> None:
    response = await signin.start("google", state="my-state-123")
    assert response.status == 200
    assert response.headers["Cache-Control"] == "no-store"
    body = await response.json()
    assert set(body) == {
        "provider",
        "authorizationUrl",
        "clientId",
        "scopes",
        "responseType",
        "state",
    }
    assert body["provider"] == "google"
    assert body["clientId"] == signin.idp.google.client_id
    assert body["scopes"] == ["openid", "profile", "email"]
    assert body["responseType"] == "code"
    assert body["state"] == "my-state-123"
    url = body["authorizationUrl"]
    assert url.startswith(signin.idp.google.authorization_endpoint)
    query = parse_qs(urlsplit(url).query)
    assert query["client_id"] == [signin.idp.google.client_id]
    assert query["redirect_uri"] == [CALLBACK_URL.format(name="google")]
    assert query["response_type"] == ["code"]
    assert query["state"] == ["my-state-123"]
    assert query["scope"] == ["openid profile email"]
    assert "scope=openid%20profile%20email" in url  # space-separated, percent-encoded
    assert query["code_challenge_method"] == ["S256"]
    assert len(query["code_challenge"][0]) == 43
    assert len(query["nonce"][0]) >= 22


async def test_scopes_and_shapes_of_the_other_providers(signin: SignIn) -> None:
    facebook = await (await signin.start("facebook")).json()
    assert facebook["scopes"] == ["public_profile", "email"]
    assert "scope=public_profile%20email" in facebook["authorizationUrl"]
    assert "nonce" not in parse_qs(urlsplit(facebook["authorizationUrl"]).query)
    apple = await (await signin.start("apple")).json()
    assert apple["scopes"] == ["name", "email"]
    query = parse_qs(urlsplit(apple["authorizationUrl"]).query)
    assert query["scope"] == ["name email"]
    assert query["response_mode"] == ["form_post"]


async def test_client_secret_is_never_returned(signin: SignIn) -> None:
    for provider in ("google", "facebook", "apple"):
        text = await (await signin.start(provider)).text()
        secret = signin.idp[provider].client_secret
        assert secret not in text


async def test_a_random_state_is_generated_when_absent(signin: SignIn) -> None:
    first = await (await signin.start()).json()
    second = await (await signin.start()).json()
    assert first["state"] != second["state"]
    assert len(first["state"]) >= 43  # 256 bits, base64url
    assert parse_qs(urlsplit(first["authorizationUrl"]).query)["state"] == [first["state"]]


async def test_invalid_provider_names_value_and_lists_valid_ones(signin: SignIn) -> None:
    response = await signin.client.get(
        "/v1/auth/github", params={"redirect_uri": CALLBACK_URL.format(name="google")}
    )
    assert response.status == 400
    assert await response.json() == {
        "error": "invalid_provider",
        "message": "unsupported provider 'github'; valid providers: google, facebook, apple",
    }
    # Rule 1 comes before rule 2.
    response = await signin.client.get("/v1/auth/github")
    assert (await response.json())["error"] == "invalid_provider"


async def test_missing_redirect_uri(signin: SignIn) -> None:
    for query in ("", "?redirect_uri="):
        response = await signin.client.get(f"/v1/auth/google{query}")
        assert response.status == 400
        assert await response.json() == {
            "error": "missing_parameter",
            "message": "missing required parameter: redirect_uri",
        }


async def test_redirect_uri_must_be_a_configured_callback(signin: SignIn) -> None:
    for uri in (
        "https://evil.example/cb",
        CALLBACK_URL.format(name="google") + "/",
        CALLBACK_URL.format(name="google") + "?next=x",
    ):
        response = await signin.client.get("/v1/auth/google", params={"redirect_uri": uri})
        assert response.status == 400
        body = await response.json()
        assert body["error"] == "invalid_request"
        assert "redirect_uri" in body["message"]


async def test_unloadable_provider_configuration_is_500(signin: SignIn, fake_idp: FakeIdP) -> None:
    fake_idp.google.discovery_down = True
    response = await signin.start("google")
    assert response.status == 500
    assert await response.json() == {
        "error": "internal_error",
        "message": "the provider's configuration could not be loaded",
    }


async def test_browser_navigation_is_redirected_to_the_provider(signin: SignIn) -> None:
    response = await signin.client.get(
        "/v1/auth/google",
        params={"redirect_uri": CALLBACK_URL.format(name="google")},
        headers={"Accept": "text/html,application/xhtml+xml,*/*;q=0.8"},
        allow_redirects=False,
    )
    assert response.status == 302
    assert response.headers["Location"].startswith(signin.idp.google.authorization_endpoint)
    assert "__Host-authgate_binding" in response.cookies


async def test_binding_cookie_attributes(signin: SignIn) -> None:
    response = await signin.start()
    header = next(
        h for h in response.headers.getall("Set-Cookie") if "__Host-authgate_binding=" in h
    )
    attributes = {a.strip().split("=")[0].lower() for a in header.split(";")[1:]}
    assert {"httponly", "secure", "samesite", "path", "max-age"} <= attributes
    assert "SameSite=None" in header
    # __Host-: Secure, Path=/ and no Domain, or a browser refuses it; a sibling subdomain
    # cannot plant a cookie of this name.
    assert "Path=/;" in header + ";"
    assert "domain" not in attributes
    assert "Max-Age=600" in header


async def test_intent_must_be_known_and_link_needs_a_caller(signin: SignIn) -> None:
    response = await signin.start(intent="delete-everything")
    assert response.status == 400
    # The contract's error text, and the values that would have been accepted.
    assert await response.json() == {
        "error": "invalid parameter value in query: intent",
        "message": "intent must be one of login, register, link, reauthenticate",
    }
    response = await signin.start(intent="link")
    assert response.status == 401
    assert (await response.json())["error"] == "unauthorized"
