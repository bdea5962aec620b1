"""The OpenID Provider face (authgate as the provider of the registered clients), imported only
when clients are registered: the clients, the signer of their tokens (the service's key set,
its RSA key first), client authentication, the code flow, the tokens' resource endpoints, the
person's applications and logout both ways; mounted as discovery, authorize, token, userinfo,
introspection, revocation, end-session and the account's apps."""

from __future__ import annotations

import datetime as dt

import aiohttp
import attrs

from authgate.adapters.jose import JwtTokenSigner
from authgate.adapters.openid import HttpLogoutTokenSender, RegisteredClientKeys
from authgate.adapters.openid.metadata_documents import DocumentPolicy, MetadataDocuments
from authgate.domain.openid.registration import RegistrationPolicy
from authgate.domain.redirects import origin
from authgate.entrypoints.app.config import (
    Config,
    StartupError,
    callback_urls_of,
    client_registry,
    openid_issuer,
    passkey_origins,
    reserved_client_ids,
)
from authgate.entrypoints.app.shared import Edge, Shared
from authgate.entrypoints.app.signin import outbox_policy, proving
from authgate.entrypoints.app.stores import Closers, Stores
from authgate.entrypoints.http.openid.apps import AppOperations
from authgate.entrypoints.http.openid.authorize import AuthorizeOperations, SignInStart
from authgate.entrypoints.http.openid.cors import public_client_cors
from authgate.entrypoints.http.openid.device import DeviceLimits, DeviceOperations
from authgate.entrypoints.http.openid.discovery import (
    DiscoveryOperations,
    provider_metadata,
)
from authgate.entrypoints.http.openid.end_session import LogoutOperations
from authgate.entrypoints.http.openid.introspection import IntrospectionOperations
from authgate.entrypoints.http.openid.registration import RegistrationOperations
from authgate.entrypoints.http.openid.revocation import RevocationOperations
from authgate.entrypoints.http.openid.token import TokenLimits, TokenOperations
from authgate.entrypoints.http.openid.userinfo import UserInfoOperations
from authgate.entrypoints.rest import Api
from authgate.ports.openid import ClientSource
from authgate.ports.provider import IdentityProvider
from authgate.services.openid.access import TokenAccess
from authgate.services.openid.apps import AccountApps
from authgate.services.openid.authorization import AuthorizationService
from authgate.services.openid.backchannel_logout import (
    BackchannelLogout,
    LogoutPolicy,
    LogoutTokenWorker,
)
from authgate.services.openid.client_authentication import ClientAuthentication
from authgate.services.openid.client_directory import ClientDirectory
from authgate.services.openid.device import DeviceAuthorizationService, DevicePolicy
from authgate.services.openid.end_session import RpInitiatedLogout
from authgate.services.openid.grants import TokenService
from authgate.services.openid.registration import (
    ClientRegistration,
    StoredClientSource,
)
from authgate.services.sessions import SessionService


@attrs.frozen
class OpenIdParts:
    """What the provider's services stand on: the registered clients, the signer of their ID,
    access and logout tokens, the keys ``private_key_jwt`` clients sign their assertions
    with, and the clients' back-channel logout endpoints."""

    clients: ClientDirectory
    signer: JwtTokenSigner
    client_keys: RegisteredClientKeys
    logout_sender: HttpLogoutTokenSender
    # What dynamic registration allows (None: registration is off), and the client_ids no
    # stored client may take.
    registration_policy: RegistrationPolicy | None = None
    registration_open: bool = False
    reserved_client_ids: frozenset[str] = frozenset()

    def backchannel(self, config: Config, stores: Stores, shared: Shared) -> BackchannelLogout:
        """The back-channel fan-out when a session ends (built before the sessions it hears).
        A client described by a metadata document takes no back-channel logout, so the
        fan-out never looks such a client up: that could fetch its document inside the unit
        of work that ends the session."""
        sources = [s for s in self.clients.sources if not isinstance(s, MetadataDocuments)]
        return BackchannelLogout(
            LogoutTokenWorker(
                clients=ClientDirectory(self.clients.configured, sources),
                units=stores.units,
                signer=self.signer,
                sender=self.logout_sender,
                clock=shared.clock,
                policy=outbox_policy(LogoutPolicy, config.logout_tokens),
            )
        )

    def build(
        self,
        logout: BackchannelLogout,
        stores: Stores,
        shared: Shared,
        sessions: SessionService,
        config: Config,
    ) -> OpenId:
        """The provider's use cases on its parts, the stores and the sessions' own check."""
        signer, clients, units, clock = self.signer, self.clients, stores.units, shared.clock
        return OpenId(
            parts=self,
            # An assertion's one audience is the issuer (private_key_jwt, RFC 7523).
            client_auth=ClientAuthentication(
                clients, self.client_keys, units, clock, issuer=signer.issuer
            ),
            authorization=AuthorizationService(
                clients=clients, signer=signer, units=units, clock=clock
            ),
            tokens=TokenService(signer=signer, units=units, clock=clock),
            logout=logout,
            end_session=RpInitiatedLogout(clients, signer),
            access=TokenAccess(
                signer=signer, clients=clients, sessions=sessions, units=units, clock=clock
            ),
            apps=AccountApps(clients=clients, units=units, sessions=sessions),
            device=DeviceAuthorizationService(
                clients=clients, units=units, clock=clock, policy=_device_policy(config)
            ),
            registration=None
            if self.registration_policy is None
            else ClientRegistration(
                units=units,
                clock=clock,
                policy=self.registration_policy,
                open=self.registration_open,
                reserved=self.reserved_client_ids,
            ),
        )


