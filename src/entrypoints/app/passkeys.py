"""The passkeys face (WebAuthn, a sign-in method beside the providers), imported only when
``passkeys.enabled``: the relying party, the ceremonies' rules and their operations."""

from __future__ import annotations

import datetime as dt

from authgate.adapters.webauthn import Fido2RelyingParty
from authgate.domain.passkeys import CHALLENGE_LIFETIME
from authgate.entrypoints.app.config import Config, passkey_origins, passkey_rp_id
from authgate.entrypoints.app.shared import Edge, Shared
from authgate.entrypoints.app.signin import SignIn
from authgate.entrypoints.app.stores import Stores
from authgate.entrypoints.http.passkeys import PasskeyOperations
from authgate.entrypoints.rest import Api
from authgate.ports.passkeys import PasskeyStore
from authgate.services.passkeys import PasskeyPolicy, PasskeyService


def build(
    config: Config, stores: Stores, passkeys: PasskeyStore, shared: Shared, signin: SignIn
) -> PasskeyService:
    """Passkeys as ``passkeys`` configures them, on the sign-in face's sessions and rules."""
    section = config.passkeys
    return PasskeyService(
        passkeys=passkeys,
        challenges=stores.passkey_challenges,
        accounts=stores.accounts,
        events=stores.events,
        units=stores.units,
        sessions=signin.sessions,
        clock=shared.clock,
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
        signin=signin.signin.policy,
        metrics=shared.metrics,
    )


def mount(api: Api, config: Config, service: PasskeyService, stores: Stores, edge: Edge) -> None:
    """The ceremonies, per client address in a budget of their own (a sign-in spends two)."""
    PasskeyOperations(
        edge.bearer,
        edge.cookie,
        edge.guard,
        edge.client_address,
        edge.cors,
        service=service,
        limiter=stores.limiter(config.ratelimit.passkeys, "authgate-passkeys"),
        binding_max_age=config.state.ttl_seconds,
    ).register(api)
