"""The use-case services, wired on the resources: :class:`Services`, :func:`build_services`.

Second of the composition root's three modules: :mod:`~authgate.entrypoints.resources` opens
what the services use (repositories, providers' adapters, session tokens, the clock, metrics),
this module turns the configuration into the services' policies and builds each service once,
and :mod:`~authgate.entrypoints.assembly` puts the HTTP operations in front of them. The
provider event receivers are set up here too: their routes follow from the configuration alone
(:func:`receiver_routes`), their verifiers from the providers' adapters.
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING, TypeVar

import attrs

from authgate.adapters.provider import OAuthIdentityProvider
from authgate.domain.openid.clients import ClientRegistry
from authgate.entrypoints.config import (
    Config,
    LogoutTokensConfig,
    ProviderTokensConfig,
    backchannel_logout_path_of,
    callback_urls_of,
    notifications_path_of,
    openid_issuer,
    passkey_origins,
    passkey_rp_id,
)
from authgate.entrypoints.resources import Resources
from authgate.ports.provider import IdentityProvider
from authgate.services.account import AccountService
from authgate.services.outbox import OutboxPolicy
from authgate.services.provider_tokens import (
    ProviderTokenService,
    RevocationPolicy,
    RevocationWorker,
)
from authgate.services.sessions import SessionPolicy, SessionService
from authgate.services.signin import SignInPolicy, SignInService

# The provider events' modules are imported only when a receiver is configured.
if TYPE_CHECKING:
    from authgate.entrypoints.http.provider_events import ReceiverRoute
    from authgate.ports.jose import TokenSigner
    from authgate.services.openid.access import TokenAccess
    from authgate.services.openid.apps import AccountApps
    from authgate.services.openid.authorization import AuthorizationService
    from authgate.services.openid.backchannel_logout import BackchannelLogout
    from authgate.services.openid.client_authentication import ClientAuthentication
    from authgate.services.openid.end_session import RpInitiatedLogout
    from authgate.services.openid.grants import TokenService
    from authgate.services.passkeys import PasskeyService
    from authgate.services.provider_events import ProviderEventService, Receiver


@attrs.frozen
class Services:
    """The use-case services, built once on the resources."""

    signin: SignInService
    sessions: SessionService
    account: AccountService
    provider_events: ProviderEventService | None  # None: no event receiver is configured
    provider_tokens: ProviderTokenService
    revocation_worker: RevocationWorker
    openid: OpenIdServices | None = None  # None: no client is registered
    openid_resource: OpenIdResourceServices | None = None  # with openid
    passkeys: PasskeyService | None = None  # None: passkeys.enabled is false


@attrs.frozen
class OpenIdServices:
    """authgate as the OpenID Provider of the registered clients: who they are, how their
    requests authenticate, the signer of the tokens they receive, and logout both ways (what
    ends with a session, and the end-session endpoint's decisions)."""

    clients: ClientRegistry
    signer: TokenSigner
    client_auth: ClientAuthentication
    # The code flow: the authorization endpoint's decisions and the token endpoint's grants.
    authorization: AuthorizationService
    tokens: TokenService
    # Logout both ways: the back-channel fan-out when a session ends, RP-initiated logout.
    logout: BackchannelLogout
    end_session: RpInitiatedLogout


def _openid(config: Config, resources: Resources) -> OpenIdServices | None:
    opened = resources.openid
    if opened is None:
        return None
    # The provider face's modules are imported only when clients are registered.
    from authgate.services.openid.authorization import AuthorizationService
    from authgate.services.openid.backchannel_logout import (
        BackchannelLogout,
        LogoutPolicy,
        LogoutTokenWorker,
    )
    from authgate.services.openid.client_authentication import ClientAuthentication
    from authgate.services.openid.end_session import RpInitiatedLogout
    from authgate.services.openid.grants import TokenService

    issuer = opened.signer.issuer
    client_auth = ClientAuthentication(
        opened.clients,
        opened.client_keys,
        resources.units,
        resources.clock,
        # An assertion's one audience is the issuer (private_key_jwt, RFC 7523).
        issuer=issuer,
    )
    authorization = AuthorizationService(
        clients=opened.clients, signer=opened.signer, units=resources.units, clock=resources.clock
    )
    tokens = TokenService(signer=opened.signer, units=resources.units, clock=resources.clock)
    logout = BackchannelLogout(
        LogoutTokenWorker(
            clients=opened.clients,
            units=resources.units,
            signer=opened.signer,
            sender=opened.logout_sender,
            clock=resources.clock,
            policy=_outbox_policy(LogoutPolicy, config.logout_tokens),
        )
    )
    end_session = RpInitiatedLogout(opened.clients, opened.signer)
    return OpenIdServices(
        opened.clients, opened.signer, client_auth, authorization, tokens, logout, end_session
    )


@attrs.frozen
class OpenIdResourceServices:
    """Around the tokens the provider issued: whether one is active (userinfo, introspection,
    revocation), and the person's applications (their grants)."""

    access: TokenAccess
    apps: AccountApps


def _openid_resource(
    resources: Resources, sessions: SessionService, openid: OpenIdServices | None
) -> OpenIdResourceServices | None:
    """Built with the provider face (None without it), on the sessions' own check."""
    if openid is None:
        return None
    from authgate.services.openid.access import TokenAccess
    from authgate.services.openid.apps import AccountApps

    access = TokenAccess(
        signer=openid.signer,
        clients=openid.clients,
        sessions=sessions,
        units=resources.units,
        clock=resources.clock,
    )
    apps = AccountApps(clients=openid.clients, units=resources.units, sessions=sessions)
    return OpenIdResourceServices(access, apps)


def build_services(config: Config, resources: Resources) -> Services:
    """One service per concept (sign-in, sessions, the account, provider tokens), wired on
    ``resources``. The revocation worker is built, not started
    (:func:`~authgate.entrypoints.assembly.create_app` starts it with the application)."""
    provider_tokens, worker = _provider_tokens(config, resources)
    sessions = _sessions(config, resources)
    signin = _signin(config, resources, sessions, provider_tokens)
    account = AccountService(
        accounts=resources.accounts,
        events=resources.events,
        units=resources.units,
        sessions=sessions,
        providers=list(resources.providers),
        provider_tokens=provider_tokens,
    )
    provider_events = _provider_events(config, resources, sessions, account)
    openid = _openid(config, resources)
    if openid is not None:
        sessions.endings = openid.logout  # every session's end tells its clients
    return Services(
        signin,
        sessions,
        account,
        provider_events,
        provider_tokens,
        worker,
        openid,
        openid_resource=_openid_resource(resources, sessions, openid),
        passkeys=_passkeys(config, resources, sessions, signin),
    )


def _passkeys(
    config: Config, resources: Resources, sessions: SessionService, signin: SignInService
) -> PasskeyService | None:
    """Passkeys as ``passkeys`` configures them (None when not enabled)."""
    if not config.passkeys.enabled or resources.passkeys is None:
        return None
    from authgate.adapters.webauthn import Fido2RelyingParty
    from authgate.domain.passkeys import CHALLENGE_LIFETIME
    from authgate.services.passkeys import PasskeyPolicy, PasskeyService

    section = config.passkeys
    return PasskeyService(
        passkeys=resources.passkeys,
        challenges=resources.passkey_challenges,
        accounts=resources.accounts,
        events=resources.events,
        units=resources.units,
        sessions=sessions,
        clock=resources.clock,
        relying_party=Fido2RelyingParty(
            rp_id=passkey_rp_id(config),
            rp_name=section.rp_name,
            origins=frozenset(passkey_origins(config)),
        ),
        policy=PasskeyPolicy(
            registration_timeout=min(
                dt.timedelta(seconds=section.registration_timeout_seconds), CHALLENGE_LIFETIME
            ),
            authentication_timeout=min(
                dt.timedelta(seconds=section.authentication_timeout_seconds), CHALLENGE_LIFETIME
            ),
        ),
        signin=signin.policy,
        metrics=resources.metrics,
    )


def _provider_tokens(
    config: Config, resources: Resources
) -> tuple[ProviderTokenService, RevocationWorker]:
    """The providers' tokens, kept sealed, and the worker that revokes them through the
    outbox (``provider_tokens``)."""
    provider_tokens = ProviderTokenService(resources.sealer)
    worker = RevocationWorker(
        outbox=resources.revocation_outbox,
        units=resources.units,
        sealer=resources.sealer,
        revokers=resources.revokers,
        clock=resources.clock,
        policy=_outbox_policy(RevocationPolicy, config.provider_tokens),
    )
    provider_tokens.worker = worker
    return provider_tokens, worker


_Policy = TypeVar("_Policy", bound=OutboxPolicy)


def _outbox_policy(
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


def _sessions(config: Config, resources: Resources) -> SessionService:
    """Sessions as ``session`` configures them (lifetimes, sliding, the revocation cache)."""
    session = config.session
    return SessionService(
        tokens=resources.sessions,
        records=resources.session_records,
        units=resources.units,
        channel=resources.revocations,
        clock=resources.clock,
        policy=SessionPolicy(
            ttl=dt.timedelta(seconds=session.ttl_seconds),
            absolute_max=dt.timedelta(seconds=session.absolute_max_seconds),
            reauthenticate_after=dt.timedelta(seconds=session.reauthenticate_after_seconds),
            live_cache=dt.timedelta(seconds=session.revocation_cache_seconds),
            sliding=session.sliding,
            proving_providers=frozenset(
                name for name, provider in resources.providers.items() if provider.proves_login_time
            ),
        ),
        metrics=resources.metrics,
    )


def _signin(
    config: Config,
    resources: Resources,
    sessions: SessionService,
    provider_tokens: ProviderTokenService,
) -> SignInService:
    """Sign-in with the configured providers, callback addresses and application pages."""
    return SignInService(
        providers=resources.providers,
        accounts=resources.accounts,
        states=resources.states,
        events=resources.events,
        units=resources.units,
        sessions=sessions,
        clock=resources.clock,
        policy=SignInPolicy(
            app_url=config.app.url,
            callback_urls={
                name: frozenset(callback_urls_of(config, name)) for name in resources.providers
            },
            state_ttl=dt.timedelta(seconds=config.state.ttl_seconds),
            require_binding=config.state.require_binding_cookie,
            login_path=config.app.login_path,
            onboarding_path=config.app.onboarding_path,
            dashboard_path=config.app.dashboard_path,
            resume_urls=_resume_urls(config),
        ),
        metrics=resources.metrics,
        provider_tokens=provider_tokens,
    )


def _resume_urls(config: Config) -> frozenset[str]:
    """Where a sign-in made for an application's authorization request may send the browser
    back: the request itself, on the issuer's authorization endpoint (none without clients)."""
    if not config.clients:
        return frozenset()
    from authgate.entrypoints.http.openid.discovery import AUTHORIZE_PATH

    return frozenset({openid_issuer(config) + AUTHORIZE_PATH})


def _provider_events(
    config: Config, resources: Resources, sessions: SessionService, account: AccountService
) -> ProviderEventService | None:
    """The provider events' service, when an event receiver is configured (None: none is)."""
    if not receiver_routes(config):
        return None
    # Provider events are off unless a receiver is configured: their modules only then.
    from authgate.services.provider_events import ProviderEventPolicy, ProviderEventService

    return ProviderEventService(
        receivers=_receivers(config, resources.providers),
        units=resources.units,
        events=resources.events,
        sessions=sessions,
        account=account,
        clock=resources.clock,
        policy=ProviderEventPolicy(
            delete_account_when_last_identity=(
                config.provider_events.delete_account_when_last_identity
            )
        ),
    )


def receiver_routes(config: Config) -> list[ReceiverRoute]:
    """Every enabled event receiver, from the configuration alone: back-channel logout where
    asked; notifications in the provider's shape (Apple's for an apple_client_secret_jwt
    provider, Security Event Tokens for any other)."""
    if not any(p.backchannel_logout or p.notifications for p in config.providers.values()):
        return []  # without importing the receivers' modules
    from authgate.entrypoints.http.provider_events import ReceiverRoute
    from authgate.services.provider_events import Shape

    routes = []
    for name, p in config.providers.items():
        if p.backchannel_logout:
            path = backchannel_logout_path_of(name, p)
            routes.append(ReceiverRoute(name, Shape.BACKCHANNEL_LOGOUT, path))
        if p.notifications:
            apple = p.token_endpoint_auth == "apple_client_secret_jwt"  # noqa: S105
            shape = Shape.APPLE if apple else Shape.RISC
            routes.append(ReceiverRoute(name, shape, notifications_path_of(name, p)))
    return routes


def _receivers(config: Config, providers: dict[str, IdentityProvider]) -> list[Receiver]:
    """The verifier of each route, on its provider adapter's key sets (none when the
    adapters are not open: the OpenAPI document is built without them)."""
    from authgate.services.provider_events import Receiver, Shape

    max_age = config.provider_events.max_age_seconds
    receivers = []
    for route in receiver_routes(config):
        adapter = providers.get(route.provider)
        if not isinstance(adapter, OAuthIdentityProvider):
            continue
        settings = config.providers[route.provider]
        audiences = settings.event_audiences
        if route.shape is Shape.BACKCHANNEL_LOGOUT:
            verifier = adapter.logout_token_verifier(max_age_seconds=max_age, audiences=audiences)
        elif route.shape is Shape.APPLE:
            verifier = adapter.apple_notification_verifier(
                max_age_seconds=max_age, audiences=audiences
            )
        else:
            verifier = adapter.security_event_verifier(
                max_age_seconds=max_age,
                configuration_url=settings.risc_configuration,
                audiences=audiences,
            )
        receivers.append(Receiver(route.provider, route.shape, verifier, adapter.event_issuers()))
    return receivers
