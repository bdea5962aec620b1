"""The sign-in face, with the account and sessions: one adapter per configured provider, the
providers' tokens kept sealed and the worker that revokes them, sessions, sign-in and the
account; mounted as the sign-in, account and key-set operations."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import TypeVar

import aiohttp
import attrs

from authgate.adapters.provider import OAuthIdentityProvider, ProviderSettingsError
from authgate.entrypoints.app.config import (
    Config,
    LogoutTokensConfig,
    ProviderConfig,
    ProviderTokensConfig,
    StartupError,
    callback_urls_of,
    openid_issuer,
    provider_on,
)
from authgate.entrypoints.app.shared import Edge, Shared
from authgate.entrypoints.app.stores import Stores
from authgate.entrypoints.http.account import AccountOperations
from authgate.entrypoints.http.openid.jwks import JwksOperations
from authgate.entrypoints.http.signin import SignInOperations
from authgate.entrypoints.rest import Api
from authgate.ports.clock import Clock
from authgate.ports.metrics import Metrics
from authgate.ports.provider import IdentityProvider
from authgate.services.account import AccountService
from authgate.services.outbox import OutboxPolicy
from authgate.services.provider_tokens import (
    ProviderTokenService,
    RevocationPolicy,
    RevocationWorker,
)
from authgate.services.sessions import SessionEndings, SessionPolicy, SessionService
from authgate.services.signin import SignInPolicy, SignInService


@attrs.frozen
class SignIn:
    """The sign-in face's services, built once."""

    signin: SignInService
    sessions: SessionService
    account: AccountService
    provider_tokens: ProviderTokenService
    revocation_worker: RevocationWorker


def open_providers(
    config: Config, http: aiohttp.ClientSession, clock: Clock, metrics: Metrics | None = None
) -> dict[str, IdentityProvider]:
    """One adapter per configured provider, in configuration order (its Apple key read from
    ``private_key_file``); :class:`StartupError` for one that cannot be set up."""
    providers: dict[str, IdentityProvider] = {}
    for name, settings in config.providers.items():
        try:
            providers[name] = OAuthIdentityProvider(_with_key(settings), http, clock, metrics)
        except ProviderSettingsError as e:
            raise StartupError(f"providers.{name}: {e}") from None
    return providers


def _with_key(settings: ProviderConfig) -> ProviderConfig:
    """The settings with the key ``private_key_file`` names, read now (the development Apple
    key is made after the configuration was read)."""
    if settings.private_key_file is None or settings.private_key_pem is not None:
        return settings
    try:
        pem = Path(settings.private_key_file).read_text()
    except OSError as e:
        raise StartupError(
            f"providers.{settings.name}.private_key_file: cannot read "
            f"{settings.private_key_file}: {e.strerror or e}"
        ) from None
    return attrs.evolve(settings, private_key_pem=pem)


def build(
    config: Config,
    stores: Stores,
    shared: Shared,
    providers: dict[str, IdentityProvider],
    endings: SessionEndings | None,
) -> SignIn:
    """Sessions as ``session`` configures them (their ends tell ``endings``), sign-in, the
    account and the providers' tokens with their revocation worker (built, not started: the
    application starts it)."""
    worker = RevocationWorker(
        outbox=stores.revocation_outbox,
        units=stores.units,
        sealer=shared.sealer,
        revokers={n: p for n, p in providers.items() if isinstance(p, OAuthIdentityProvider)},
        clock=shared.clock,
        policy=outbox_policy(RevocationPolicy, config.provider_tokens),
    )
    provider_tokens = ProviderTokenService(shared.sealer, worker)
    session = config.session
    sessions = SessionService(
        tokens=shared.session_tokens,
        records=stores.session_records,
        units=stores.units,
        channel=stores.revocations,
        clock=shared.clock,
        policy=SessionPolicy(
            ttl=dt.timedelta(seconds=session.ttl_seconds),
            absolute_max=dt.timedelta(seconds=session.absolute_max_seconds),
            reauthenticate_after=dt.timedelta(seconds=session.reauthenticate_after_seconds),
            live_cache=dt.timedelta(seconds=session.revocation_cache_seconds),
            sliding=session.sliding,
            proving_providers=proving(providers),
        ),
        metrics=shared.metrics,
        endings=endings,
    )
    signin = SignInService(
        providers=providers,
        accounts=stores.accounts,
        states=stores.states,
        events=stores.events,
        units=stores.units,
        sessions=sessions,
        clock=shared.clock,
        policy=_signin_policy(config, providers),
        metrics=shared.metrics,
        provider_tokens=provider_tokens,
    )
    account = AccountService(
        accounts=stores.accounts,
        events=stores.events,
        units=stores.units,
        sessions=sessions,
        providers=list(providers),
        provider_tokens=provider_tokens,
    )
    return SignIn(signin, sessions, account, provider_tokens, worker)


