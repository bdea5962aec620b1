"""The fake identity provider: an aiohttp application on loopback serving the three provider
shapes of the spec (google-like OIDC, facebook-like OAuth 2.0, apple-like) with real keys.

Each provider lives under ``{base_url}/{name}``::

    GET  /{name}/.well-known/openid-configuration   (OIDC and apple shapes)
    GET  /{name}/authorize                          signs in ``next_user`` (or ``login_as``)
    POST /{name}/token
    GET  /{name}/jwks                               (OIDC and apple shapes)
    GET  /{name}/userinfo                           (OIDC shape)
    GET  /{name}/me                                 (OAuth shape; checks appsecret_proof)
    POST /{name}/revoke                             token revocation, Apple-, Google- or
                                                    RFC 7009-style (``revocation_style``)
"""

from __future__ import annotations

import asyncio
import hmac
import html
import json
import tempfile
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import aiohttp
from aiohttp import web

from authgate.adapters.provider import ProviderSettings
from tests.fakeidp.browser import callback_from_form, callback_from_redirect
from tests.fakeidp.clock import SettableClock
from tests.fakeidp.model import (
    AuthorizeRefused,
    Callback,
    FakeUser,
    ReceivedRevocation,
    RecordedRequest,
    RevocationStyle,
    Shape,
    TokenMode,
)
from tests.fakeidp.provider import ClientAuthError, FakeProvider, appsecret_proof

DEFAULT_PROVIDERS: Mapping[str, Shape] = {
    "google": Shape.OIDC,
    "facebook": Shape.OAUTH,
    "apple": Shape.APPLE,
}
SCOPES = {
    Shape.OIDC: ["openid", "profile", "email"],
    Shape.OAUTH: ["public_profile", "email"],
    Shape.APPLE: ["name", "email"],
}


