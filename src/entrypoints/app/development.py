"""What the service adds for people trying it: the development identity provider (``/dev/idp``,
only with ``dev.identity_provider: true``, which the configuration refuses outside development),
the demo page (``/demo``, in development only) and the API documentation page (``/docs``).
"""

from __future__ import annotations

import logging
from urllib.parse import urlsplit

from aiohttp import web

from authgate.adapters.provider.settings import ProviderSettings
from authgate.entrypoints.app.config import (
    Config,
    StartupError,
    callback_urls_of,
    local_url,
    openid_issuer,
    passkey_rp_id,
)
from authgate.entrypoints.demo import DEMO_PATH, mount_docs, site

log = logging.getLogger("authgate")


def enabled(config: Config) -> bool:
    """Whether the demo page and the development provider are served: only in development (a
    ``test`` environment is a deployment under test, with only what production has)."""
    return config.environment == "development"


def check(config: Config) -> None:
    """What :func:`mount` refuses in the configuration (the development provider's issuer,
    its clients' ids), checked without reading or making any file: ``authgate config check``
    runs it as ``serve`` does, before anything is opened."""
    if not (config.dev.identity_provider and enabled(config)):
        return
    from authgate.entrypoints import devidp  # development only: not imported in production
    from authgate.entrypoints.devidp.clients import check_client_ids

    try:
        check_client_ids(_providers(config), dev_issuer(config))
    except devidp.ClientSetupError as e:
        raise StartupError(str(e)) from None


def prepare(config: Config) -> None:
    """Create the development provider's Apple key file(s) when missing: run as the resources
    are opened, since the Apple adapter reads its key file as it is made."""
    if not (config.dev.identity_provider and enabled(config)):
        return
    from authgate.entrypoints import devidp  # development only: not imported in production

    try:
        created = devidp.create_missing_apple_keys(_providers(config), dev_issuer(config))
    except devidp.ClientSetupError as e:
        raise StartupError(str(e)) from None
    except OSError as e:
        raise StartupError(
            f"dev: cannot create the development Apple key file: {e.strerror or e}"
        ) from None
    for path in created:
        log.info("created a development Apple key at %s", path)


def mount(app: web.Application, config: Config) -> None:
    """Add the development provider, the demo page and the docs page to ``app``."""
    mount_docs(app)
    if enabled(config):
        _mount_demo(app, config)
        # The address `authgate serve` prints leads somewhere a person can start from.
        app.router.add_get("/", _to_demo)
        log.info("demo page at %s%s, API documentation at /docs", openid_issuer(config), DEMO_PATH)
    if config.dev.identity_provider and enabled(config):
        from authgate.entrypoints import devidp  # development only: not imported in production

        try:
            issuer = dev_issuer(config)
            provider = devidp.DevIdentityProvider(
                issuer, devidp.dev_clients(_providers(config), issuer)
            )
        except devidp.ClientSetupError as e:
            raise StartupError(str(e)) from None
        provider.mount(app)
        clients = ", ".join(c.provider for c in provider.clients.values()) or "none"
        log.warning(
            "development identity provider at %s (clients: %s); never use it in production",
            provider.issuer,
            clients,
        )


def dev_issuer(config: Config) -> str:
    """The development provider's issuer: ``dev.issuer``, else ``{local_url}/dev/idp``."""
    from authgate.entrypoints.devidp import BASE_PATH, ClientSetupError  # development only

    if config.dev.issuer is not None:
        issuer = config.dev.issuer.rstrip("/")
        parts = urlsplit(issuer)
        if parts.scheme not in ("http", "https") or not parts.netloc or parts.path != BASE_PATH:
            raise ClientSetupError(f"dev.issuer: must be an http(s) URL ending with {BASE_PATH}")
        return issuer
    return local_url(config) + BASE_PATH


def _providers(config: Config) -> dict[str, tuple[ProviderSettings, list[str]]]:
    """The providers as devidp and the demo take them: name -> (settings, callback URLs)."""
    return {n: (p, callback_urls_of(config, n)) for n, p in config.providers.items()}


def _mount_demo(app: web.Application, config: Config) -> None:
    pages = {
        "login": config.app.login_path,
        "onboarding": config.app.onboarding_path,
        "dashboard": config.app.dashboard_path,
    }
    rp_id = passkey_rp_id(config) if config.passkeys.enabled else None
    settings = site.demo_settings(pages, _providers(config), rp_id, apps=bool(config.clients))
    app_settings = None
    if (client := config.clients.get(site.DEMO_CLIENT_ID)) is not None:
        app_settings = site.demo_app_settings(
            client.redirect_uris, client.post_logout_redirect_uris, client.allowed_scopes
        )
    site.mount_demo(app, config.app.url, settings, app_settings)


async def _to_demo(request: web.Request) -> web.StreamResponse:
    raise web.HTTPFound(DEMO_PATH)
