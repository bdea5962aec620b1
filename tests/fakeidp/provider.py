"""One provider of the fake identity provider: its keys, codes, tokens and knobs."""

from __future__ import annotations

import asyncio
import base64
import binascii
import hashlib
import hmac
import json
import secrets
from collections import Counter
from collections.abc import Callable
from typing import Any
from urllib.parse import unquote_plus

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from joserfc import jwt
from joserfc.errors import JoseError
from joserfc.jwk import ECKey, Key, RSAKey

from tests.fakeidp.model import (
    FakeUser,
    IssuedCode,
    ReceivedRevocation,
    RecordedRequest,
    RevocationStyle,
    Shape,
    Tamper,
    TokenMode,
)

CLIENT_SECRET_JWT_MAX_LIFETIME = 15777000  # Apple: six months


_RSA_POOL: list[rsa.RSAPrivateKey] = []
_RSA_POOL_SIZE = 4
_rsa_turn = 0


def _rsa_key(parameters: dict[str, Any] | None = None) -> RSAKey:
    """A 2048-bit RSA private key, from a small process-wide pool (generation is slow).
    Consecutive calls never return the same key."""
    global _rsa_turn
    _rsa_turn = (_rsa_turn + 1) % _RSA_POOL_SIZE
    while len(_RSA_POOL) <= _rsa_turn:
        _RSA_POOL.append(rsa.generate_private_key(public_exponent=65537, key_size=2048))
    return RSAKey.import_key(_RSA_POOL[_rsa_turn], parameters)


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _b64json(value: Any) -> str:
    return _b64(json.dumps(value, separators=(",", ":")).encode())


def s256(verifier: str) -> str:
    return _b64(hashlib.sha256(verifier.encode("ascii")).digest())


def appsecret_proof(client_secret: str, access_token: str) -> str:
    return hmac.new(client_secret.encode(), access_token.encode(), hashlib.sha256).hexdigest()


class ClientAuthError(Exception):
    """The token request's client authentication failed (401 invalid_client)."""