class FakeIdP:
    """A fake identity provider served on ``127.0.0.1`` on a free port.

    ``async with FakeIdP(clock=clock) as fake:`` starts and stops it. ``fake.google``,
    ``fake.facebook``, ``fake.apple`` (or ``fake["name"]``) are the providers' knobs
    (:class:`~tests.fakeidp.provider.FakeProvider`).
    """

    def __init__(
        self,
        *,
        clock: SettableClock | None = None,
        providers: Mapping[str, Shape] = DEFAULT_PROVIDERS,
    ) -> None:
        self.clock = clock or SettableClock()
        self.providers = {
            name: FakeProvider(name, shape, self.clock.timestamp)
            for name, shape in providers.items()
        }
        self.base_url = ""
        self._runner: web.AppRunner | None = None
        self._browser: aiohttp.ClientSession | None = None
        self._closing = asyncio.Event()
        self._tmp: tempfile.TemporaryDirectory[str] | None = None

    async def _held(self, seconds: float | None, release: asyncio.Event | None = None) -> None:
        """Waits ``seconds`` (None: no limit) or until ``release`` is set, and never past the
        fake's closing (a held answer must not delay the test's teardown)."""
        waits = [asyncio.ensure_future(self._closing.wait())]
        if release is not None:
            waits.append(asyncio.ensure_future(release.wait()))
        try:
            await asyncio.wait(waits, timeout=seconds, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for wait in waits:
                wait.cancel()

    # -- lifecycle --------------------------------------------------------------------------

    async def start(self) -> FakeIdP:
        app = web.Application()
        app.router.add_get("/{p}/.well-known/openid-configuration", self._discovery)
        app.router.add_get("/{p}/authorize", self._authorize)
        app.router.add_post("/{p}/token", self._token)
        app.router.add_get("/{p}/jwks", self._jwks)
        app.router.add_get("/{p}/.well-known/risc-configuration", self._risc_configuration)
        app.router.add_get("/{p}/userinfo", self._userinfo)
        app.router.add_get("/{p}/me", self._profile)
        app.router.add_post("/{p}/revoke", self._revoke)
        self._runner = web.AppRunner(app, shutdown_timeout=1.0, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = self._runner.addresses[0][1]
        self.base_url = f"http://127.0.0.1:{port}"
        for provider in self.providers.values():
            provider.base_url = self.base_url
        self._browser = aiohttp.ClientSession()
        return self

    async def close(self) -> None:
        self._closing.set()
        if self._browser is not None:
            await self._browser.close()
        if self._runner is not None:
            await self._runner.cleanup()
        if self._tmp is not None:
            self._tmp.cleanup()

    async def __aenter__(self) -> FakeIdP:
        return await self.start()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    # -- access -----------------------------------------------------------------------------

    def __getitem__(self, name: str) -> FakeProvider:
        return self.providers[name]

    @property
    def google(self) -> FakeProvider:
        return self.providers["google"]

    @property
    def facebook(self) -> FakeProvider:
        return self.providers["facebook"]

    @property
    def apple(self) -> FakeProvider:
        return self.providers["apple"]

    def config(self, name: str) -> dict[str, Any]:
        """The provider's entry of the YAML ``providers`` section (``ProviderConfig`` keys),
        pointing at this fake. Apple's private key is written to a temporary file."""
        p = self.providers[name]
        common: dict[str, Any] = {"client_id": p.client_id, "scopes": list(SCOPES[p.shape])}
        if p.shape is Shape.OIDC:
            return {
                **common,
                "issuer": p.issuer,
                "client_secret": p.client_secret,
                "token_endpoint_auth": p.token_endpoint_auth,
                "id_token_algorithms": ["RS256"],
            }
        if p.shape is Shape.OAUTH:
            return {
                **common,
                "authorization_endpoint": p.authorization_endpoint,
                "token_endpoint": p.token_endpoint,
                "profile_endpoint": p.profile_endpoint,
                "client_secret": p.client_secret,
                "token_endpoint_auth": p.token_endpoint_auth,
            }
        return {
            **common,
            "issuer": p.issuer,
            "token_endpoint_auth": "apple_client_secret_jwt",
            "team_id": p.team_id,
            "key_id": p.key_id,
            "private_key_file": str(self._apple_key_file(p)),
            "response_mode": "form_post",
            "id_token_algorithms": ["ES256"],
        }

    def settings(self, name: str, **overrides: Any) -> ProviderSettings:
        """Adapter settings for the provider, pointing at this fake; ``overrides`` replace
        fields (for example ``timeout_seconds=0.3``)."""
        values = self.config(name)
        key_file = values.pop("private_key_file", None)
        if key_file is not None:
            values["private_key_pem"] = Path(key_file).read_text()
        values.update(overrides)
        return ProviderSettings(name=name, **values)

    def _apple_key_file(self, provider: FakeProvider) -> Path:
        assert provider.apple_client_key is not None
        if self._tmp is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="fakeidp-")
        path = Path(self._tmp.name) / f"{provider.name}-AuthKey_{provider.key_id}.p8"
        if not path.exists():
            path.write_bytes(provider.apple_client_key.as_pem(private=True))
            path.chmod(0o600)
        return path

    # -- the browser step -------------------------------------------------------------------

    async def authorize(
        self, authorization_url: str, *, user: FakeUser | None = None, deny: bool = False
    ) -> Callback:
        """Play the browser at the provider: open ``authorization_url``, sign in as ``user``
        (default: the provider's ``next_user``) or deny, and return where the provider sends
        the browser back (following a ``form_post`` by reading its form).

        Raises :class:`AuthorizeRefused` when the fake refuses the request outright."""
        assert self._browser is not None, "start the fake first"
        parts = urlsplit(authorization_url)
        query = parse_qsl(parts.query, keep_blank_values=True)
        if user is not None:
            provider = self.providers[parts.path.strip("/").split("/")[0]]
            provider.users[user.sub] = user
            query.append(("login_as", user.sub))
        if deny:
            query.append(("fake_deny", "1"))
        url = urlunsplit(parts._replace(query=urlencode(query)))
        async with self._browser.get(url, allow_redirects=False) as response:
            body = await response.text()
            if response.status in (302, 303):
                return callback_from_redirect(response.headers["Location"])
            if response.status == 200 and "<form" in body:
                return callback_from_form(body)
            raise AuthorizeRefused(f"HTTP {response.status}: {body[:200]}")

    # -- handlers ---------------------------------------------------------------------------

    async def _provider(self, request: web.Request) -> FakeProvider:
        provider = self.providers.get(request.match_info["p"])
        if provider is None:
            raise web.HTTPNotFound()
        form: dict[str, str] = {}
        if request.method == "POST":
            form = {k: v for k, v in (await request.post()).items() if isinstance(v, str)}
        provider.requests.append(
            RecordedRequest(
                method=request.method,
                path=request.path,
                query=dict(request.query),
                form=form,
                headers=dict(request.headers),
            )
        )
        provider.hits[request.path.rsplit("/", 1)[-1]] += 1
        return provider

    async def _discovery(self, request: web.Request) -> web.Response:
        p = await self._provider(request)
        if p.shape is Shape.OAUTH:
            raise web.HTTPNotFound()
        if p.discovery_down:
            return web.Response(status=500, text="discovery is down")
        document: dict[str, Any] = {
            "issuer": p.issuer,
            "authorization_endpoint": p.authorization_endpoint,
            "token_endpoint": p.token_endpoint,
            "jwks_uri": p.jwks_uri,
            "response_types_supported": ["code"],
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": [p.alg],
            "scopes_supported": SCOPES[p.shape],
            "token_endpoint_auth_methods_supported": [p.token_endpoint_auth],
            "code_challenge_methods_supported": ["S256"],
        }
        if p.advertise_revocation:
            document["revocation_endpoint"] = p.revocation_endpoint
        if p.shape is Shape.OIDC:
            document["userinfo_endpoint"] = p.userinfo_endpoint
        else:
            document["response_modes_supported"] = ["query", "fragment", "form_post"]
        document.update(p.discovery_overrides)
        return web.json_response(document)

    async def _risc_configuration(self, request: web.Request) -> web.Response:
        """The transmitter configuration of Cross-Account Protection (as Google's, its issuer
        with a trailing slash), naming the provider's key set."""
        p = await self._provider(request)
        if p.shape is not Shape.OIDC:
            raise web.HTTPNotFound()
        return web.json_response(
            {
                "issuer": p.issuer + "/",
                "jwks_uri": p.jwks_uri,
                "delivery_methods_supported": [
                    "https://schemas.openid.net/secevent/risc/delivery-method/push"
                ],
            }
        )

    async def _jwks(self, request: web.Request) -> web.Response:
        p = await self._provider(request)
        if p.shape is Shape.OAUTH:
            raise web.HTTPNotFound()
        if p.jwks_delay_seconds:
            await self._held(p.jwks_delay_seconds)
        if p.jwks_release is not None:
            await self._held(None, p.jwks_release)
        if p.jwks_down:
            return web.Response(status=500, text="jwks is down")
        return web.json_response(p.jwks())

    async def _authorize(self, request: web.Request) -> web.Response:
        p = await self._provider(request)
        q = request.query
        if q.get("client_id") != p.client_id:
            return web.Response(status=400, text="unknown client_id")
        redirect_uri = q.get("redirect_uri")
        if not redirect_uri or (
            p.allowed_redirect_uris is not None and redirect_uri not in p.allowed_redirect_uris
        ):
            return web.Response(status=400, text="redirect_uri missing or not registered")
        form_post = q.get("response_mode") == "form_post"
        state = q.get("state")

        def back(params: dict[str, str]) -> web.Response:
            if state is not None:
                params["state"] = state
            if form_post:
                return _auto_post_form(redirect_uri, params)
            raise web.HTTPFound(_add_query(redirect_uri, params))

        if q.get("response_type") != "code":
            return back({"error": "unsupported_response_type"})
        challenge = q.get("code_challenge")
        if challenge is not None and q.get("code_challenge_method") != "S256":
            return back({"error": "invalid_request", "error_description": "S256 only"})
        if p.shape is Shape.APPLE and q.get("scope") and not form_post:
            return back({"error": "invalid_request", "error_description": "form_post needed"})
        if p.deny or q.get("fake_deny"):
            return back({"error": "access_denied", "error_description": "The user denied."})
        login_as = q.get("login_as")
        user = p.users.get(login_as, p.next_user) if login_as else p.next_user
        code = p.issue_code(
            redirect_uri=redirect_uri,
            user=user,
            nonce=q.get("nonce"),
            code_challenge=challenge,
            scope=q.get("scope", ""),
            auth_time=p.log_in(dict(q)),
        )
        params = {"code": code}
        if p.shape is Shape.APPLE and p.first_authorization(user.sub) and p.send_user_json:
            apple_user: dict[str, Any] = {
                "name": {"firstName": user.first_name, "lastName": user.last_name}
            }
            if user.email:
                apple_user["email"] = user.email
            params["user"] = json.dumps(apple_user)
        return back(params)

    async def _token(self, request: web.Request) -> web.Response:
        p = await self._provider(request)
        form = p.requests[-1].form
        match p.token_mode:
            case TokenMode.DOWN:
                return web.Response(status=500, text="internal error")
            case TokenMode.GARBAGE:
                return web.Response(
                    status=200, text="<html>this is not json", content_type="text/html"
                )
            case TokenMode.ERROR_ECHO:
                return web.json_response(
                    {
                        "error": "invalid_grant",
                        "error_description": (
                            f"code {form.get('code')} secret {form.get('client_secret')}"
                        ),
                    },
                    status=400,
                )
            case TokenMode.SLOW:
                await self._held(p.slow_seconds, p.token_release)
        if request.query:  # credentials never travel in the URL
            return _oauth_error("invalid_request", 400)
        if request.content_type != "application/x-www-form-urlencoded":
            return _oauth_error("invalid_request", 400)
        try:
            p.authenticate_client(form, request.headers.get("Authorization"))
        except ClientAuthError:
            return _oauth_error("invalid_client", 401)
        try:
            issued = p.redeem(form)
        except ValueError as e:
            return _oauth_error(str(e), 400)
        body: dict[str, Any] = {
            "access_token": p.new_access_token(issued.user),
            "token_type": "Bearer",
            "expires_in": 3600,
            "scope": issued.scope,
        }
        if p.shape is not Shape.OAUTH:
            body["id_token"] = p.mint_id_token(
                issued.user, nonce=issued.nonce, tamper=p.tamper, auth_time=issued.auth_time
            )
        if p.issue_refresh_tokens:
            body["refresh_token"] = p.new_refresh_token(issued.user)
        match p.token_mode:
            case TokenMode.NO_ACCESS_TOKEN:
                del body["access_token"]
            case TokenMode.NO_ID_TOKEN:
                body.pop("id_token", None)
            case TokenMode.NOT_BEARER:
                body["token_type"] = "mac"
        return web.json_response(body, headers={"Cache-Control": "no-store"})

    async def _revoke(self, request: web.Request) -> web.Response:
        p = await self._provider(request)
        form = p.requests[-1].form
        authorization = request.headers.get("Authorization")
        if p.revocation_down:
            return web.Response(status=503, text="revocation is down")
        if request.query or request.content_type != "application/x-www-form-urlencoded":
            return _oauth_error("invalid_request", 400)
        token = form.get("token")
        if not token:
            return _oauth_error("invalid_request", 400)
        match p.revocation_style:
            case RevocationStyle.APPLE:
                # Apple: client_id, client_secret (the ES256 JWT), token, token_type_hint.
                if form.get("token_type_hint") not in ("refresh_token", "access_token"):
                    return _oauth_error("invalid_request", 400)
                try:
                    p.authenticate_client(form, authorization)
                except ClientAuthError:
                    return _oauth_error("invalid_client", 400)
            case RevocationStyle.GOOGLE:
                # Google: the token alone; no client credentials.
                if set(form) - {"token"} or authorization:
                    return _oauth_error("invalid_request", 400)
            case RevocationStyle.RFC7009:
                try:
                    p.authenticate_client(form, authorization)
                except ClientAuthError:
                    return _oauth_error("invalid_client", 401)
        known = p.revoke(token)
        p.revocations.append(
            ReceivedRevocation(
                token=token,
                hint=form.get("token_type_hint"),
                known=known,
                form_keys=frozenset(form),
                authorization=authorization,
            )
        )
        if not known and p.revocation_style is RevocationStyle.GOOGLE:
            return _oauth_error("invalid_token", 400)
        return web.Response(status=200)

    def _bearer_user(self, p: FakeProvider, request: web.Request) -> tuple[str, FakeUser] | None:
        auth = request.headers.get("Authorization", "")
        token = auth[7:] if auth[:7].lower() == "bearer " else request.query.get("access_token")
        if token and token in p.access_tokens:
            return token, p.access_tokens[token]
        return None

    async def _userinfo(self, request: web.Request) -> web.Response:
        p = await self._provider(request)
        if p.shape is not Shape.OIDC:
            raise web.HTTPNotFound()
        if p.userinfo_down:
            return web.Response(status=500, text="userinfo is down")
        found = self._bearer_user(p, request)
        if found is None:
            return web.json_response({"error": "invalid_token"}, status=401)
        claims = p.claims_for(found[1], None)
        keep = ("sub", "email", "email_verified", "name")
        return web.json_response({k: claims[k] for k in keep if k in claims})

    async def _profile(self, request: web.Request) -> web.Response:
        p = await self._provider(request)
        if p.shape is not Shape.OAUTH:
            raise web.HTTPNotFound()
        if p.profile_down:
            return web.Response(status=500, text="profile is down")
        found = self._bearer_user(p, request)
        if found is None:
            return _graph_error("Invalid OAuth access token.", 190, 401)
        token, user = found
        proof = request.query.get("appsecret_proof", "")
        if not hmac.compare_digest(
            proof, appsecret_proof(p.proof_secret or p.client_secret, token)
        ):
            return _graph_error("Invalid appsecret_proof provided in the API argument", 100, 400)
        fields = request.query.get("fields", "id,name").split(",")
        values = {"id": user.sub, "name": user.name, "email": user.email}
        profile = {f: values[f] for f in fields if values.get(f) is not None}
        profile["id"] = user.sub
        return web.json_response(profile)


def _add_query(url: str, params: Mapping[str, str]) -> str:
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True) + list(params.items())
    return urlunsplit(parts._replace(query=urlencode(query)))


def _auto_post_form(action: str, params: Mapping[str, str]) -> web.Response:
    inputs = "\n".join(
        f'<input type="hidden" name="{html.escape(k)}" value="{html.escape(v)}">'
        for k, v in params.items()
    )
    page = (
        '<!DOCTYPE html><html><body onload="document.forms[0].submit()">'
        f'<form method="post" action="{html.escape(action)}">{inputs}</form></body></html>'
    )
    return web.Response(text=page, content_type="text/html")


def _oauth_error(error: str, status: int) -> web.Response:
    return web.json_response({"error": error}, status=status)


def _graph_error(message: str, code: int, status: int) -> web.Response:
    return web.json_response(
        {"error": {"message": message, "type": "OAuthException", "code": code}}, status=status
    )
