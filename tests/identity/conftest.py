"""Fixtures of the identity adapter's tests: the fake provider and adapters pointing at it."""

from __future__ import annotations

import secrets
from collections.abc import Callable
from typing import Any

import aiohttp
import attrs
import pytest

from authgate.adapters.provider import OAuthIdentityProvider
from authgate.domain.model import VerifiedIdentity
from authgate.domain.secrets import pkce_challenge
from tests.fakeidp import Callback, FakeIdP, FakeUser, SettableClock
from tests.fakeidp.fixtures import fake_idp, http_session, idp_clock  # noqa: F401

REDIRECT_URI = "http://127.0.0.1:8080/v1/auth/{name}/callback?x=1"

MakeAdapter = Callable[..., OAuthIdentityProvider]


@pytest.fixture
def make_adapter(
    fake_idp: FakeIdP,  # noqa: F811
    http_session: aiohttp.ClientSession,  # noqa: F811
    idp_clock: SettableClock,  # noqa: F811
) -> MakeAdapter:
    """``make_adapter("google", timeout_seconds=0.3)``: an adapter for a fake provider."""

    def make(name: str, **overrides: Any) -> OAuthIdentityProvider:
        return OAuthIdentityProvider(fake_idp.settings(name, **overrides), http_session, idp_clock)

    return make


@attrs.frozen
class Started:
    """A sign-in started at the adapter and carried through the fake's authorize step."""

    url: str
    callback: Callback
    redirect_uri: str
    verifier: str | None
    nonce: str | None


async def start(
    adapter: OAuthIdentityProvider,
    fake: FakeIdP,
    *,
    user: FakeUser | None = None,
    deny: bool = False,
) -> Started:
    """authorization_url → the fake's authorize (the browser step)."""
    verifier = secrets.token_urlsafe(48) if adapter.uses_pkce else None
    nonce = secrets.token_urlsafe(16) if adapter.uses_nonce else None
    redirect_uri = REDIRECT_URI.format(name=adapter.name)
    url = await adapter.authorization_url(
        state=secrets.token_urlsafe(16),
        redirect_uri=redirect_uri,
        code_challenge=pkce_challenge(verifier) if verifier else None,
        nonce=nonce,
    )
    callback = await fake.authorize(url, user=user, deny=deny)
    return Started(url, callback, redirect_uri, verifier, nonce)


async def sign_in(
    adapter: OAuthIdentityProvider,
    fake: FakeIdP,
    *,
    as_user: FakeUser | None = None,
    **exchange_overrides: Any,
) -> VerifiedIdentity:
    """The whole flow: url → authorize (signed in ``as_user``) → exchange
    (``exchange_overrides`` replace its arguments, ``user=`` included)."""
    started = await start(adapter, fake, user=as_user)
    assert started.callback.code is not None, started.callback
    arguments: dict[str, Any] = {
        "code": started.callback.code,
        "redirect_uri": started.redirect_uri,
        "code_verifier": started.verifier,
        "nonce": started.nonce,
        "user": started.callback.user,
    }
    arguments.update(exchange_overrides)
    return await adapter.exchange(**arguments)
