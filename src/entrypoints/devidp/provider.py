"""The development OpenID Connect provider mounted under ``/dev/idp`` (see the package):
discovery, the authorization page, the token endpoint (client authentication per shape, PKCE
S256), the key set, userinfo, and a Graph-style profile endpoint that checks
``appsecret_proof``. No code, token, secret or key is ever logged.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import json
import logging
import re
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any
from urllib.parse import unquote_plus, urlencode

import attrs
from aiohttp import web
from joserfc import jwt
from joserfc.errors import JoseError
from joserfc.jwk import KeySet

from authgate.adapters.jose.keys import RSA_ALGORITHM, new_rsa_key, public_jwks
from authgate.adapters.jose.signing import JwtTokenSigner
from authgate.domain.openid.records import is_code_verifier, pkce_matches
from authgate.domain.secrets import appsecret_proof
from authgate.entrypoints.devidp.clients import (
    CLIENT_SECRET_BASIC,
    CLIENT_SECRET_POST,
    DevClient,
)
from authgate.entrypoints.devidp.grants import CodeGrant, GrantStore, TokenGrant
from authgate.entrypoints.devidp.pages import (
    BASE_PATH,
    FORM_POST_SCRIPT,
    STYLE,
    authorization_page,
    error_page,
    form_post_page,
)
from authgate.entrypoints.devidp.users import USERS_BY_KEY, TestUser, subject_for
from authgate.entrypoints.http.common.errors import CALLBACK_HEADERS, OAUTH_NO_STORE

log = logging.getLogger("authgate.devidp")

ID_TOKEN_TTL_SECONDS = 3600
APPLE_MAX_SECRET_LIFETIME = 15_777_000  # six months, Apple's limit
LEEWAY_SECONDS = 60
AUTHORIZATION_FIELDS = (
    "client_id",
    "redirect_uri",
    "response_type",
    "scope",
    "state",
    "nonce",
    "code_challenge",
    "code_challenge_method",
    "response_mode",
)
TOKEN_FIELDS = ("grant_type", "code", "redirect_uri", "client_id", "client_secret", "code_verifier")
PROFILE_FIELDS = ("id", "name", "email", "first_name", "last_name")
TOKEN_CLAIMS = ("iss", "aud", "sub", "iat", "exp", "auth_time", "nonce")
USER_CLAIMS = ("email", "email_verified", "name", "given_name", "family_name")  # by scope
_CODE_CHALLENGE = re.compile(r"^[A-Za-z0-9_-]{43}$")


@attrs.frozen
class _Return:
    """Where and how an authorization answer goes back to the client."""

    client: DevClient
    redirect_uri: str
    state: str | None
    response_mode: str


class _Refused(Exception):
    """An authorization request that cannot be answered by a redirect to the client (RFC 6749
    4.1.2.1): answered by an error page."""

    def response(self) -> web.Response:
        return error_page(str(self))


class _RedirectError(_Refused):
    """An error answered to the client at its redirect URI."""

    def __init__(self, back: _Return, error: str, description: str) -> None:
        super().__init__(error)
        self.back = back
        self.description = description

    def response(self) -> web.Response:
        return _answer(self.back, {"error": str(self), "error_description": self.description})


@attrs.frozen
class _Authorization:
    back: _Return
    scopes: tuple[str, ...]
    nonce: str | None
    code_challenge: str | None
    fields: dict[str, str]


class _TokenError(Exception):
    """An error answered by the token endpoint, with its status."""

    def __init__(self, status: int, error: str, description: str) -> None:
        super().__init__(error)
        self.status = status
        self.body = {"error": error, "error_description": description}


def _scopes(value: str | None) -> tuple[str, ...]:
    """Space- (OAuth) or comma-separated (Graph API) scopes, in order, without repeats."""
    return tuple(dict.fromkeys(s for s in re.split(r"[\s,]+", value or "") if s))


def _single(pairs: Iterable[tuple[str, Any]], names: Iterable[str]) -> dict[str, str]:
    """The named fields, each at most once (RFC 6749 3.1), empty values treated as absent."""
    wanted = set(names)
    out: dict[str, str] = {}
    for key, value in pairs:
        if key not in wanted or not isinstance(value, str):
            continue
        if key in out:
            raise ValueError(key)
        if value != "":
            out[key] = value
    return out


def _asks_to_reauthenticate(query: Mapping[str, str]) -> bool:
    """Whether the client asks the user to authenticate again: OpenID Connect's ``prompt=login``
    or ``max_age=0`` (Core 3.1.2.1), or the Facebook Login dialog's ``auth_type=reauthenticate``."""
    prompts = query.get("prompt", "").split()
    return (
        "login" in prompts
        or query.get("max_age") == "0"
        or query.get("auth_type") == "reauthenticate"
    )


