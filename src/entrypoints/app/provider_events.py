"""The provider events face (back-channel logout, Apple notifications, Security Event Tokens
pushed by the providers), imported only when a receiver is configured: its routes follow from
the configuration alone (:func:`receiver_routes`), its verifiers from the providers' adapters."""

from __future__ import annotations

from authgate.adapters.provider import OAuthIdentityProvider
from authgate.entrypoints.app.config import Config, receiver_paths
from authgate.entrypoints.app.shared import Edge, Shared
from authgate.entrypoints.app.signin import SignIn
from authgate.entrypoints.app.stores import Stores
from authgate.entrypoints.http.provider_events import ProviderEventOperations, ReceiverRoute
from authgate.entrypoints.rest import Api
from authgate.ports.provider import IdentityProvider
from authgate.services.provider_events import (
    ProviderEventPolicy,
    ProviderEventService,
    Receiver,
    Shape,
)


def receiver_routes(config: Config) -> list[ReceiverRoute]:
    """Every enabled event receiver: back-channel logout where asked; notifications in the
    provider's shape (Apple's for an apple_client_secret_jwt provider, Security Event Tokens
    for any other)."""
    routes = []
    for name, kind, path in receiver_paths(config):
        notified = Shape.APPLE if config.providers[name].is_apple else Shape.RISC
        shape = Shape.BACKCHANNEL_LOGOUT if kind == "backchannel_logout" else notified
        routes.append(ReceiverRoute(name, shape, path))
    return routes


def build(
    config: Config,
    stores: Stores,
    shared: Shared,
    providers: dict[str, IdentityProvider],
    signin: SignIn,
) -> ProviderEventService:
    """The provider events' service, on the sign-in face's sessions and account."""
    return ProviderEventService(
        receivers=_receivers(config, providers),
        units=stores.units,
        events=stores.events,
        sessions=signin.sessions,
        account=signin.account,
        clock=shared.clock,
        policy=ProviderEventPolicy(
            delete_account_when_last_identity=(
                config.provider_events.delete_account_when_last_identity
            )
        ),
    )


def mount(
    api: Api,
    config: Config,
    service: ProviderEventService,
    stores: Stores,
    shared: Shared,
    edge: Edge,
) -> None:
    """The receivers, per client address in a budget of their own."""
    ProviderEventOperations(
        service,
        receiver_routes(config),
        stores.limiter(config.ratelimit.provider_events, "authgate-events"),
        edge.client_address,
        shared.metrics,
    ).register(api)


def _receivers(config: Config, providers: dict[str, IdentityProvider]) -> list[Receiver]:
    """The verifier of each route, on its provider adapter's key sets (none when the
    adapters are not open: the OpenAPI document is built without them)."""
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
