"""The services wired as the composition root wires them, on the memory adapters, with a clock
that stands still and in-process providers: every test drives the services' public methods
and reads the outcome through them and the memory stores, without HTTP.

Each building block is a fixture, so a test (or a change of a service's constructor) adapts
one place; a test that needs another setting overrides the fixture of that setting (say,
``@pytest.mark.parametrize("state_capacity", [1])``).
"""

from __future__ import annotations

import datetime as dt
import itertools
import json
import secrets
from collections.abc import Mapping
from typing import Any

import attrs
import pytest
from joserfc.jwk import KeySet

from authgate.adapters.jose import JweTokenSealer, JwtSessionTokens, SealingKey, ephemeral_keys
from authgate.adapters.memory import MemoryStates
from authgate.adapters.revocations import LocalRevocations
from authgate.domain.model import (
    Authorization,
    Caller,
    ClientInfo,
    Intent,
    SignedIn,
    VerifiedIdentity,
)
from authgate.domain.provider_events import BACKCHANNEL_LOGOUT, OAUTH_EVENT_TYPE, RISC_EVENT_TYPE
from authgate.services.account import AccountService
from authgate.services.provider_events import (
    ProviderEventPolicy,
    ProviderEventService,
    Received,
    Receiver,
    Shape,
)
from authgate.services.provider_tokens import (
    ProviderTokenService,
    RevocationPolicy,
    RevocationWorker,
)
from authgate.services.sessions import SessionPolicy, SessionService
from authgate.services.signin import SignInPolicy, SignInService
from tests.services.fakes import FakeEventVerifier, FakeProvider, FakeRevoker, FixedClock
from tests.support.records import verified
from tests.support.stores import MemoryStore

APP_URL = "https://app.example.com"
CLIENT = ClientInfo("198.51.100.7", "pytest-services")
BINDING = "binding-cookie-value-of-the-browser-000000"
PROVIDERS = ("google", "apple", "facebook")
REVOKING = ("google", "apple")  # the providers with a revocation endpoint

_jti = itertools.count(1)


def callback_url(provider: str) -> str:
    return f"https://auth.example.com/v1/auth/{provider}/callback"


# -- the adapters -----------------------------------------------------------------------------


@pytest.fixture
def clock() -> FixedClock:
    return FixedClock()


@pytest.fixture
def state_capacity() -> int:
    return 1000


@pytest.fixture
def store(state_capacity: int) -> MemoryStore:
    """Every memory adapter, one unit of work over them (``store.units``)."""
    memory = MemoryStore()
    memory.states = MemoryStates(state_capacity)
    return memory


@pytest.fixture
def providers(clock: FixedClock) -> dict[str, FakeProvider]:
    return {
        "google": FakeProvider("google", clock),
        "apple": FakeProvider("apple", clock),
        "facebook": FakeProvider("facebook", clock, uses_nonce=False),
    }


@pytest.fixture
def revokers() -> dict[str, FakeRevoker]:
    return {name: FakeRevoker(name) for name in REVOKING}


@pytest.fixture
def sealer() -> JweTokenSealer | None:
    return JweTokenSealer([SealingKey.from_text("k1", secrets.token_urlsafe(32))])


@pytest.fixture
def channel() -> LocalRevocations:
    return LocalRevocations()


@pytest.fixture(scope="session")
def session_keys() -> KeySet:
    return ephemeral_keys()


# -- the policies (the configuration's settings) ----------------------------------------------


@pytest.fixture
def sliding() -> bool:
    return True


@pytest.fixture
def session_policy(sliding: bool) -> SessionPolicy:
    return SessionPolicy(
        ttl=dt.timedelta(hours=1),
        absolute_max=dt.timedelta(hours=3),
        reauthenticate_after=dt.timedelta(minutes=10),
        live_cache=dt.timedelta(seconds=5),
        sliding=sliding,
    )


@pytest.fixture
def signin_policy() -> SignInPolicy:
    return SignInPolicy(
        app_url=APP_URL,
        callback_urls={name: frozenset({callback_url(name)}) for name in PROVIDERS},
        state_ttl=dt.timedelta(minutes=10),
        require_binding=True,
    )


@pytest.fixture
def revocation_policy() -> RevocationPolicy:
    return RevocationPolicy(
        retry_initial=dt.timedelta(seconds=10),
        retry_max=dt.timedelta(hours=1),
        give_up_after=dt.timedelta(days=1),
        lease=dt.timedelta(seconds=60),
        batch=20,
    )