@attrs.frozen
class OpenId:
    """authgate as the OpenID Provider of the registered clients, built once."""

    parts: OpenIdParts
    client_auth: ClientAuthentication
    authorization: AuthorizationService  # the authorization endpoint's decisions
    tokens: TokenService  # the token endpoint's grants
    logout: BackchannelLogout  # what ends with a session
    end_session: RpInitiatedLogout
    access: TokenAccess  # whether a token is active: userinfo, introspection, revocation
    apps: AccountApps  # the person's applications (their grants)
    device: DeviceAuthorizationService  # the device authorization grant (RFC 8628)
    registration: ClientRegistration | None = None  # RFC 7591/7592, when enabled

    def mount(
        self,
        api: Api,
        config: Config,
        stores: Stores,
        edge: Edge,
        sessions: SessionService,
        providers: dict[str, IdentityProvider],
    ) -> None:
        """Discovery, the code flow (authorize with its sign-in and consent pages, and token),
        logout, the tokens' resource endpoints and the apps, each limit in a namespace of its
        own. Only a confidential client that authenticated is counted by its client_id alone:
        anyone can name a public client, so its budget is counted by client and client
        address, and everything else by the client address, so that junk from one address
        never refuses another address's requests."""
        rates, clients, issuer = config.ratelimit, self.parts.clients, self.parts.signer.issuer
        documents = config.client_metadata_documents.enabled
        registering = config.registration.enabled
        metadata = provider_metadata(
            openid_issuer(config), metadata_documents=documents, registration=registering
        )
        DiscoveryOperations(metadata).register(api)
        if registering:
            assert self.registration is not None
            RegistrationOperations(
                self.registration,
                issuer,
                stores.limiter(rates.registration, "authgate-registration"),
                edge.client_address,
            ).register(api)
        sign_in = SignInStart(
            issuer, _callbacks(config, issuer, providers), proving=proving(providers)
        )
        # Only where a browser would run the ceremony: the page's origin (the issuer's) is one
        # of the passkey origins (and so under the RP ID).
        passkeys = config.passkeys.enabled and origin(issuer) in passkey_origins(config)
        AuthorizeOperations(
            self.authorization,
            sessions,
            edge.guard,
            sign_in,
            passkeys=passkeys,
            limiter=stores.limiter(rates.authorize, "authgate-authorize"),
            client_address=edge.client_address,
        ).register(api)
        cors = public_client_cors(clients.configured)
        TokenOperations(
            self.tokens,
            self.client_auth,
            TokenLimits(
                client=stores.limiter(rates.token, "authgate-token"),
                public_client=stores.limiter(rates.token, "authgate-token-public"),
                address=stores.limiter(rates.token_address, "authgate-token-address"),
                failures=stores.limiter(rates.token_failures, "authgate-token-failures"),
            ),
            edge.client_address,
            cors=cors,
        ).register(api)
        LogoutOperations(
            self.end_session,
            sessions,
            edge.client_address,
            edge.guard,
            stores.limiter(rates.logout, "authgate-logout"),
        ).register(api)
        UserInfoOperations(
            self.access,
            cors,
            stores.limiter(rates.userinfo, "authgate-userinfo"),
            edge.client_address,
        ).register(api)
        RevocationOperations(self.access, self.client_auth, cors).register(api)
        introspection_limiter = stores.limiter(rates.introspection, "authgate-introspection")
        IntrospectionOperations(self.access, self.client_auth, introspection_limiter).register(api)
        AppOperations(
            edge.bearer, edge.cookie, edge.guard, edge.client_address, edge.cors, service=self.apps
        ).register(api)
        DeviceOperations(
            self.device,
            self.client_auth,
            sessions,
            edge.guard,
            sign_in,
            DeviceLimits(
                requests=stores.limiter(rates.device, "authgate-device"),
                failures=stores.limiter(rates.device_failures, "authgate-device-failures"),
            ),
            edge.client_address,
            passkeys=passkeys,
        ).register(api)