class DevIdentityProvider:
    """The development provider: ``mount`` adds its routes under ``/dev/idp``."""

    def __init__(
        self,
        issuer: str,
        clients: Mapping[str, DevClient],
        *,
        now: Callable[[], float] = time.time,
    ) -> None:
        self.issuer = issuer.rstrip("/")
        self.clients = dict(clients)
        self.grants = GrantStore(now)
        self.now = now
        # In memory only: a restart publishes a new key set, the rotation the adapters handle.
        self._keys = KeySet([new_rsa_key()])
        self._signer = JwtTokenSigner(self._keys, issuer=self.issuer)
        self._apple_users_seen: set[tuple[str, str]] = set()

    def mount(self, app: web.Application) -> None:
        base = BASE_PATH
        app.router.add_get(f"{base}/.well-known/openid-configuration", self.discovery)
        app.router.add_get(f"{base}/authorize", self.authorize_page)
        app.router.add_post(f"{base}/authorize", self.authorize_decision)
        app.router.add_post(f"{base}/token", self.token)
        app.router.add_get(f"{base}/jwks", self.jwks)
        app.router.add_get(f"{base}/userinfo", self.userinfo)
        app.router.add_post(f"{base}/userinfo", self.userinfo)
        app.router.add_get(f"{base}/me", self.profile)
        app.router.add_get(f"{base}/idp.css", self.stylesheet)
        app.router.add_get(f"{base}/form-post.js", self.form_post_script)

    # -- metadata ---------------------------------------------------------------------------

    def metadata(self) -> dict[str, Any]:
        """The discovery document (OpenID Connect Discovery 1.0, section 3)."""
        i = self.issuer
        return {
            "issuer": i,
            "authorization_endpoint": f"{i}/authorize",
            "token_endpoint": f"{i}/token",
            "jwks_uri": f"{i}/jwks",
            "userinfo_endpoint": f"{i}/userinfo",
            "response_types_supported": ["code"],
            "response_modes_supported": ["query", "form_post"],
            "grant_types_supported": ["authorization_code"],
            "subject_types_supported": ["pairwise"],
            "id_token_signing_alg_values_supported": [RSA_ALGORITHM],
            "scopes_supported": ["openid", "email", "profile", "name"],
            "token_endpoint_auth_methods_supported": [CLIENT_SECRET_POST, CLIENT_SECRET_BASIC],
            "code_challenge_methods_supported": ["S256"],
            "claims_supported": [*TOKEN_CLAIMS, *USER_CLAIMS],
        }

    async def discovery(self, request: web.Request) -> web.Response:
        return web.json_response(self.metadata())

    async def jwks(self, request: web.Request) -> web.Response:
        return web.json_response(public_jwks(self._keys))

    async def stylesheet(self, request: web.Request) -> web.Response:
        return web.Response(text=STYLE, content_type="text/css")

    async def form_post_script(self, request: web.Request) -> web.Response:
        return web.Response(text=FORM_POST_SCRIPT, content_type="text/javascript")

    # -- authorization ----------------------------------------------------------------------

    def _validate(self, pairs: Iterable[tuple[str, Any]]) -> _Authorization:
        """The authorization request, validated in the order of RFC 6749 4.1.2.1: client and
        redirect URI first (a page), then the rest (an error sent to the redirect URI)."""
        try:
            fields = _single(pairs, AUTHORIZATION_FIELDS)
        except ValueError as e:
            # Which redirect URI to trust is unclear when a field repeats: answer on the page.
            raise _Refused(f"the parameter {e} appears more than once") from None
        client = self.clients.get(fields.get("client_id", ""))
        if client is None:
            raise _Refused("unknown client_id: no such client is registered here")
        redirect_uri = fields.get("redirect_uri")
        if redirect_uri is None or redirect_uri not in client.redirect_uris:
            raise _Refused("redirect_uri is not registered for this client")
        mode = fields.get("response_mode", "query")
        back = _Return(client, redirect_uri, fields.get("state"), mode)
        if mode not in ("query", "form_post"):
            back = attrs.evolve(back, response_mode="query")
            raise _RedirectError(back, "invalid_request", "unsupported response_mode")
        if fields.get("response_type") != "code":
            raise _RedirectError(
                back, "unsupported_response_type", "only response_type=code is supported"
            )
        scopes = _scopes(fields.get("scope"))
        if client.shape == "oidc" and "openid" not in scopes:
            raise _RedirectError(back, "invalid_scope", "the openid scope is required")
        if client.shape == "apple" and {"name", "email"} & set(scopes) and mode != "form_post":
            raise _RedirectError(
                back,
                "invalid_request",
                "response_mode must be form_post when the name or email scope is requested",
            )
        challenge = fields.get("code_challenge")
        if challenge is not None:
            if fields.get("code_challenge_method") != "S256":
                raise _RedirectError(back, "invalid_request", "code_challenge_method must be S256")
            if not _CODE_CHALLENGE.match(challenge):
                raise _RedirectError(back, "invalid_request", "malformed code_challenge")
        elif "code_challenge_method" in fields:
            raise _RedirectError(back, "invalid_request", "code_challenge is missing")
        return _Authorization(back, scopes, fields.get("nonce"), challenge, fields)

    async def authorize_page(self, request: web.Request) -> web.StreamResponse:
        try:
            authz = self._validate(request.query.items())
        except _Refused as e:
            return e.response()
        return authorization_page(
            client=authz.back.client,
            scopes=authz.scopes,
            redirect_uri=authz.back.redirect_uri,
            request_fields=authz.fields,
            reauthentication=_asks_to_reauthenticate(request.query),
        )

    async def authorize_decision(self, request: web.Request) -> web.StreamResponse:
        form = await request.post()
        try:
            authz = self._validate(form.items())
        except _Refused as e:
            return e.response()
        back = authz.back
        if form.get("deny"):
            log.info("dev idp: the user denied %s", back.client.provider)
            return _answer(back, _denial(back.client))
        user = USERS_BY_KEY.get(str(form.get("user", "")))
        if user is None:
            return error_page("choose one of the listed test users")
        code = self.grants.issue_code(
            CodeGrant(
                client_id=back.client.client_id,
                redirect_uri=back.redirect_uri,
                user_key=user.key,
                scopes=authz.scopes,
                nonce=authz.nonce,
                code_challenge=authz.code_challenge,
                auth_time=int(self.now()),
            )
        )
        fields = {"code": code}
        if back.client.shape == "apple":
            user_json = self._apple_first_time_user(back.client, user, authz.scopes)
            if user_json is not None:
                fields["user"] = user_json
        log.info("dev idp: test user %s signed in to %s", user.key, back.client.provider)
        return _answer(back, fields)

    def _apple_first_time_user(
        self, client: DevClient, user: TestUser, scopes: tuple[str, ...]
    ) -> str | None:
        """Apple sends the user's name only on the first authorization of a client."""
        seen = (client.client_id, user.key)
        if seen in self._apple_users_seen or not ({"name", "email"} & set(scopes)):
            return None
        self._apple_users_seen.add(seen)
        data: dict[str, Any] = {}
        if "name" in scopes:
            data["name"] = {"firstName": user.given_name, "lastName": user.family_name}
        if "email" in scopes:
            data["email"] = user.email
        return json.dumps(data)

    # -- token endpoint ---------------------------------------------------------------------

    async def token(self, request: web.Request) -> web.Response:
        try:
            return await self._token(request)
        except _TokenError as e:
            headers = dict(OAUTH_NO_STORE)
            if e.status == 401:
                headers["WWW-Authenticate"] = 'Basic realm="dev-idp"'
            return web.json_response(e.body, status=e.status, headers=headers)

    async def _token(self, request: web.Request) -> web.Response:
        if request.content_type != "application/x-www-form-urlencoded":
            raise _TokenError(400, "invalid_request", "the body must be form-encoded")
        form = await request.post()
        try:
            fields = _single(form.items(), TOKEN_FIELDS)
        except ValueError as e:
            raise _TokenError(400, "invalid_request", f"{e} appears more than once") from None
        client = self._authenticate_client(request, fields)
        if fields.get("grant_type") != "authorization_code":
            raise _TokenError(400, "unsupported_grant_type", "only authorization_code")
        code = fields.get("code")
        if code is None:
            raise _TokenError(400, "invalid_request", "code is missing")
        grant = self.grants.take_code(code)
        if grant is None:
            raise _TokenError(400, "invalid_grant", "the code is unknown, expired or used")
        if grant.client_id != client.client_id:
            raise _TokenError(400, "invalid_grant", "the code was issued to another client")
        if fields.get("redirect_uri") != grant.redirect_uri:
            raise _TokenError(400, "invalid_grant", "redirect_uri differs from the request's")
        _check_pkce(grant, fields.get("code_verifier"))
        user = USERS_BY_KEY[grant.user_key]
        access_token = self.grants.issue_token(
            TokenGrant(client_id=client.client_id, user_key=user.key, scopes=grant.scopes)
        )
        body: dict[str, Any] = {
            "access_token": access_token,
            "token_type": "bearer" if client.shape == "profile" else "Bearer",
            "expires_in": int(self.grants.token_ttl),
        }
        if client.issues_id_token:
            body["id_token"] = self.id_token(client, user, grant)
            body["scope"] = " ".join(grant.scopes)
        return web.json_response(body, headers=OAUTH_NO_STORE)

    def _authenticate_client(self, request: web.Request, fields: Mapping[str, str]) -> DevClient:
        """Client authentication (RFC 6749 2.3): one method, the one the client's shape uses."""
        header = request.headers.get("Authorization", "")
        if header[:6].lower() == "basic ":
            if "client_secret" in fields:
                raise _TokenError(400, "invalid_request", "more than one client authentication")
            try:
                pair = base64.b64decode(header[6:].strip(), validate=True).decode()
            except (binascii.Error, UnicodeDecodeError):
                raise _TokenError(401, "invalid_client", "malformed Basic credentials") from None
            raw_id, sep, raw_secret = pair.partition(":")
            if not sep:
                raise _TokenError(401, "invalid_client", "malformed Basic credentials")
            client_id, secret, method = unquote_plus(raw_id), unquote_plus(raw_secret), "basic"
            if fields.get("client_id", client_id) != client_id:
                raise _TokenError(401, "invalid_client", "client_id differs from the credentials")
        else:
            client_id = fields.get("client_id", "")
            secret = fields.get("client_secret", "")
            method = "post"
        client = self.clients.get(client_id)
        if client is None or not secret:
            raise _TokenError(401, "invalid_client", "unknown client or no client credentials")
        if client.shape == "apple":
            if method != "post":
                raise _TokenError(401, "invalid_client", "the client secret must be a JWT")
            self._verify_apple_secret(client, secret)
            return client
        if method == "basic" and client.shape == "profile":  # Facebook: in the form only
            raise _TokenError(
                401, "invalid_client", f"{CLIENT_SECRET_BASIC} is not allowed for this client"
            )
        assert client.client_secret is not None
        if not hmac.compare_digest(secret.encode(), client.client_secret.encode()):
            raise _TokenError(401, "invalid_client", "client authentication failed")
        return client

    def _verify_apple_secret(self, client: DevClient, secret: str) -> None:
        """The ES256 client-secret JWT of Sign in with Apple: signed by the client's key (``kid``
        = key id), ``iss`` = team id, ``sub`` = client id, ``aud`` = this issuer, unexpired, and
        at most six months long."""
        assert client.apple_public_key is not None and client.team_id is not None
        rules = jwt.JWTClaimsRegistry(
            now=int(self.now()),
            leeway=LEEWAY_SECONDS,
            iss={"essential": True, "value": client.team_id},
            sub={"essential": True, "value": client.client_id},
            aud={"essential": True, "value": self.issuer},
            exp={"essential": True},
            iat={"essential": True},
        )
        try:
            token = jwt.decode(secret, client.apple_public_key, algorithms=["ES256"])
            rules.validate(token.claims)
        except (JoseError, ValueError, TypeError):
            token = None
        if (
            token is None
            or token.header.get("kid") != client.key_id
            or token.claims["exp"] - token.claims["iat"] > APPLE_MAX_SECRET_LIFETIME
        ):
            raise _TokenError(401, "invalid_client", "the client secret JWT does not verify")

    def id_token(self, client: DevClient, user: TestUser, grant: CodeGrant) -> str:
        now = int(self.now())
        claims: dict[str, Any] = {
            "aud": client.client_id,
            "sub": subject_for(client, user),
            "iat": now,
            "exp": now + ID_TOKEN_TTL_SECONDS,
            "auth_time": grant.auth_time,
        }
        if grant.nonce is not None:
            claims["nonce"] = grant.nonce
        if client.shape == "apple":
            if "email" in grant.scopes:
                # Apple writes these booleans as strings.
                claims["email"] = user.email
                claims["email_verified"] = "true" if user.email_verified else "false"
                claims["is_private_email"] = "false"
            claims["nonce_supported"] = True
        else:
            claims["azp"] = client.client_id
            claims |= _standard_claims(user, grant.scopes)
        return self._signer.id_token(claims)  # iss: this issuer

    # -- resources: userinfo, profile ------------------------------------------------------

    def _bearer(self, request: web.Request) -> tuple[str, TokenGrant, DevClient] | None:
        """The access token of ``request``, its grant and its client (None: none valid)."""
        header = request.headers.get("Authorization", "")
        token = header[7:].strip() if header[:7].lower() == "bearer " else ""
        token = token or request.query.get("access_token", "")
        grant = self.grants.token(token) if token else None
        client = self.clients.get(grant.client_id) if grant is not None else None
        return (token, grant, client) if grant is not None and client is not None else None

    async def userinfo(self, request: web.Request) -> web.Response:
        found = self._bearer(request)
        if found is None or not found[2].issues_id_token:
            return web.json_response(
                {"error": "invalid_token", "error_description": "missing or invalid token"},
                status=401,
                headers={"WWW-Authenticate": 'Bearer error="invalid_token"'},
            )
        _, grant, client = found
        user = USERS_BY_KEY[grant.user_key]
        body = {"sub": subject_for(client, user)} | _standard_claims(user, grant.scopes)
        return web.json_response(body, headers={"Cache-Control": "no-store"})

    async def profile(self, request: web.Request) -> web.Response:
        """``/me?fields=id,name,email`` in the Graph API's manner: the access token and its
        ``appsecret_proof`` (HMAC-SHA256 of the token keyed by the app secret) are required."""
        found = self._bearer(request)
        if found is None or found[2].shape != "profile":
            return _graph_error("Invalid OAuth access token.", "OAuthException", 190)
        token, grant, client = found
        assert client.client_secret is not None
        proof = request.query.get("appsecret_proof", "")
        expected = appsecret_proof(client.client_secret, token)
        if not hmac.compare_digest(proof.encode(), expected.encode()):
            return _graph_error(
                "Invalid appsecret_proof provided in the API argument", "GraphMethodException", 100
            )
        user = USERS_BY_KEY[grant.user_key]
        values = {
            "id": subject_for(client, user),
            "name": user.name,
            "first_name": user.given_name,
            "last_name": user.family_name,
        }
        if "email" in grant.scopes:
            values["email"] = user.email
        wanted = [f for f in _scopes(request.query.get("fields", "id,name")) if f in PROFILE_FIELDS]
        body = {f: values[f] for f in ["id", *wanted] if f in values}
        return web.json_response(body, headers={"Cache-Control": "no-store"})


