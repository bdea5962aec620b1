"""In-process stand-ins for the OpenID Provider's ports that leave the process or sign (the
token signer, the sender of logout tokens), the registered clients the tests use, and the
provider's services wired on them as the composition root wires them, over the memory unit of
work of ``tests/services/conftest.py``'s ``store``."""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import itertools
from collections.abc import Mapping
from typing import Any

import attrs

from authgate.domain.model import SignedIn
from authgate.domain.openid.authorization_request import (
    AuthorizationRequest,
    parse_authorization_request,
)
from authgate.domain.openid.clients import Client, ClientRegistry, IdTokenAlgorithm, SecretDigest
from authgate.domain.secrets import pkce_challenge
from authgate.ports.jose import InvalidToken, VerifiedIdToken
from authgate.ports.openid import LogoutDeliveryFailed
from authgate.ports.session_tokens import SessionClaims
from authgate.services.openid.access import TokenAccess
from authgate.services.openid.apps import AccountApps
from authgate.services.openid.authorization import (
    AuthorizationService,
    CodeIssued,
    ConsentNeeded,
)
from authgate.services.openid.backchannel_logout import (
    BackchannelLogout,
    LogoutPolicy,
    LogoutTokenWorker,
)
from authgate.services.openid.client_directory import ClientDirectory
from authgate.services.openid.end_session import RpInitiatedLogout
from authgate.services.openid.grants import TokenService
from authgate.services.openid.issuing import IssuedTokens
from authgate.services.sessions import SessionService
from tests.services.conftest import SignIns
from tests.services.fakes import FixedClock
from tests.support.stores import MemoryStore

ISSUER = "https://auth.example.com"
WEB = "web-app"  # needs consent, told of logouts, may return after logout
FIRST = "first-party"  # of the same party: no consent screen
SPA = "spa"  # a public client, never told of logouts
WEB_CALLBACK = "https://web.example.com/cb"
WEB_LOGOUT_URI = "https://web.example.com/backchannel"
WEB_AFTER_LOGOUT = "https://web.example.com/signed-out"
FIRST_CALLBACK = "https://first.example.com/cb"
SPA_CALLBACK = "https://spa.example.com/cb"
VERIFIER = "v" * 43 + "-verifier-of-the-test"
OTHER_VERIFIER = "w" * 43 + "-verifier-of-the-test"

_serial = itertools.count(1)


def clients(*extra: Client) -> ClientRegistry:
    """The registered clients: :data:`WEB`, :data:`FIRST`, :data:`SPA` and ``extra``."""
    return ClientRegistry(
        [
            Client(
                client_id=WEB,
                name="Web App",
                client_type="confidential",
                token_endpoint_auth_method="client_secret_basic",
                redirect_uris=(WEB_CALLBACK,),
                secrets=(SecretDigest.of("web-secret-0123456789-0123456789"),),
                backchannel_logout_uri=WEB_LOGOUT_URI,
                post_logout_redirect_uris=(WEB_AFTER_LOGOUT,),
                id_token_signed_response_alg="ES256",
            ),
            Client(
                client_id=FIRST,
                name="First Party",
                client_type="confidential",
                token_endpoint_auth_method="client_secret_basic",
                redirect_uris=(FIRST_CALLBACK,),
                secrets=(SecretDigest.of("first-secret-0123456789-01234567"),),
                first_party=True,
                access_token_lifetime=dt.timedelta(minutes=10),
                refresh_token_lifetime=dt.timedelta(days=7),
            ),
            Client(
                client_id=SPA,
                name="SPA",
                client_type="public",
                token_endpoint_auth_method="none",
                redirect_uris=(SPA_CALLBACK,),
            ),
            *extra,
        ]
    )


@attrs.frozen
class SignedIdToken:
    """An ID token :class:`FakeSigner` signed: its claims, algorithm and access token."""

    claims: Mapping[str, Any]
    algorithm: IdTokenAlgorithm
    access_token: str | None


def at_hash(access_token: str) -> str:
    """OpenID Connect Core 3.1.3.6: the left half of the SHA-256 of the access token."""
    digest = hashlib.sha256(access_token.encode()).digest()
    return base64.urlsafe_b64encode(digest[:16]).rstrip(b"=").decode()