@pytest.fixture
def event_policy() -> ProviderEventPolicy:
    return ProviderEventPolicy(delete_account_when_last_identity=True)


# -- the services, wired as the composition root wires them ----------------------------------


def session_service(
    store: MemoryStore,
    keys: KeySet,
    policy: SessionPolicy,
    channel: LocalRevocations,
    clock: FixedClock,
) -> SessionService:
    tokens = JwtSessionTokens(
        keys, issuer="https://auth.example.com", audience="app", ttl=policy.ttl
    )
    return SessionService(
        tokens=tokens,
        records=store.sessions,
        units=store.units,
        channel=channel,
        clock=clock,
        policy=policy,
    )


@pytest.fixture
def sessions(
    store: MemoryStore,
    session_keys: KeySet,
    session_policy: SessionPolicy,
    channel: LocalRevocations,
    clock: FixedClock,
) -> SessionService:
    return session_service(store, session_keys, session_policy, channel, clock)


@pytest.fixture
def other_instance_sessions(
    store: MemoryStore,
    session_keys: KeySet,
    session_policy: SessionPolicy,
    channel: LocalRevocations,
    clock: FixedClock,
) -> SessionService:
    """The session service of a second instance: the same store and revocation channel, its
    own cache of sessions found live."""
    return session_service(store, session_keys, session_policy, channel, clock)


@pytest.fixture
def worker(
    store: MemoryStore,
    sealer: JweTokenSealer | None,
    revokers: dict[str, FakeRevoker],
    clock: FixedClock,
    revocation_policy: RevocationPolicy,
) -> RevocationWorker:
    """Built, never started: a test runs its rounds (``run_once``) when it wants them."""
    return RevocationWorker(
        outbox=store.revocations,
        units=store.units,
        sealer=sealer,
        revokers=revokers,
        clock=clock,
        policy=revocation_policy,
    )


@pytest.fixture
def provider_tokens(
    sealer: JweTokenSealer | None, worker: RevocationWorker
) -> ProviderTokenService:
    service = ProviderTokenService(sealer)
    service.worker = worker
    return service


@pytest.fixture
def signin(
    store: MemoryStore,
    providers: dict[str, FakeProvider],
    sessions: SessionService,
    provider_tokens: ProviderTokenService,
    signin_policy: SignInPolicy,
    clock: FixedClock,
) -> SignInService:
    return SignInService(
        providers=providers,
        accounts=store.accounts,
        states=store.states,
        events=store.events,
        units=store.units,
        sessions=sessions,
        clock=clock,
        policy=signin_policy,
        provider_tokens=provider_tokens,
    )


@pytest.fixture
def account(
    store: MemoryStore,
    providers: dict[str, FakeProvider],
    sessions: SessionService,
    provider_tokens: ProviderTokenService,
) -> AccountService:
    return AccountService(
        accounts=store.accounts,
        events=store.events,
        units=store.units,
        sessions=sessions,
        providers=list(providers),
        provider_tokens=provider_tokens,
    )


@pytest.fixture
def event_verifiers(providers: dict[str, FakeProvider]) -> dict[str, FakeEventVerifier]:
    return {
        name: FakeEventVerifier(provider.issuer, provider.clock)
        for name, provider in providers.items()
    }


@pytest.fixture
def provider_events(
    store: MemoryStore,
    sessions: SessionService,
    account: AccountService,
    event_verifiers: dict[str, FakeEventVerifier],
    providers: dict[str, FakeProvider],
    event_policy: ProviderEventPolicy,
    clock: FixedClock,
) -> ProviderEventService:
    google = providers["google"]
    receivers = [
        Receiver("google", Shape.BACKCHANNEL_LOGOUT, event_verifiers["google"]),
        Receiver("google", Shape.RISC, event_verifiers["google"], (google.issuer + "/",)),
        Receiver("apple", Shape.APPLE, event_verifiers["apple"]),
    ]
    return ProviderEventService(
        receivers=receivers,
        units=store.units,
        events=store.events,
        sessions=sessions,
        account=account,
        clock=clock,
        policy=event_policy,
    )


# -- drivers: a browser's sign-ins and a provider's event deliveries --------------------------


