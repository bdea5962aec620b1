"""The clients registered at the development identity provider, made from the configured providers.

Every configured provider whose issuer (or authorization endpoint) lies under the development
provider's base address is one of its clients, in the shape its configuration implies:

* ``oidc`` (``google``): an issuer, a client secret; the token answer carries an ID token;
* ``profile`` (``facebook``): no issuer, a ``profile_endpoint``; the identity comes from the
  profile request, which must carry ``appsecret_proof``;
* ``apple``: ``token_endpoint_auth: apple_client_secret_jwt``; the client secret is an ES256
  JWT that the provider verifies with the public half of ``private_key_file``; the answer comes
  back by ``form_post`` and carries the first-time ``user`` JSON.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Literal

import attrs
from joserfc.errors import JoseError
from joserfc.jwk import ECKey

from authgate.adapters.provider.settings import ProviderSettings
from authgate.entrypoints.http.openid.pages import provider_label

Shape = Literal["oidc", "profile", "apple"]
# The configured providers: name -> (its settings, its callback URLs).
Providers = Mapping[str, tuple[ProviderSettings, list[str]]]

# Token-endpoint client authentication methods (method names, not secrets).
CLIENT_SECRET_POST = "client_secret_post"  # noqa: S105
CLIENT_SECRET_BASIC = "client_secret_basic"  # noqa: S105
APPLE_CLIENT_SECRET_JWT = "apple_client_secret_jwt"  # noqa: S105


class ClientSetupError(Exception):
    """A client of the development provider cannot be set up; the text names the key."""


@attrs.frozen
class DevClient:
    """One registered client."""

    provider: str
    client_id: str
    shape: Shape
    redirect_uris: frozenset[str]
    client_secret: str | None = attrs.field(default=None, repr=False)
    team_id: str | None = None
    key_id: str | None = None
    apple_public_key: ECKey | None = attrs.field(default=None, repr=False, eq=False)

    @property
    def issues_id_token(self) -> bool:
        return self.shape != "profile"

    @property
    def label(self) -> str:
        return provider_label(self.provider)


def is_dev_provider(provider: ProviderSettings, issuer: str) -> bool:
    """Whether the configured provider points at the development provider."""
    if provider.issuer is not None:
        return provider.issuer.rstrip("/") == issuer.rstrip("/")
    endpoint = provider.authorization_endpoint or ""
    return endpoint.startswith(issuer.rstrip("/") + "/")


def shape_of(provider: ProviderSettings) -> Shape:
    if provider.token_endpoint_auth == APPLE_CLIENT_SECRET_JWT:
        return "apple"
    if provider.issuer is None:
        return "profile"
    return "oidc"


def dev_clients(providers: Providers, issuer: str) -> dict[str, DevClient]:
    """The development provider's clients by client id."""
    check_client_ids(providers, issuer)
    clients: dict[str, DevClient] = {}
    for name, (provider, callback_urls) in providers.items():
        if not is_dev_provider(provider, issuer):
            continue
        shape = shape_of(provider)
        redirect_uris = frozenset(callback_urls)
        public_key = None
        if shape == "apple":
            assert provider.private_key_file is not None  # the configuration checks it
            public_key = apple_public_key(name, provider.private_key_file)
        clients[provider.client_id] = DevClient(
            provider=name,
            client_id=provider.client_id,
            shape=shape,
            redirect_uris=redirect_uris,
            client_secret=provider.client_secret,
            team_id=provider.team_id,
            key_id=provider.key_id,
            apple_public_key=public_key,
        )
    return clients


def check_client_ids(providers: Providers, issuer: str) -> None:
    """Refuse two providers of the development provider with one client id (it tells its
    clients apart by it); reads no file, so that ``authgate config check`` runs it too."""
    seen: set[str] = set()
    for name, (provider, _) in providers.items():
        if not is_dev_provider(provider, issuer):
            continue
        if provider.client_id in seen:
            raise ClientSetupError(
                f"providers.{name}.client_id: another development provider client uses "
                f"{provider.client_id!r}"
            )
        seen.add(provider.client_id)


def apple_public_key(name: str, private_key_file: str) -> ECKey:
    """The public half of the client's ES256 key, to verify its client-secret JWTs."""
    try:
        pem = Path(private_key_file).read_bytes()
    except OSError as e:
        raise ClientSetupError(
            f"providers.{name}.private_key_file: cannot read {private_key_file}: {e.strerror or e}"
        ) from None
    try:
        key = ECKey.import_key(pem)
    except (JoseError, ValueError, TypeError):
        raise ClientSetupError(
            f"providers.{name}.private_key_file: not an EC private key in PEM"
        ) from None
    return ECKey.import_key(key.as_pem(private=False))