@attrs.define
class FakeSigner:
    """``authgate.ports.jose.TokenSigner``: a token is a serial in the shape of a compact JWS
    (two dots), whose claims (``iss`` stamped) it keeps; it verifies only what it signed."""

    issuer: str = ISSUER
    access_tokens: dict[str, dict[str, Any]] = attrs.field(factory=dict)
    id_tokens: dict[str, SignedIdToken] = attrs.field(factory=dict)
    logout_tokens: dict[str, dict[str, Any]] = attrs.field(factory=dict)

    def supports(self, algorithm: IdTokenAlgorithm) -> bool:
        return algorithm in ("RS256", "ES256")

    def _stamped(self, kind: str, claims: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
        assert "iss" not in claims, "the signer stamps iss itself"
        return f"{kind}.{next(_serial)}.signature", {**claims, "iss": self.issuer}

    def id_token(
        self,
        claims: Mapping[str, Any],
        *,
        algorithm: IdTokenAlgorithm = "RS256",
        access_token: str | None = None,
    ) -> str:
        token, stamped = self._stamped("id", claims)
        if access_token is not None:
            stamped["at_hash"] = at_hash(access_token)
        self.id_tokens[token] = SignedIdToken(stamped, algorithm, access_token)
        return token

    def access_token(self, claims: Mapping[str, Any]) -> str:
        token, stamped = self._stamped("at", claims)
        self.access_tokens[token] = stamped
        return token

    def logout_token(self, claims: Mapping[str, Any]) -> str:
        token, stamped = self._stamped("logout", claims)
        self.logout_tokens[token] = stamped
        return token

    def verify_id_token(self, token: str) -> VerifiedIdToken:
        signed = self.id_tokens.get(token)
        if signed is None:
            raise InvalidToken("not an ID token of this provider")
        claims = signed.claims
        aud = claims["aud"]
        auth_time = claims.get("auth_time")
        return VerifiedIdToken(
            subject=claims["sub"],
            audiences=(aud,) if isinstance(aud, str) else tuple(aud),
            issued_at=dt.datetime.fromtimestamp(claims["iat"], dt.UTC),
            expires_at=dt.datetime.fromtimestamp(claims["exp"], dt.UTC),
            session_id=claims.get("sid"),
            auth_time=dt.datetime.fromtimestamp(auth_time, dt.UTC) if auth_time else None,
            claims=claims,
        )

    def verify_access_token(self, token: str, now: dt.datetime) -> Mapping[str, Any]:
        claims = self.access_tokens.get(token)
        if claims is None:
            raise InvalidToken("not an access token of this provider")
        if claims["exp"] <= now.timestamp():
            raise InvalidToken("expired")
        return claims

    def hint(self, subject: str, audience: str | list[str], **claims: Any) -> str:
        """An ID token as the provider issued it, for an ``id_token_hint``."""
        now = int(dt.datetime(2026, 3, 2, 9, tzinfo=dt.UTC).timestamp())
        return self.id_token({"sub": subject, "aud": audience, "iat": now, "exp": now, **claims})


@attrs.define
class FakeLogoutSender:
    """``authgate.ports.openid.LogoutTokenSender``: records each delivery; a URI in ``down``
    fails with its text."""

    sent: list[tuple[str, str]] = attrs.field(factory=list)
    down: dict[str, str] = attrs.field(factory=dict)

    async def send(self, uri: str, logout_token: str) -> None:
        if uri in self.down:
            raise LogoutDeliveryFailed(self.down[uri])
        self.sent.append((uri, logout_token))


LOGOUT_POLICY = LogoutPolicy(
    retry_initial=dt.timedelta(seconds=5),
    retry_max=dt.timedelta(minutes=10),
    give_up_after=dt.timedelta(hours=24),
    lease=dt.timedelta(seconds=60),
    batch=20,
)


@attrs.define
class OpenIdProvider:
    """The OpenID Provider's services on the memory store, wired as the composition root
    wires them (every session's end tells the clients), with drivers for the code flow."""

    store: MemoryStore
    clock: FixedClock
    sessions: SessionService
    clients: ClientRegistry
    signer: FakeSigner
    sender: FakeLogoutSender
    authorization: AuthorizationService
    tokens: TokenService
    access: TokenAccess
    apps: AccountApps
    logout: BackchannelLogout
    end_session: RpInitiatedLogout

    @classmethod
    def build(
        cls,
        store: MemoryStore,
        clock: FixedClock,
        sessions: SessionService,
        registry: ClientRegistry | None = None,
    ) -> OpenIdProvider:
        registered = registry if registry is not None else clients()
        directory = ClientDirectory(registered)
        signer, sender = FakeSigner(), FakeLogoutSender()
        units = store.units
        worker = LogoutTokenWorker(
            clients=directory,
            units=units,
            signer=signer,
            sender=sender,
            clock=clock,
            policy=LOGOUT_POLICY,
        )
        logout = BackchannelLogout(worker)
        sessions.endings = logout
        return cls(
            store,
            clock,
            sessions,
            registered,
            signer,
            sender,
            AuthorizationService(clients=directory, signer=signer, units=units, clock=clock),
            TokenService(signer=signer, units=units, clock=clock),
            TokenAccess(
                signer=signer, clients=directory, sessions=sessions, units=units, clock=clock
            ),
            AccountApps(clients=directory, units=units, sessions=sessions),
            logout,
            RpInitiatedLogout(directory, signer),
        )

    @property
    def worker(self) -> LogoutTokenWorker:
        return self.logout.worker

    def client(self, client_id: str) -> Client:
        found = self.clients.get(client_id)
        assert found is not None
        return found

    def request(
        self, client_id: str, scope: str = "openid email", **params: str
    ) -> AuthorizationRequest:
        """A well-formed authorization request of ``client_id`` (PKCE with :data:`VERIFIER`)."""
        client = self.client(client_id)
        query = {
            "response_type": "code",
            "client_id": client_id,
            "redirect_uri": client.redirect_uris[0],
            "scope": scope,
            "code_challenge": pkce_challenge(VERIFIER),
            "code_challenge_method": "S256",
            "state": "state-of-the-client",
            **params,
        }
        request, _ = parse_authorization_request({k: [v] for k, v in query.items()}, client)
        return request

    async def session(self, flow: SignIns, subject: str = "alice") -> SessionClaims:
        """A person signed in (a new account, a live authgate session): its claims."""
        signed: SignedIn = await flow.register(subject)
        return await self.sessions.verify(signed.session.token)

    async def code(
        self, session: SessionClaims, client_id: str, scope: str = "openid email", **params: str
    ) -> str:
        """A code issued to ``client_id`` in ``session`` (consent given when asked)."""
        request = self.request(client_id, scope, **params)
        client = self.client(client_id)
        outcome = await self.authorization.authorize(request, client, session)
        if isinstance(outcome, ConsentNeeded):
            outcome = await self.authorization.consent(
                request, client, session, approved=True, seen=outcome.seen
            )
        assert isinstance(outcome, CodeIssued), outcome
        return outcome.code

    async def redeem(
        self,
        client_id: str,
        code: str,
        *,
        verifier: str | None = VERIFIER,
        redirect_uri: str | None = None,
    ) -> IssuedTokens:
        """The token endpoint's ``authorization_code`` grant, as ``client_id`` sends it."""
        form = {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": redirect_uri or self.client(client_id).redirect_uris[0],
        }
        if verifier is not None:
            form["code_verifier"] = verifier
        return await self.tokens.grant(self.client(client_id), form)

    async def refresh(
        self, client_id: str, refresh_token: str, scope: str | None = None
    ) -> IssuedTokens:
        """The token endpoint's ``refresh_token`` grant, as ``client_id`` sends it."""
        form = {"grant_type": "refresh_token", "refresh_token": refresh_token}
        if scope is not None:
            form["scope"] = scope
        return await self.tokens.grant(self.client(client_id), form)

    async def signed_in_tokens(
        self, flow: SignIns, client_id: str = FIRST, scope: str = "openid offline_access"
    ) -> tuple[SessionClaims, IssuedTokens]:
        """A person signed in and ``client_id``'s tokens of their session."""
        session = await self.session(flow)
        tokens = await self.redeem(client_id, await self.code(session, client_id, scope))
        return session, tokens