def mount(
    api: Api, config: Config, face: SignIn, stores: Stores, shared: Shared, edge: Edge
) -> None:
    """Sign-in (its initiation and callback, each behind its own limit: a started sign-in
    does not spend the callback's budget), the account and the key set."""
    SignInOperations(
        face.signin,
        edge.manage,
        face.sessions,
        stores.limiter(config.ratelimit.callback, "authgate-callback"),
        edge.client_address,
        stores.limiter(config.ratelimit.initiation, "authgate-initiation"),
        edge.guard,
        edge.cors,
    ).register(api)
    AccountOperations(
        edge.bearer, edge.cookie, edge.guard, edge.client_address, edge.cors, service=face.account
    ).register(api)
    JwksOperations(shared.session_tokens).register(api)


def proving(providers: dict[str, IdentityProvider]) -> frozenset[str]:
    """The providers whose sign-ins prove when the person logged in."""
    return frozenset(name for name, p in providers.items() if p.proves_login_time)


def _signin_policy(config: Config, providers: dict[str, IdentityProvider]) -> SignInPolicy:
    """Sign-in with the configured providers, callback addresses and application pages."""
    return SignInPolicy(
        app_url=config.app.url,
        callback_urls={name: frozenset(callback_urls_of(config, name)) for name in providers},
        state_ttl=dt.timedelta(seconds=config.state.ttl_seconds),
        require_binding=config.state.require_binding_cookie,
        login_path=config.app.login_path,
        onboarding_path=config.app.onboarding_path,
        dashboard_path=config.app.dashboard_path,
        resume_urls=_resume_urls(config),
    )


def _resume_urls(config: Config) -> frozenset[str]:
    """Where a sign-in made for an application's authorization request may send the browser
    back: the request itself, on the issuer's authorization endpoint, or the device
    verification page (none without clients)."""
    if not provider_on(config):
        return frozenset()
    from authgate.entrypoints.http.openid.device import DEVICE_PATH  # only with clients
    from authgate.entrypoints.http.openid.discovery import AUTHORIZE_PATH

    issuer = openid_issuer(config)
    # The device verification page resumes the same way (the code the person typed).
    return frozenset({issuer + AUTHORIZE_PATH, issuer + DEVICE_PATH})


_Policy = TypeVar("_Policy", bound=OutboxPolicy)


def outbox_policy(
    policy: type[_Policy], section: ProviderTokensConfig | LogoutTokensConfig
) -> _Policy:
    """An outbox worker's rules from its configuration section (the same five keys)."""
    return policy(
        retry_initial=dt.timedelta(seconds=section.retry_initial_seconds),
        retry_max=dt.timedelta(seconds=section.retry_max_seconds),
        give_up_after=dt.timedelta(seconds=section.give_up_after_seconds),
        lease=dt.timedelta(seconds=section.lease_seconds),
        poll_seconds=section.poll_seconds,
    )
