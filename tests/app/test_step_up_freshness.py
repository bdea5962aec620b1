"""A session is only as fresh as its provider proves (RFC 9470 step-up), per provider shape.

The fake provider holds its own long-lived session for the user (``login_at``): an ordinary
sign-in is answered from it, and its ID tokens say so in ``auth_time``; a request that forces
a login (``prompt=login`` / ``max_age=0``, facebook's ``auth_type=reauthenticate``) makes the
user log in again. Account changes (export, delete) need a session whose ``auth_time`` is
within ``session.reauthenticate_after_seconds`` (600), else 401 ``reauthentication_required``.
Only a signed statement proves a login: the ``intent=reauthenticate`` flow restores them
through a provider whose ID tokens carry ``auth_time``; one that signs no time (facebook) is
refused at the start, and a forced login that the ID token does not date proves nothing.
"""

from __future__ import annotations

import pytest
from aiohttp import ClientResponse

from tests.fakeidp import FakeUser
from tests.support.jwt import claims_of

from .conftest import SignIn, session_of

MONTH = 30 * 86400
ADA = FakeUser(sub="ada-1", email="ada@example.com", name="Ada Lovelace")
ID_TOKEN_SHAPES = ("google", "apple")


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def export(signin: SignIn, token: str) -> ClientResponse:
    return await signin.client.get("/v1/account/export", headers=bearer(token))


async def assert_step_up_required(signin: SignIn, token: str) -> None:
    for method, path in (("GET", "/v1/account/export"), ("DELETE", "/v1/account")):
        answer = await signin.client.request(method, path, headers=bearer(token))
        assert answer.status == 401, (method, path, await answer.text())
        assert (await answer.json())["error"] == "reauthentication_required"
        assert "insufficient_user_authentication" in answer.headers["WWW-Authenticate"]


async def reauthenticate(signin: SignIn, provider: str, token: str) -> tuple[str, str]:
    """The re-authentication flow with ``token`` as the caller: the provider's authorization
    URL and the new session token."""
    details, binding = await signin.begin(provider, bearer=token, intent="reauthenticate")
    url = details["authorizationUrl"]
    back = await signin.idp.authorize(url, user=ADA)
    answer = await signin.callback(provider, back.params, binding=binding, method=back.method)
    return url, session_of(answer)


@pytest.mark.parametrize("provider", ID_TOKEN_SHAPES)
async def test_a_sign_in_through_an_old_provider_login_may_not_export_or_delete(
    signin: SignIn, provider: str
) -> None:
    logged_in = int(signin.clock.timestamp()) - MONTH
    signin.idp[provider].login_at = logged_in
    token = session_of(await signin.complete(provider, user=ADA, intent="register"))
    # The session says what the provider said, not when the callback ran.
    assert claims_of(token)["auth_time"] == logged_in
    await assert_step_up_required(signin, token)
    assert (await signin.client.get("/v1/account", headers=bearer(token))).status == 200


@pytest.mark.parametrize("provider", ID_TOKEN_SHAPES)
async def test_a_sign_in_through_a_fresh_provider_login_may_export(
    signin: SignIn, provider: str
) -> None:
    token = session_of(await signin.complete(provider, user=ADA, intent="register"))
    assert abs(claims_of(token)["auth_time"] - signin.clock.timestamp()) < 5
    assert (await export(signin, token)).status == 200


async def test_a_plain_facebook_sign_in_proves_no_login_time(signin: SignIn) -> None:
    # The Graph-style profile answer says nothing of when the user logged in at facebook.
    token = session_of(await signin.complete("facebook", user=ADA, intent="register"))
    assert claims_of(token)["auth_time"] == 0
    # Linking needs a signed proof, which a facebook-only account can never give.
    linking = await signin.start("google", bearer=token, intent="link")
    assert linking.status == 401