def _answer(back: _Return, fields: Mapping[str, str]) -> web.Response:
    answer = dict(fields)
    if back.state is not None:
        answer["state"] = back.state
    if back.response_mode == "form_post":
        return form_post_page(back.redirect_uri, answer)
    separator = "&" if "?" in back.redirect_uri else "?"
    location = back.redirect_uri + separator + urlencode(answer)
    return web.Response(status=302, headers={"Location": location, **CALLBACK_HEADERS})


def _denial(client: DevClient) -> dict[str, str]:
    if client.shape == "apple":  # what Sign in with Apple posts when the user cancels
        return {"error": "user_cancelled_authorize"}
    denial = {"error": "access_denied", "error_description": "The user denied the request"}
    if client.shape == "profile":  # the Graph API's extra fields
        denial |= {"error_reason": "user_denied", "error_code": "200"}
    return denial


def _check_pkce(grant: CodeGrant, verifier: str | None) -> None:
    """RFC 7636 4.6: S256(code_verifier) must equal the code_challenge of the request."""
    if grant.code_challenge is None:
        if verifier is not None:
            raise _TokenError(400, "invalid_grant", "no code_challenge was sent")
        return
    if verifier is None or not is_code_verifier(verifier):
        raise _TokenError(400, "invalid_grant", "code_verifier is missing or malformed")
    if not pkce_matches(verifier, grant.code_challenge):
        raise _TokenError(400, "invalid_grant", "code_verifier does not match")


def _standard_claims(user: TestUser, scopes: Iterable[str]) -> dict[str, Any]:
    scopes = set(scopes)
    claims: dict[str, Any] = {}
    if "email" in scopes:
        claims["email"] = user.email
        claims["email_verified"] = user.email_verified
    if "profile" in scopes:
        claims["name"] = user.name
        claims["given_name"] = user.given_name
        claims["family_name"] = user.family_name
    return claims


def _graph_error(message: str, kind: str, code: int) -> web.Response:
    return web.json_response(
        {"error": {"message": message, "type": kind, "code": code}}, status=400
    )
