"""The identity adapter's hardening, end to end through the callback (issue points 2 and 14).

* a key rotation right after a key-set fetch is followed: a sign-in waits for the short floor
  between fetches rather than failing, and forged event tokens posted to the public receivers
  spend a fetch budget of their own, never the sign-ins';
* an ID token with several audiences is refused unless every audience other than the client
  id is configured in ``trusted_audiences`` (OIDC Core 3.1.3.7 step 3).
"""

from __future__ import annotations

import asyncio
import secrets
from urllib.parse import parse_qs, urlsplit

from aiohttp import ClientResponse

from tests.fakeidp import FakeIdP, FakeUser, SettableClock
from tests.fakeidp.events import logout_token
from tests.fakeidp.model import Tamper

from .conftest import APP_URL, CALLBACK_URL, PROVIDERS, MakeService, SignIn, events_config

LOGIN = f"{APP_URL}/login"
INVALID_ID_TOKEN = {"error": "authentication_failed", "reason": "invalid_id_token"}
BACKCHANNEL_PATH = "/v1/providers/google/backchannel-logout"


def login_error(response: ClientResponse) -> dict[str, str]:
    """The query of a redirect to the login page (asserting it is one)."""
    assert response.status == 302, response.status
    location = response.headers["Location"]
    assert location.startswith(LOGIN + "?"), location
    return {k: v[0] for k, v in parse_qs(urlsplit(location).query).items()}


def signed_in(response: ClientResponse) -> bool:
    return response.status == 302 and any(
        h.startswith("session=") for h in response.headers.getall("Set-Cookie", [])
    )


async def service_with(
    make_service: MakeService,
    fake_idp: FakeIdP,
    clock: SettableClock,
    google: dict[str, object] | None = None,
) -> SignIn:
    """The service with the fake's providers, google's entry extended by ``google``."""
    providers = {p: fake_idp.config(p) for p in PROVIDERS}
    providers["google"] = {**providers["google"], **(google or {})}
    client = await make_service(
        {
            "app": {
                "url": APP_URL,
                "callback_urls": [CALLBACK_URL.format(name=p) for p in PROVIDERS],
            },
            "providers": providers,
        },
        clock=clock,
    )
    return SignIn(client, fake_idp, clock)


# -- point 2: a key rotation is followed at once -----------------------------------------------


async def test_a_rotation_seconds_after_an_unknown_kid_is_followed(signin: SignIn) -> None:
    google = signin.idp.google
    assert signed_in(await signin.complete(user=FakeUser(sub="rot-0"), intent="register"))
    assert google.hits["jwks"] == 1

    # A token whose kid the provider does not publish: refused, after one on-demand fetch.
    signin.clock.advance(10)
    google.tamper = Tamper.UNKNOWN_KID
    response = await signin.complete(user=FakeUser(sub="rot-1"), intent="register")
    assert login_error(response) == INVALID_ID_TOKEN
    assert google.hits["jwks"] == 2
    google.tamper = None

    # The provider really rotates its keys a few seconds later: the next sign-in succeeds.
    signin.clock.advance(8)
    google.rotate_keys()
    assert signed_in(await signin.complete(user=FakeUser(sub="rot-2"), intent="register"))
    assert google.hits["jwks"] == 3


async def test_a_sign_in_right_after_a_rotation_within_the_floor_succeeds(
    signin: SignIn,
) -> None:
    google = signin.idp.google
    assert signed_in(await signin.complete(user=FakeUser(sub="floor-0"), intent="register"))
    google.rotate_keys()  # a moment after the key set was fetched
    # The sign-in waits for the floor between fetches (here the clock is moved while it
    # waits), then fetches the new key: it does not fail.
    signing_in = asyncio.create_task(
        signin.complete(user=FakeUser(sub="floor-1"), intent="register")
    )
    await asyncio.sleep(0.5)
    signin.clock.advance(5)
    assert signed_in(await signing_in)
    assert google.hits["jwks"] == 2


async def test_forged_event_tokens_cannot_fail_a_sign_in_after_a_rotation(
    make_service: MakeService, fake_idp: FakeIdP, idp_clock: SettableClock
) -> None:
    client = await make_service(
        events_config(fake_idp, "memory://", {"ratelimit": {"provider_events": "1000/minute"}}),
        clock=idp_clock,
    )
    signin = SignIn(client, fake_idp, idp_clock)
    google = fake_idp.google
    assert signed_in(await signin.complete(user=FakeUser(sub="flood-0"), intent="register"))
    idp_clock.advance(5)

    async def flood() -> set[int]:
        """Forged logout tokens, each with a kid of its own, posted to the public receiver."""
        statuses = set()
        for _ in range(40):
            token = logout_token(google, sub="flood-0", kid=f"forged-{secrets.token_hex(4)}")
            answer = await client.post(BACKCHANNEL_PATH, data={"logout_token": token})
            statuses.add(answer.status)
        return statuses

    assert await flood() <= {400, 503}
    assert google.hits["jwks"] == 2  # the sign-in's fetch, then one for the whole flood
    google.rotate_keys()
    # The flood spent the events' fetch budget, not the sign-ins': no wait, no failure.
    assert signed_in(await signin.complete(user=FakeUser(sub="flood-1"), intent="register"))
    assert google.hits["jwks"] == 3
    idp_clock.advance(5)
    assert await flood() <= {400, 503}
    assert google.hits["jwks"] == 4  # still one fetch per floor for the flood


async def test_an_id_token_whose_kid_a_fetch_made_for_it_did_not_find_is_refused(
    signin: SignIn,
) -> None:
    google = signin.idp.google
    assert signed_in(await signin.complete(user=FakeUser(sub="absent-0"), intent="register"))
    google.tamper = Tamper.UNKNOWN_KID
    google.forged_kid = "forged-kid-never-published"
    for _ in range(3):
        signin.clock.advance(5)  # past the floor each time
        response = await signin.complete(user=FakeUser(sub="absent-1"), intent="register")
        assert login_error(response) == INVALID_ID_TOKEN
    # Each token was looked for by a fetch of its own: an earlier fetch proves nothing about
    # a key the provider may have published since.
    assert google.hits["jwks"] == 4


# -- point 14: several audiences ----------------------------------------------------------------


async def test_an_untrusted_extra_audience_is_refused_even_with_azp(signin: SignIn) -> None:
    google = signin.idp.google
    google.claim_overrides = {"aud": [google.client_id, "untrusted-client"]}
    user = FakeUser(sub="aud-untrusted")
    response = await signin.complete(user=user, intent="register")
    assert login_error(response) == INVALID_ID_TOKEN
    google.claim_overrides = {}
    assert login_error(await signin.complete(user=user))["error"] == "account_not_found"


async def test_a_configured_trusted_audience_is_accepted(
    make_service: MakeService, fake_idp: FakeIdP, idp_clock: SettableClock
) -> None:
    signin = await service_with(
        make_service, fake_idp, idp_clock, {"trusted_audiences": ["partner-client"]}
    )
    google = fake_idp.google
    google.claim_overrides = {"aud": [google.client_id, "partner-client"]}
    assert signed_in(await signin.complete(user=FakeUser(sub="aud-ok"), intent="register"))
    # another audience beside the trusted one is still refused
    google.claim_overrides = {"aud": [google.client_id, "partner-client", "stranger"]}
    response = await signin.complete(user=FakeUser(sub="aud-stranger"), intent="register")
    assert login_error(response) == INVALID_ID_TOKEN