async def test_an_account_that_cannot_prove_a_login_exports_and_deletes_after_a_sign_in(
    signin: SignIn,
) -> None:
    """No passkey, no provider that signs auth_time: the sign-in itself, completed within
    the window, is the most recent evidence such an account can give; older, the export and
    the deletion ask for a new sign-in, which restores them."""
    token = session_of(await signin.complete("facebook", user=ADA, intent="register"))
    assert (await export(signin, token)).status == 200
    signin.clock.advance(601)
    await assert_step_up_required(signin, token)
    again = session_of(await signin.complete("facebook", user=ADA, intent="login"))
    assert (await export(signin, again)).status == 200
    assert (await signin.client.delete("/v1/account", headers=bearer(again))).status == 204
    assert (await signin.client.get("/v1/account", headers=bearer(again))).status == 401


async def test_an_account_that_can_prove_a_login_must_prove_it(signin: SignIn) -> None:
    # google signs auth_time (here it did not, this once): the step-up goes through it.
    signin.idp.google.send_auth_time = False
    token = session_of(await signin.complete("google", user=ADA, intent="register"))
    await assert_step_up_required(signin, token)


async def test_an_id_token_without_auth_time_proves_no_login_time(signin: SignIn) -> None:
    signin.idp.google.send_auth_time = False  # e.g. Google without its session age claims
    token = session_of(await signin.complete("google", user=ADA, intent="register"))
    assert claims_of(token)["auth_time"] == 0
    await assert_step_up_required(signin, token)


@pytest.mark.parametrize(
    ("provider", "forcing"),
    [
        ("google", ("prompt=login", "max_age=0")),
        ("apple", ("prompt=login", "max_age=0")),
    ],
)
async def test_re_authentication_gives_a_fresh_session_for_every_shape(
    signin: SignIn, provider: str, forcing: tuple[str, ...]
) -> None:
    fake = signin.idp[provider]
    fake.login_at = signin.clock.timestamp() - MONTH
    stale = session_of(await signin.complete(provider, user=ADA, intent="register"))
    await assert_step_up_required(signin, stale)

    asked_at = signin.clock.timestamp()
    url, fresh = await reauthenticate(signin, provider, stale)
    assert all(parameter in url for parameter in forcing), url
    assert fake.forced_logins == 1  # the provider asked for the password again
    assert claims_of(fresh)["sub"] == claims_of(stale)["sub"]
    assert claims_of(fresh)["auth_time"] >= int(asked_at) - 1
    assert (await export(signin, fresh)).status == 200
    assert (await signin.client.delete("/v1/account", headers=bearer(fresh))).status == 204


async def test_a_forced_login_without_auth_time_proves_nothing(signin: SignIn) -> None:
    # The request asked for prompt=login and max_age=0, but the browser carries those: only
    # the provider's signed auth_time could prove that it asked again, and it gave none.
    signin.idp.google.send_auth_time = False
    stale = session_of(await signin.complete("google", user=ADA, intent="register"))
    await assert_step_up_required(signin, stale)
    details, binding = await signin.begin("google", bearer=stale, intent="reauthenticate")
    assert "prompt=login" in details["authorizationUrl"]
    back = await signin.idp.authorize(details["authorizationUrl"], user=ADA)
    answer = await signin.callback("google", back.params, binding=binding, method=back.method)
    assert "reason=stale_provider_authentication" in answer.headers["Location"]
    assert "session" not in answer.cookies
    await assert_step_up_required(signin, stale)


async def test_a_stripped_re_authentication_request_proves_nothing(signin: SignIn) -> None:
    # Whoever holds the browser deletes prompt and max_age: the provider answers from its own
    # session, as its auth_time says, and the step-up fails.
    signin.idp.google.login_at = int(signin.clock.timestamp()) - MONTH
    stale = session_of(await signin.complete("google", user=ADA, intent="register"))
    details, binding = await signin.begin("google", bearer=stale, intent="reauthenticate")
    url = details["authorizationUrl"]
    stripped = "&".join(
        part for part in url.split("&") if not part.startswith(("prompt=", "max_age="))
    )
    assert stripped != url
    back = await signin.idp.authorize(stripped, user=ADA)
    answer = await signin.callback("google", back.params, binding=binding, method=back.method)
    assert "reason=stale_provider_authentication" in answer.headers["Location"]
    assert signin.idp.google.forced_logins == 0
    await assert_step_up_required(signin, stale)


