"""The device grant with a client library nobody here wrote: Authlib's ``AsyncOAuth2Client``
(httpx) as the command-line tool or the television, over the service's real socket on the three
stores. Authlib has no helper for RFC 8628's first request, so the device asks for its codes
with Authlib's client authentication (``client_auth``: its HTTP Basic credentials, or its
client_id for a public client), then polls with Authlib's ``fetch_token`` and the device grant
type, which Authlib sends as any grant: ``authorization_pending`` reaches it as an
``OAuthError``, and once the person approved on the verification page, the tokens."""

from __future__ import annotations

import warnings

import pytest
from authlib.integrations.base_client import OAuthError

from tests.openid.harness import ISSUER

from .conftest import DEVICE_GRANT, TV_SECRET, Device

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # Authlib's notice of its move to httpx2 and joserfc
    from authlib.integrations.httpx_client import AsyncOAuth2Client


@pytest.fixture(autouse=True)
def plain_http(monkeypatch: pytest.MonkeyPatch) -> None:
    """The test server listens on loopback over http."""
    monkeypatch.setenv("AUTHLIB_INSECURE_TRANSPORT", "1")


def authlib_client(client_id: str) -> AsyncOAuth2Client:
    if client_id == "tv":
        return AsyncOAuth2Client(client_id, TV_SECRET)  # client_secret_basic
    return AsyncOAuth2Client(client_id, token_endpoint_auth_method="none")


@pytest.mark.parametrize(("client_id", "scope"), [("cli", "openid profile"), ("tv", "openid")])
async def test_authlib_gets_a_device_token_once_the_person_approves(
    device: Device, client_id: str, scope: str
) -> None:
    base = str(device.client.make_url("/"))[:-1]
    async with authlib_client(client_id) as authlib:
        form = {"scope": scope}  # Authlib adds a public client's client_id itself
        # The client's authentication as Authlib makes it for its token-endpoint requests.
        auth = authlib.client_auth(authlib.token_endpoint_auth_method)
        started = await authlib.post(f"{base}/oauth2/device_authorization", data=form, auth=auth)
        assert started.status_code == 200, started.text
        codes = started.json()
        assert codes["verification_uri"] == ISSUER + "/oauth2/device"

        async def poll() -> dict[str, str]:
            token: dict[str, str] = await authlib.fetch_token(
                f"{base}/oauth2/token",
                grant_type=DEVICE_GRANT,
                device_code=codes["device_code"],
            )
            return token

        with pytest.raises(OAuthError) as pending:
            await poll()
        assert pending.value.error == "authorization_pending"

        approved = await device.approve(codes["user_code"])
        assert approved.status == 200, await approved.text()
        device.clock.advance(codes["interval"])  # polls no faster than asked
        token = await poll()
        assert token["token_type"].lower() == "bearer"
        assert token["access_token"] and token["id_token"]
        assert token["scope"] == scope
        # The tokens are the device's own: userinfo answers for the person who approved.
        info = await authlib.get(f"{base}/oauth2/userinfo")
        assert info.status_code == 200, info.text
        assert info.json()["sub"]

        # A second redemption of the same device code is refused.
        with pytest.raises(OAuthError) as again:
            await poll()
        assert again.value.error == "invalid_grant"