def registration_policy(config: Config) -> RegistrationPolicy:
    """What a registrant may ask for (``registration``)."""
    r = config.registration
    return RegistrationPolicy(
        grant_types=frozenset(r.grant_types),
        scopes=frozenset(r.scopes),
        confidential_clients=r.confidential_clients,
        resources=frozenset(r.resources),
    )


def open_parts(
    config: Config, shared: Shared, stores: Stores, closers: Closers | None = None
) -> OpenIdParts:
    """The provider's parts on the shared key set and HTTP client (None: fetches nothing);
    with ``closers`` (an opened service), the client ID metadata documents' own HTTP client
    when they are enabled, its closer added there."""
    signer = JwtTokenSigner(shared.keys, issuer=openid_issuer(config))
    for client in config.clients.values():
        if client.id_token_signed_response_alg == "ES256" and not signer.supports("ES256"):  # noqa: S105
            raise StartupError(
                "clients: ES256 ID tokens need a P-256 session key; the key file's is Ed25519"
            )
    http: aiohttp.ClientSession | None = shared.http
    return OpenIdParts(
        # The stored clients (registered at run time, or added by the operator) after the
        # configured ones, always: the operator may add clients while registration is off.
        clients=ClientDirectory(
            client_registry(config),
            [StoredClientSource(stores.units), *_sources(config, shared, closers)],
        ),
        signer=signer,
        client_keys=RegisteredClientKeys(http, shared.clock),
        logout_sender=HttpLogoutTokenSender(
            http, timeout_seconds=config.logout_tokens.timeout_seconds
        ),
        registration_policy=registration_policy(config) if config.registration.enabled else None,
        registration_open=config.registration.policy == "open",
        reserved_client_ids=reserved_client_ids(config),
    )


def _device_policy(config: Config) -> DevicePolicy:
    """The device grant's lifetime and polling interval (``device:``)."""
    return DevicePolicy(
        lifetime=dt.timedelta(seconds=config.device.expires_in_seconds),
        interval=config.device.interval_seconds,
    )


def _sources(config: Config, shared: Shared, closers: Closers | None) -> list[ClientSource]:
    """The clients beyond the configuration's: those described by a metadata document, when
    enabled (and the service fetches at all)."""
    documents = config.client_metadata_documents
    if not documents.enabled or shared.http is None or closers is None:
        return []
    source = MetadataDocuments(
        DocumentPolicy(
            production=config.environment == "production",
            allowed_hosts=frozenset(documents.allowed_hosts),
            allow_any_host=documents.allow_any_host,
            max_bytes=documents.max_bytes,
            timeout_seconds=documents.timeout_seconds,
            min_cache_seconds=documents.min_cache_seconds,
            max_cache_seconds=documents.max_cache_seconds,
            failure_cache_seconds=documents.failure_cache_seconds,
            fetches_per_minute=documents.fetches_per_minute,
            total_fetches_per_minute=documents.total_fetches_per_minute,
            scopes=frozenset(documents.scopes),
            resources=frozenset(documents.resources),
        ),
        shared.clock,
    )
    closers.append(source.close)
    return [source]


def _callbacks(
    config: Config, issuer: str, providers: dict[str, IdentityProvider]
) -> dict[str, str]:
    """The callback URL the sign-in page starts each provider's sign-in with: the first on the
    issuer's origin, else its first."""
    callbacks = {}
    for name in providers or config.providers:
        urls = callback_urls_of(config, name)
        own = [u for u in urls if origin(u) == origin(issuer)]
        if urls:
            callbacks[name] = (own or urls)[0]
    return callbacks