@attrs.define
class SignIns:
    """Starts and completes sign-ins as one browser (:data:`BINDING`) would."""

    service: SignInService
    sessions: SessionService
    providers: Mapping[str, FakeProvider]

    async def start(
        self,
        provider: str = "google",
        *,
        intent: Intent = Intent.LOGIN,
        caller: Caller | None = None,
        state: str | None = None,
        return_to: str | None = None,
        binding: str = BINDING,
    ) -> Authorization:
        """A sign-in started at ``provider``'s configured callback address; ``caller`` is the
        signed-in user of a link or a re-authentication."""
        return await self.service.start(
            provider,
            redirect_uri=callback_url(provider),
            binding=binding,
            state=state,
            return_to=return_to,
            intent=intent,
            account_id=caller.account_id if caller is not None else None,
            session_id=caller.session_id if caller is not None else None,
        )

    async def complete(
        self,
        started: Authorization,
        identity: VerifiedIdentity | None = None,
        *,
        binding: str | None = BINDING,
        error: str | None = None,
        iss: str | None = None,
    ) -> SignedIn:
        """The provider's redirect back: a code for ``identity`` (or the provider's
        ``error``)."""
        provider = self.providers[started.provider]
        code = provider.code_for(identity) if identity is not None else None
        return await self.service.complete(
            started.provider,
            code=code,
            state=started.state,
            binding=binding,
            client=CLIENT,
            error=error,
            iss=iss,
        )

    async def sign_in(
        self,
        identity: VerifiedIdentity,
        *,
        intent: Intent = Intent.LOGIN,
        caller: Caller | None = None,
        return_to: str | None = None,
    ) -> SignedIn:
        started = await self.start(
            identity.identity.provider, intent=intent, caller=caller, return_to=return_to
        )
        return await self.complete(started, identity)

    async def register(self, subject: str, provider: str = "google", **kw: Any) -> SignedIn:
        return await self.sign_in(verified(provider, subject, **kw), intent=Intent.REGISTER)

    async def caller(self, signed_in: SignedIn) -> Caller:
        """The signed-in user of ``signed_in``'s session, as the HTTP layer reads it from the
        session token."""
        claims = await self.sessions.verify(signed_in.session.token)
        return Caller(
            account_id=claims.account_id,
            session_id=claims.session_id,
            provider=claims.provider or "",
            auth_time=claims.auth_time,
            client=CLIENT,
        )


@pytest.fixture
def flow(
    signin: SignInService, sessions: SessionService, providers: dict[str, FakeProvider]
) -> SignIns:
    return SignIns(signin, sessions, providers)


def new_jti() -> str:
    return f"jti-{next(_jti)}"


@attrs.define
class Deliveries:
    """A provider delivering its signed events (through :class:`FakeEventVerifier`)."""

    service: ProviderEventService
    verifiers: Mapping[str, FakeEventVerifier]

    async def send(self, provider: str, shape: Shape, claims: Mapping[str, Any]) -> Received:
        token = self.verifiers[provider].token_for(claims)
        return await self.service.receive(provider, shape, token, CLIENT)

    async def risc(
        self, kind: str, subject: str, *, reason: str | None = None, jti: str | None = None
    ) -> Received:
        """Google's security event ``kind`` (``sessions-revoked``...) about ``subject``."""
        payload: dict[str, Any] = {
            "subject": {
                "subject_type": "iss_sub",
                "iss": self.verifiers["google"].issuer,
                "sub": subject,
            }
        }
        if reason is not None:
            payload["reason"] = reason
        # the OAuth event types Google sends in that namespace, the others in RISC's
        namespace = (
            OAUTH_EVENT_TYPE if kind in ("tokens-revoked", "token-revoked") else (RISC_EVENT_TYPE)
        )
        claims = {"jti": jti or new_jti(), "events": {namespace + kind: payload}}
        return await self.send("google", Shape.RISC, claims)

    async def logout(
        self, *, sid: str | None = None, sub: str | None = None, jti: str | None = None
    ) -> Received:
        """Google's back-channel logout token for its session ``sid`` and/or user ``sub``."""
        claims: dict[str, Any] = {"jti": jti or new_jti(), "events": {BACKCHANNEL_LOGOUT: {}}}
        if sid is not None:
            claims["sid"] = sid
        if sub is not None:
            claims["sub"] = sub
        return await self.send("google", Shape.BACKCHANNEL_LOGOUT, claims)

    async def apple(self, kind: str, subject: str, *, jti: str | None = None) -> Received:
        """Apple's server-to-server notification ``kind`` (``consent-revoked``...)."""
        event = {"type": kind, "sub": subject, "event_time": 1_700_000_000}
        claims = {"jti": jti or new_jti(), "events": json.dumps(event)}
        return await self.send("apple", Shape.APPLE, claims)


@pytest.fixture
def deliver(
    provider_events: ProviderEventService, event_verifiers: dict[str, FakeEventVerifier]
) -> Deliveries:
    return Deliveries(provider_events, event_verifiers)