class FakeProvider:
    """The state and knobs of one fake provider (``fake.google``, ``fake.facebook``, …).

    Knobs (set them in a test, they stay until changed):

    * ``next_user`` — who signs in at authorize (unless the request has ``login_as``);
    * ``deny`` — authorize answers ``error=access_denied``;
    * ``token_mode`` (:class:`TokenMode`), ``slow_seconds`` — token endpoint misbehaviour;
    * ``token_release`` — an :class:`asyncio.Event`: ``TokenMode.SLOW`` answers as soon as it
      is set (at the latest after ``slow_seconds``), so a test decides how long a request is
      in flight instead of guessing a delay;
    * ``tamper`` (:class:`Tamper`) — how the next ID tokens are forged;
    * ``forged_kid`` — the kid of ``Tamper.UNKNOWN_KID`` tokens (default: a new one each time);
    * ``claim_overrides`` — claims set (or removed with ``None``) in every ID token;
    * ``discovery_down``, ``jwks_down``, ``userinfo_down``, ``profile_down`` — answer 500;
    * ``jwks_delay_seconds`` — the JWKS answers late;
    * ``jwks_release`` — an :class:`asyncio.Event`: the JWKS answers only once it is set (to make
      concurrent fetches overlap whatever the machine's load);
    * ``discovery_overrides`` — fields replaced in the discovery document;
    * ``code_ttl_seconds``, ``allowed_redirect_uris``, ``send_user_json`` (apple),
      ``proof_secret`` (facebook: checks ``appsecret_proof`` against it instead of the secret);
    * ``issue_refresh_tokens`` — the token answer carries a refresh token (default: apple);
    * ``login_at`` — when the user last logged in at the provider (its own session, a Unix
      time; default None: every authorize is a login). An authorize that forces a login
      (``prompt=login``, a ``max_age`` shorter than the session's age, facebook's
      ``auth_type=reauthenticate``) starts the session again at that moment;
      ``send_auth_time`` — whether ID tokens carry that time as ``auth_time`` (default: the
      shapes with ID tokens); ``forced_logins`` counts the forced authorizes;
    * ``revocation_style`` (:class:`RevocationStyle`), ``advertise_revocation`` (discovery names
      ``revocation_endpoint``), ``revocation_down`` (the endpoint answers 503);
      ``revocations`` records what it accepted (:class:`ReceivedRevocation`).
    """

    def __init__(
        self,
        name: str,
        shape: Shape,
        now: Callable[[], float],
        *,
        token_endpoint_auth: str | None = None,
    ) -> None:
        self.name = name
        self.shape = shape
        self._now = now
        self.base_url = ""  # set when the server starts
        self.client_id = f"{name}-client-id"
        self.client_secret = f"{name}-client-secret-{secrets.token_hex(8)}"
        self.token_endpoint_auth = token_endpoint_auth or (
            "apple_client_secret_jwt" if shape is Shape.APPLE else "client_secret_post"
        )
        # Apple: the developer's key (the adapter signs the client secret with the private part)
        self.team_id = "TEAM123456"
        self.key_id = "APPLEKEY01"
        self.apple_client_key: ECKey | None = (
            ECKey.generate_key("P-256", private=True) if shape is Shape.APPLE else None
        )
        self.alg = "ES256" if shape is Shape.APPLE else "RS256"
        self.signing_key: Key | None = None
        self.published: list[Key] = []
        self._generation = 0
        if shape is not Shape.OAUTH:
            self.signing_key = self._new_signing_key()
            self.published = [self.signing_key]
        # knobs
        self.next_user = FakeUser()
        self.users: dict[str, FakeUser] = {}
        self.deny = False
        self.token_mode = TokenMode.OK
        self.slow_seconds = 30.0
        self.token_release: asyncio.Event | None = None
        self.tamper: Tamper | None = None
        self.forged_kid: str | None = None
        self.claim_overrides: dict[str, Any] = {}
        self.discovery_down = False
        self.discovery_overrides: dict[str, Any] = {}
        self.jwks_down = False
        self.jwks_delay_seconds = 0.0
        self.jwks_release: asyncio.Event | None = None
        self.extra_jwks: list[dict[str, Any]] = []  # published after the real keys
        self.userinfo_down = False
        self.profile_down = False
        self.code_ttl_seconds = 60.0
        self.allowed_redirect_uris: set[str] | None = None
        self.send_user_json = True
        self.proof_secret: str | None = None  # the secret appsecret_proof is checked against
        self.issue_refresh_tokens = shape is Shape.APPLE
        self.login_at: float | None = None
        self.send_auth_time = shape is not Shape.OAUTH
        # An OpenID provider that states auth_time only when the request carries max_age (OIDC
        # Core 3.1.2.1 makes it required then, optional otherwise).
        self.auth_time_only_when_asked = False
        self.last_asked_max_age = False
        self.forced_logins = 0
        self.revocation_style = (
            RevocationStyle.APPLE if shape is Shape.APPLE else RevocationStyle.RFC7009
        )
        self.advertise_revocation = shape is not Shape.OAUTH
        self.revocation_down = False
        self.refresh_tokens: dict[str, FakeUser] = {}
        self.revocations: list[ReceivedRevocation] = []
        # observations
        self.hits: Counter[str] = Counter()
        self.requests: list[RecordedRequest] = []
        self.codes: dict[str, IssuedCode] = {}
        self.access_tokens: dict[str, FakeUser] = {}
        self.client_secret_claims: list[dict[str, Any]] = []
        self.last_sid: str | None = None  # the sid of the newest ID token (OIDC shape)
        self.sids: dict[str, list[str]] = {}  # sub -> the sids of its ID tokens, oldest first
        self._authorized_subs: set[str] = set()

    # -- addresses --------------------------------------------------------------------------

    @property
    def issuer(self) -> str:
        return f"{self.base_url}/{self.name}"

    @property
    def authorization_endpoint(self) -> str:
        return f"{self.issuer}/authorize"

    @property
    def token_endpoint(self) -> str:
        return f"{self.issuer}/token"

    @property
    def jwks_uri(self) -> str:
        return f"{self.issuer}/jwks"

    @property
    def userinfo_endpoint(self) -> str:
        return f"{self.issuer}/userinfo"

    @property
    def profile_endpoint(self) -> str:
        return f"{self.issuer}/me?fields=id,name,email"

    @property
    def revocation_endpoint(self) -> str:
        return f"{self.issuer}/revoke"

    @property
    def kid(self) -> str:
        assert self.signing_key is not None and self.signing_key.kid is not None
        return self.signing_key.kid

    def requests_to(self, endpoint: str) -> list[RecordedRequest]:
        """The recorded requests to one endpoint (``token``, ``jwks``, ``me``, …)."""
        return [r for r in self.requests if r.path.rsplit("/", 1)[-1] == endpoint]

    # -- keys -------------------------------------------------------------------------------

    def _new_signing_key(self) -> Key:
        self._generation += 1
        kid = f"{self.name}-key-{self._generation}-{secrets.token_hex(4)}"
        params = {"kid": kid, "use": "sig", "alg": self.alg}
        if self.alg == "ES256":
            return ECKey.generate_key("P-256", parameters=params, private=True)
        return _rsa_key(params)

    def rotate_keys(self, *, keep_previous: bool = False, same_kid: bool = False) -> str:
        """Sign with a new key from now on; the JWKS publishes it (and the old one if kept).
        ``same_kid`` gives the new key the old key's kid (a provider re-keying in place).
        Returns the new kid."""
        assert self.shape is not Shape.OAUTH, "no ID tokens, no keys"
        old_kid = self.kid
        new = self._new_signing_key()
        if same_kid:
            new = type(new).import_key(new.as_dict(private=True) | {"kid": old_kid})
        self.published = [new, *self.published] if keep_previous and not same_kid else [new]
        self.signing_key = new
        return self.kid

    def jwks(self) -> dict[str, Any]:
        return {"keys": [*(k.as_dict(private=False) for k in self.published), *self.extra_jwks]}

    # -- codes and tokens -------------------------------------------------------------------

    def issue_code(
        self,
        *,
        redirect_uri: str,
        user: FakeUser | None = None,
        nonce: str | None = None,
        code_challenge: str | None = None,
        client_id: str | None = None,
        scope: str = "",
        auth_time: float | None = None,
    ) -> str:
        """An authorization code as authorize would issue it (tests may skip the browser)."""
        code = secrets.token_urlsafe(24)
        self.codes[code] = IssuedCode(
            code=code,
            client_id=client_id or self.client_id,
            redirect_uri=redirect_uri,
            user=user or self.next_user,
            nonce=nonce,
            code_challenge=code_challenge,
            scope=scope,
            expires_at=self._now() + self.code_ttl_seconds,
            auth_time=auth_time,
        )
        return code

    def log_in(self, query: dict[str, str]) -> float:
        """The authorize step's login: when the user authenticated, as ``auth_time`` says. A
        request that forces a login starts the provider's session again now; any other is
        answered from the session the provider holds (``login_at``)."""
        now = self._now()
        self.last_asked_max_age = "max_age" in query
        if self.login_at is None:
            return now
        max_age = query.get("max_age", "")
        forced = (
            "login" in query.get("prompt", "").split()
            or (max_age.isdigit() and now - self.login_at > int(max_age))
            or query.get("auth_type") == "reauthenticate"
        )
        if forced:
            self.forced_logins += 1
            self.login_at = now
        return self.login_at

    def first_authorization(self, sub: str) -> bool:
        """Whether this is the user's first authorization (Apple sends ``user`` only then)."""
        first = sub not in self._authorized_subs
        self._authorized_subs.add(sub)
        return first

    def redeem(self, form: dict[str, str]) -> IssuedCode:
        """Check a token request's grant (authentication already checked). Raises ValueError
        with the OAuth error code."""
        if form.get("grant_type") != "authorization_code":
            raise ValueError("unsupported_grant_type")
        issued = self.codes.get(form.get("code", ""))
        if issued is None:
            raise ValueError("invalid_grant")
        if issued.used:
            raise ValueError("invalid_grant")  # single use
        issued.used = True
        if issued.expires_at <= self._now():
            raise ValueError("invalid_grant")
        if form.get("client_id") != issued.client_id:
            raise ValueError("invalid_grant")
        if form.get("redirect_uri") != issued.redirect_uri:
            raise ValueError("invalid_grant")
        verifier = form.get("code_verifier")
        if issued.code_challenge is not None:
            if verifier is None or not hmac.compare_digest(s256(verifier), issued.code_challenge):
                raise ValueError("invalid_grant")
        elif verifier is not None:
            raise ValueError("invalid_grant")
        return issued

    def new_access_token(self, user: FakeUser) -> str:
        token = secrets.token_urlsafe(32)
        self.access_tokens[token] = user
        return token

    def new_refresh_token(self, user: FakeUser) -> str:
        token = "rt-" + secrets.token_urlsafe(32)
        self.refresh_tokens[token] = user
        return token

    def revoke(self, token: str) -> bool:
        """Forget ``token`` (and, for a refresh token, the grant's access tokens); whether it
        was known."""
        user = self.refresh_tokens.pop(token, None)
        if user is not None:
            for access, holder in list(self.access_tokens.items()):
                if holder == user:
                    del self.access_tokens[access]
            return True
        return self.access_tokens.pop(token, None) is not None

    def claims_for(
        self, user: FakeUser, nonce: str | None, auth_time: float | None = None
    ) -> dict[str, Any]:
        now = int(self._now())
        claims: dict[str, Any] = {
            "iss": self.issuer,
            "sub": user.sub,
            "aud": self.client_id,
            "iat": now,
            "exp": now + 3600,
        }
        if self.shape is Shape.OIDC:
            claims["azp"] = self.client_id
            # The provider's session (OIDC Back-Channel Logout): one per issued ID token.
            claims["sid"] = self.last_sid = f"{self.name}-sid-{secrets.token_hex(6)}"
            self.sids.setdefault(user.sub, []).append(self.last_sid)
        if nonce is not None:
            claims["nonce"] = nonce
        if user.email is not None:
            claims["email"] = user.email
            if user.email_verified is not None:
                # Apple sends the strings "true" / "false"
                claims["email_verified"] = (
                    str(user.email_verified).lower()
                    if self.shape is Shape.APPLE
                    else user.email_verified
                )
        if self.shape is Shape.OIDC and user.name is not None:
            claims["name"] = user.name
        asked = self.last_asked_max_age or not self.auth_time_only_when_asked
        if self.shape is not Shape.OAUTH and self.send_auth_time and asked:
            claims["auth_time"] = int(
                auth_time if auth_time is not None else (self.login_at or now)
            )
        if self.shape is Shape.APPLE:
            claims["nonce_supported"] = True
        return claims

    def mint_id_token(
        self,
        user: FakeUser | None = None,
        *,
        nonce: str | None = None,
        tamper: Tamper | None = None,
        claims: dict[str, Any] | None = None,
        auth_time: float | None = None,
    ) -> str:
        """An ID token for ``user`` as the token endpoint would return it, forged per
        ``tamper`` and with ``claims`` (then ``claim_overrides``) applied (None removes);
        ``auth_time`` when the user logged in (default: ``login_at``, else now)."""
        assert self.signing_key is not None, "this provider issues no ID tokens"
        payload = self.claims_for(user or self.next_user, nonce, auth_time)
        now = int(self._now())
        match tamper:
            case Tamper.WRONG_ISS:
                payload["iss"] = "https://evil.example"
            case Tamper.LOOKALIKE_ISS:
                payload["iss"] = (
                    self.issuer.replace("l", "I") if "l" in self.issuer else (self.issuer + "x")
                )
            case Tamper.ISS_TRAILING_SLASH:
                payload["iss"] = self.issuer + "/"
            case Tamper.FOREIGN_AUD:
                payload["aud"] = "someone-elses-client-id"
                payload.pop("azp", None)
            case Tamper.EXTRA_AUD_WITHOUT_AZP:
                payload["aud"] = [self.client_id, "someone-elses-client-id"]
                payload.pop("azp", None)
            case Tamper.WRONG_AZP:
                payload["azp"] = "someone-elses-client-id"
            case Tamper.EXPIRED:
                payload["iat"], payload["exp"] = now - 7200, now - 3600
            case Tamper.FUTURE_IAT:
                payload["iat"], payload["exp"] = now + 3600, now + 7200
            case Tamper.MISSING_NONCE:
                payload.pop("nonce", None)
            case Tamper.WRONG_NONCE:
                payload["nonce"] = "not-the-nonce-of-this-sign-in"
            case Tamper.MISSING_SUB:
                payload.pop("sub", None)
            case Tamper.MISSING_EXP:
                payload.pop("exp", None)
        for source in (claims or {}, self.claim_overrides):
            for key, value in source.items():
                if value is None:
                    payload.pop(key, None)
                else:
                    payload[key] = value
        return self._sign(payload, tamper)

    def _sign(self, payload: dict[str, Any], tamper: Tamper | None) -> str:
        assert self.signing_key is not None
        header = {"alg": self.alg, "kid": self.kid, "typ": "JWT"}
        match tamper:
            case Tamper.ALG_NONE:
                return f"{_b64json({'alg': 'none', 'typ': 'JWT'})}.{_b64json(payload)}."
            case Tamper.HS256_WITH_PUBLIC_KEY:
                public_pem = self._public_pem()
                signing_input = f"{_b64json({**header, 'alg': 'HS256'})}.{_b64json(payload)}"
                mac = hmac.new(public_pem, signing_input.encode(), hashlib.sha256).digest()
                return f"{signing_input}.{_b64(mac)}"
            case Tamper.UNKNOWN_KID | Tamper.OTHER_KEY_SAME_KID:
                other = self._other_key()
                if tamper is Tamper.OTHER_KEY_SAME_KID:
                    kid = self.kid
                else:
                    kid = self.forged_kid or "unknown-kid-" + secrets.token_hex(4)
                return jwt.encode({**header, "kid": kid}, payload, other, algorithms=[self.alg])
        token = jwt.encode(header, payload, self.signing_key, algorithms=[self.alg])
        if tamper is Tamper.TAMPERED_SIGNATURE:
            head, body, signature = token.split(".")
            i = len(signature) // 2
            swapped = "A" if signature[i] != "A" else "B"
            return f"{head}.{body}.{signature[:i]}{swapped}{signature[i + 1 :]}"
        if tamper is Tamper.TAMPERED_PAYLOAD:
            head, _, signature = token.split(".")
            forged = dict(payload)
            sub = str(forged.get("sub", "x"))
            forged["sub"] = sub[:-1] + ("1" if sub[-1:] != "1" else "2")
            return f"{head}.{_b64json(forged)}.{signature}"
        return token

    def _public_pem(self) -> bytes:
        assert self.signing_key is not None
        public = self.signing_key.get_op_key("verify")
        return public.public_bytes(  # type: ignore[union-attr]
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )

    def _other_key(self) -> Key:
        if self.alg == "ES256":
            return ECKey.generate_key("P-256", private=True)
        return _rsa_key()

    # -- client authentication --------------------------------------------------------------

    def authenticate_client(self, form: dict[str, str], authorization: str | None) -> None:
        """Check the token request's client authentication per the provider's method."""
        method = self.token_endpoint_auth
        if method == "client_secret_basic":
            if "client_secret" in form or not authorization:
                raise ClientAuthError("expected HTTP Basic only")
            scheme, _, value = authorization.partition(" ")
            if scheme.lower() != "basic":
                raise ClientAuthError("not Basic")
            try:
                pair = base64.b64decode(value, validate=True).decode()
            except (binascii.Error, UnicodeDecodeError):
                raise ClientAuthError("malformed Basic") from None
            client_id, _, secret = pair.partition(":")
            if unquote_plus(client_id) != self.client_id or not hmac.compare_digest(
                unquote_plus(secret), self.client_secret
            ):
                raise ClientAuthError("wrong client credentials")
            if form.get("client_id", self.client_id) != self.client_id:
                raise ClientAuthError("client_id differs")
            return
        if authorization:
            raise ClientAuthError("unexpected Authorization header")
        if form.get("client_id") != self.client_id:
            raise ClientAuthError("wrong client_id")
        secret = form.get("client_secret")
        if secret is None:
            raise ClientAuthError("no client_secret")
        if method == "apple_client_secret_jwt":
            self._check_client_secret_jwt(secret)
        elif not hmac.compare_digest(secret, self.client_secret):
            raise ClientAuthError("wrong client_secret")

    def _check_client_secret_jwt(self, secret: str) -> None:
        assert self.apple_client_key is not None
        public = ECKey.import_key(self.apple_client_key.as_dict(private=False))
        try:
            token = jwt.decode(secret, public, algorithms=["ES256"])
        except (JoseError, ValueError):
            raise ClientAuthError("client secret JWT does not verify") from None
        claims, header = token.claims, token.header
        now = self._now()
        if header.get("kid") != self.key_id or header.get("alg") != "ES256":
            raise ClientAuthError("client secret JWT header")
        if claims.get("iss") != self.team_id or claims.get("sub") != self.client_id:
            raise ClientAuthError("client secret JWT iss/sub")
        if claims.get("aud") != self.issuer:
            raise ClientAuthError("client secret JWT aud")
        iat, exp = claims.get("iat"), claims.get("exp")
        if not isinstance(iat, int) or not isinstance(exp, int):
            raise ClientAuthError("client secret JWT iat/exp")
        if iat > now + 60 or exp <= now or exp - iat > CLIENT_SECRET_JWT_MAX_LIFETIME:
            raise ClientAuthError("client secret JWT lifetime")
        self.client_secret_claims.append({"header": dict(header), **claims})