async def test_a_provider_that_signs_no_time_cannot_re_authenticate(signin: SignIn) -> None:
    stale = session_of(await signin.complete("facebook", user=ADA, intent="register"))
    answer = await signin.start("facebook", bearer=stale, intent="reauthenticate")
    assert answer.status == 400
    body = await answer.json()
    assert body["error"] == "invalid_request"
    assert "cannot prove a recent sign-in" in body["message"]
    assert "passkey" in body["message"]


@pytest.mark.parametrize("provider", ID_TOKEN_SHAPES)
async def test_every_openid_sign_in_asks_for_auth_time(signin: SignIn, provider: str) -> None:
    # max_age makes auth_time a required claim (OIDC Core 3.1.2.1); a year never forces a
    # login the provider would not have asked for.
    details, _ = await signin.begin(provider)
    assert "max_age=31536000" in details["authorizationUrl"]
    assert "prompt=" not in details["authorizationUrl"]
    details, _ = await signin.begin("facebook")
    assert "max_age" not in details["authorizationUrl"]


async def test_signing_up_with_a_fresh_login_then_linking_at_once_works(signin: SignIn) -> None:
    # A provider that states auth_time only when max_age asks for it: every sign-in asks.
    signin.idp.google.auth_time_only_when_asked = True
    token = session_of(await signin.complete("google", user=ADA, intent="register"))
    details, binding = await signin.begin("facebook", bearer=token, intent="link")
    back = await signin.idp.authorize(details["authorizationUrl"], user=ADA)
    answer = await signin.callback("facebook", back.params, binding=binding, method=back.method)
    assert "error" not in answer.headers["Location"], answer.headers["Location"]
    linked = await signin.client.get("/v1/account/providers", headers=bearer(token))
    names = {p["provider"] for p in (await linked.json())["providers"]}
    assert names == {"google", "facebook"}


async def test_signing_up_without_a_proven_login_cannot_link(signin: SignIn) -> None:
    token = session_of(await signin.complete("facebook", user=ADA, intent="register"))
    answer = await signin.start("google", bearer=token, intent="link")
    assert answer.status == 401
    assert (await answer.json())["error"] == "reauthentication_required"


async def test_a_re_authentication_whose_provider_login_is_old_is_refused(
    signin: SignIn,
) -> None:
    stale = session_of(await signin.complete("google", user=ADA, intent="register"))
    signin.clock.advance(3600)
    # A provider that did not ask again: its auth_time is before the request.
    signin.idp.google.claim_overrides = {"auth_time": int(signin.clock.timestamp()) - MONTH}
    details, binding = await signin.begin("google", bearer=stale, intent="reauthenticate")
    back = await signin.idp.authorize(details["authorizationUrl"], user=ADA)
    answer = await signin.callback("google", back.params, binding=binding, method=back.method)
    location = answer.headers["Location"]
    assert "error=authentication_failed" in location
    assert "reason=stale_provider_authentication" in location
    assert "session" not in answer.cookies


async def test_sliding_renewal_keeps_the_providers_auth_time(signin: SignIn) -> None:
    logged_in = int(signin.clock.timestamp()) - MONTH
    signin.idp.google.login_at = logged_in
    token = session_of(await signin.complete("google", user=ADA, intent="register"))
    signin.clock.advance(13 * 3600)  # past half of the 24-hour lifetime: renewed when used
    used = await signin.client.get("/v1/account", headers={"Cookie": f"session={token}"})
    assert used.status == 200
    renewed = used.cookies["session"].value
    assert renewed != token
    assert claims_of(renewed)["sid"] == claims_of(token)["sid"]
    assert claims_of(renewed)["auth_time"] == logged_in
    await assert_step_up_required(signin, renewed)
