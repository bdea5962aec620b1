"""``/demo``: a page to try sign-in, registration, linking, unlinking and signing out.

The page is one HTML file and one script; it learns the configured providers from
``/demo/config.json`` and calls the service's API with the session cookie: its own, or, with
``apiBase`` set, the service on another origin (CORS with credentials, ``app.allowed_origins``). The
configuration's ``app.url`` points at it in development, so the callback's redirects
(``/login``, ``/onboarding``, ``/dashboard``) land on it.

``/demo/app`` is a second application, served when the configuration registers the client
``demo-app`` (``config.default.yaml`` does): an OpenID Connect relying party in one script that
signs in through ``/oauth2/authorize`` (single sign-on with the demo page's session), redeems
the code with PKCE at ``/oauth2/token`` as a public client, and logs out through
``/oauth2/logout``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol
from urllib.parse import urlsplit

from aiohttp import web

from authgate.domain.login_proof import proves_login_time
from authgate.domain.redirects import origin
from authgate.entrypoints.demo.assets import (
    html_page,
    json_document,
    read_static,
    static_file,
    stylesheet,
)

DEMO_PATH = "/demo"
DEMO_APP_PATH = f"{DEMO_PATH}/app"
DEMO_APP_CALLBACK = f"{DEMO_APP_PATH}/callback"
# The client id under which the configuration registers the demo's second application.
DEMO_CLIENT_ID = "demo-app"
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)


class Provider(Protocol):
    """What the page shows of a provider (its ``ProviderSettings`` have it)."""

    @property
    def issuer(self) -> str | None: ...
    @property
    def token_endpoint_auth(self) -> str: ...
    @property
    def states_auth_time(self) -> bool | None: ...


def _kind(provider: Provider) -> str:
    if provider.token_endpoint_auth == "apple_client_secret_jwt":  # noqa: S105
        return "signed-JWT client secret, answer by form_post"
    if provider.issuer is None:
        return "OAuth 2.0, identity from a profile request"
    return "OpenID Connect, ID token"


def demo_settings(
    pages: dict[str, str],
    providers: Mapping[str, tuple[Provider, list[str]]],
    passkey_rp_id: str | None,
    apps: bool,
    api_base: str = "",
) -> dict[str, Any]:
    """What the page needs to know: its pages, where the API is (``apiBase``: "" for the
    service serving the page itself, else the service's origin when the page is served as
    the application on another origin) and, per provider, its allowed callbacks."""
    return {
        "base": DEMO_PATH,
        "apiBase": api_base,
        # Whether the service lists the person's applications (/v1/account/apps).
        "apps": apps,
        # Passkeys: on, and the RP ID (browsers run the ceremonies only on pages under it).
        "passkeys": {"rpId": passkey_rp_id} if passkey_rp_id is not None else None,
        "pages": pages,
        "providers": [
            {
                "id": name,
                "label": name.replace("_", " ").replace("-", " ").title(),
                "kind": _kind(provider),
                # Whether a sign-in through it proves a recent login (step-up offers it).
                "provesLogin": proves_login_time(provider.issuer, provider.states_auth_time),
                "callbackUrls": callback_urls,
            }
            for name, (provider, callback_urls) in providers.items()
        ],
    }


def mount_demo(
    app: web.Application,
    app_url: str,
    settings: dict[str, Any],
    app_settings: dict[str, Any] | None,
) -> None:
    """Add ``/demo``, its pages, assets and settings (and the second application's) to ``app``."""
    assets = {name: read_static(name) for name in ("demo.js", "favicon.svg")}
    assets["demo.css"] = stylesheet()
    # Cookies belong to one host name: when app.url names this demo on another host
    # (127.0.0.1 vs localhost), continue there, where the callbacks will send the browser.
    app_on_demo = urlsplit(app_url).path.rstrip("/") == DEMO_PATH
    page = html_page(read_static("demo.html"), CSP, origin(app_url) if app_on_demo else None)
    app.router.add_get(DEMO_PATH, page)
    app.router.add_get(f"{DEMO_PATH}/", page)
    for path in sorted(set(settings["pages"].values())):
        app.router.add_get(DEMO_PATH + "/" + path.strip("/"), page)
    app.router.add_get(f"{DEMO_PATH}/config.json", json_document(settings))
    for name, body in assets.items():
        app.router.add_get(f"{DEMO_PATH}/assets/{name}", static_file(name, body))
    # Pages without an icon of their own (the development provider's) get the browser's
    # default request for one answered, not a 404 in the console.
    app.router.add_get("/favicon.ico", static_file("favicon.svg", assets["favicon.svg"]))
    if app_settings is not None:
        _mount_demo_app(app, app_settings)


def _registered(uris: list[str], path: str) -> str | None:
    return next((u for u in uris if urlsplit(u).path == path), None)


def demo_app_settings(
    redirect_uris: list[str], post_logout_redirect_uris: list[str], allowed_scopes: list[str]
) -> dict[str, Any] | None:
    """The second application's settings, from the client ``demo-app``'s registration: its
    client id and the registered addresses it uses (None when it does not register the demo's
    callback)."""
    redirect = _registered(redirect_uris, DEMO_APP_CALLBACK)
    if redirect is None:
        return None
    after_logout = _registered(post_logout_redirect_uris, DEMO_APP_PATH)
    scopes = [s for s in ("openid", "profile", "email") if s in allowed_scopes]
    return {
        "clientId": DEMO_CLIENT_ID,
        "redirectUri": redirect,
        "postLogoutRedirectUri": after_logout or "",
        "scope": " ".join(scopes),
        "home": DEMO_APP_PATH,
        "callbackPath": DEMO_APP_CALLBACK,
    }


def _mount_demo_app(app: web.Application, settings: dict[str, Any]) -> None:
    # Its tokens live in one origin's storage and its callback is registered on one origin:
    # continue there.
    page = html_page(read_static("app.html"), CSP, origin(settings["redirectUri"]))
    app.router.add_get(DEMO_APP_PATH, page)
    app.router.add_get(DEMO_APP_CALLBACK, page)
    app.router.add_get(f"{DEMO_APP_PATH}/config.json", json_document(settings))
    app.router.add_get(f"{DEMO_PATH}/assets/app.js", static_file("app.js", read_static("app.js")))
