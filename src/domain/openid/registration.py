"""Clients kept in the database rather than the configuration file: registered at run time by
the clients themselves (OpenID Connect Dynamic Client Registration, RFC 7591, managed by RFC
7592) or added by the operator (``authgate clients add``).

A stored client is its RFC 7591 metadata, its secrets as salted digests, the digest of its
registration access token, and where and when it was registered. :func:`read_metadata` reads a
registration request's metadata under a :class:`RegistrationPolicy` (what a registrant may ask
for); its refusals are RFC 7591 section 3.2.2's."""

from __future__ import annotations

import base64
import datetime as dt
import json
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Literal
from urllib.parse import urlsplit

import attrs

from authgate.domain.openid.clients import (
    AUTH_METHODS,
    AUTHORIZATION_CODE_GRANT,
    GRANT_TYPES,
    SCOPE_TOKEN,
    SECRET_METHODS,
    SUPPORTED_SCOPES,
    AuthMethod,
    Client,
    SecretDigest,
    grant_types_problem,
    needs_redirect_uris,
    public_jwks_problem,
    redirect_uri_problem,
    resource_problem,
)
from authgate.domain.openid.refusals import OAuthError

# Where a stored client came from: its own registration request, or the operator's command.
StoredOrigin = Literal["registration", "operator"]
MAX_NAME_LENGTH = 100
MAX_URI_LENGTH = 2048
MAX_URIS = 20
RESPONSE_TYPE_CODE = "code"


class InvalidClientMetadata(OAuthError):
    """A metadata field's value is invalid, or not one the provider lets a registrant have
    (RFC 7591 section 3.2.2)."""

    error = "invalid_client_metadata"


class InvalidRedirectUri(InvalidClientMetadata):
    """A redirect URI is invalid (RFC 7591 section 3.2.2)."""

    error = "invalid_redirect_uri"


@attrs.frozen
class RegistrationPolicy:
    """What a registrant may ask for: the grant types and scopes it may have, whether it may
    be a confidential client, and the resource servers it may name (RFC 8707). The operator's
    own additions are read under :data:`OPERATOR_POLICY`, which allows everything the
    provider supports, a ``jwks_uri`` and a back-channel logout URI (both URLs the service
    calls, which a registrant must not choose)."""

    grant_types: frozenset[str]
    scopes: frozenset[str]
    confidential_clients: bool = True
    resources: frozenset[str] = frozenset()
    any_resource: bool = False
    any_scope: bool = False  # an API's own too, beyond ``scopes`` (the operator's)
    urls_called: bool = False  # jwks_uri and backchannel_logout_uri


OPERATOR_POLICY = RegistrationPolicy(
    grant_types=frozenset(GRANT_TYPES),
    scopes=frozenset(SUPPORTED_SCOPES),
    any_resource=True,
    any_scope=True,
    urls_called=True,
)


@attrs.frozen
class ClientMetadata:
    """A client's registered metadata, by RFC 7591's names, defaults filled."""

    redirect_uris: tuple[str, ...]
    token_endpoint_auth_method: AuthMethod
    grant_types: tuple[str, ...]
    response_types: tuple[str, ...]
    scope: tuple[str, ...]
    client_name: str | None = None
    client_uri: str | None = None
    logo_uri: str | None = None
    jwks_uri: str | None = None
    jwks: Mapping[str, Any] | None = None
    post_logout_redirect_uris: tuple[str, ...] = ()
    backchannel_logout_uri: str | None = None
    resources: tuple[str, ...] = ()

    @property
    def is_public(self) -> bool:
        return self.token_endpoint_auth_method == "none"  # noqa: S105 - a method

    @property
    def has_secret(self) -> bool:
        return self.token_endpoint_auth_method in SECRET_METHODS

    def document(self) -> dict[str, Any]:
        """The metadata as JSON members (RFC 7591 section 2), those without a value left out."""
        members: dict[str, Any] = {
            "redirect_uris": list(self.redirect_uris),
            "token_endpoint_auth_method": self.token_endpoint_auth_method,
            "grant_types": list(self.grant_types),
            "response_types": list(self.response_types),
            "scope": " ".join(self.scope),
            "client_name": self.client_name,
            "client_uri": self.client_uri,
            "logo_uri": self.logo_uri,
            "jwks_uri": self.jwks_uri,
            "jwks": dict(self.jwks) if self.jwks is not None else None,
            "post_logout_redirect_uris": list(self.post_logout_redirect_uris),
            "backchannel_logout_uri": self.backchannel_logout_uri,
            "resources": list(self.resources),
        }
        return {k: v for k, v in members.items() if v is not None and v != []}


@attrs.frozen
class StoredClient:
    """A client kept in the database: its metadata, its secrets (digests), the digest of its
    registration access token (None: added by the operator, managed by the CLI only)."""

    client_id: str
    metadata: ClientMetadata
    origin: StoredOrigin
    created_at: dt.datetime
    updated_at: dt.datetime
    secrets: tuple[SecretDigest, ...] = ()
    registration_token_hash: str | None = None

    def client(self) -> Client:
        """The client as every endpoint checks it (a stored client is never first party: a
        person always consents to it)."""
        m = self.metadata
        return Client(
            client_id=self.client_id,
            name=m.client_name or self.client_id,
            client_type="public" if m.is_public else "confidential",
            token_endpoint_auth_method=m.token_endpoint_auth_method,
            redirect_uris=m.redirect_uris,
            secrets=self.secrets,
            jwks_uri=m.jwks_uri,
            jwks=json.dumps(m.jwks) if m.jwks is not None else None,
            post_logout_redirect_uris=m.post_logout_redirect_uris,
            backchannel_logout_uri=m.backchannel_logout_uri,
            allowed_scopes=frozenset(m.scope),
            grant_types=frozenset(m.grant_types),
            resources=frozenset(m.resources),
            logo_uri=m.logo_uri,
            client_uri=m.client_uri,
            origin="registration",
        )


@attrs.frozen
class InitialAccessToken:
    """A token the operator hands a developer to register one client (RFC 7591 section 3):
    kept as its digest, usable once, until ``expires_at``."""

    token_hash: str
    created_at: dt.datetime
    expires_at: dt.datetime


# -- the stored form ------------------------------------------------------------------------


def secrets_text(secrets: Sequence[SecretDigest]) -> str:
    """The secrets' digests as stored (JSON, base64)."""
    return json.dumps(
        [{"salt": _b64(s.salt), "digest": _b64(s.digest)} for s in secrets], separators=(",", ":")
    )


def read_secrets(text: str) -> tuple[SecretDigest, ...]:
    return tuple(
        SecretDigest(base64.b64decode(s["salt"]), base64.b64decode(s["digest"]))
        for s in json.loads(text)
    )


def metadata_text(metadata: ClientMetadata) -> str:
    """The metadata as stored (its JSON document)."""
    return json.dumps(metadata.document(), separators=(",", ":"), sort_keys=True)


def read_stored_metadata(text: str) -> ClientMetadata:
    """Metadata as :func:`metadata_text` stored it (checked when it was registered)."""
    d = json.loads(text)
    return ClientMetadata(
        redirect_uris=tuple(d.get("redirect_uris", ())),
        token_endpoint_auth_method=d["token_endpoint_auth_method"],
        grant_types=tuple(d.get("grant_types", ())),
        response_types=tuple(d.get("response_types", ())),
        scope=tuple(d.get("scope", "").split()),
        client_name=d.get("client_name"),
        client_uri=d.get("client_uri"),
        logo_uri=d.get("logo_uri"),
        jwks_uri=d.get("jwks_uri"),
        jwks=d.get("jwks"),
        post_logout_redirect_uris=tuple(d.get("post_logout_redirect_uris", ())),
        backchannel_logout_uri=d.get("backchannel_logout_uri"),
        resources=tuple(d.get("resources", ())),
    )


def _b64(value: bytes) -> str:
    return base64.b64encode(value).decode("ascii")


# -- a registration request's metadata ------------------------------------------------------


def read_metadata(document: object, policy: RegistrationPolicy) -> ClientMetadata:
    """The metadata of a registration request (a JSON object), defaults filled (RFC 7591
    section 2: ``client_secret_basic``, the ``authorization_code`` grant, the ``code``
    response type; scopes: every scope the policy allows); members it does not know are
    ignored. :class:`InvalidRedirectUri` or :class:`InvalidClientMetadata` for what is wrong or
    what the policy does not allow."""
    if not isinstance(document, Mapping):
        raise InvalidClientMetadata("the body must be a JSON object of client metadata")
    return _Reader(document, policy).metadata()


@attrs.define
class _Reader:
    document: Mapping[str, Any]
    policy: RegistrationPolicy

    _not_offered: ClassVar[str] = "is not offered to registered clients"

    def metadata(self) -> ClientMetadata:
        method = self._method()
        public = method == "none"
        grant_types = self._grant_types(public)
        response_types = self._response_types(grant_types)
        redirect_uris = self._uris("redirect_uris", native=public, error=InvalidRedirectUri)
        if needs_redirect_uris(grant_types) and not redirect_uris:
            raise InvalidRedirectUri("redirect_uris: at least one for the authorization_code grant")
        jwks_uri, jwks = self._keys(method)
        return ClientMetadata(
            redirect_uris=redirect_uris,
            token_endpoint_auth_method=method,
            grant_types=grant_types,
            response_types=response_types,
            scope=self._scope(),
            client_name=self._name(),
            client_uri=self._web_url("client_uri"),
            logo_uri=self._web_url("logo_uri"),
            jwks_uri=jwks_uri,
            jwks=jwks,
            post_logout_redirect_uris=self._uris(
                "post_logout_redirect_uris", native=public, error=InvalidClientMetadata
            ),
            backchannel_logout_uri=self._called_url("backchannel_logout_uri"),
            resources=self._resources(),
        )

    def _text(self, name: str) -> str | None:
        value: str | None = self._get(name, str, "a string")
        return value

    def _get(self, name: str, kind: type | tuple[type, ...], what: str) -> Any:
        value = self.document.get(name)
        if value is not None and not isinstance(value, kind):
            raise InvalidClientMetadata(f"{name}: must be {what}")
        return value

    def _strings(self, name: str) -> list[str] | None:
        value: list[str] | None = self._get(name, list, "an array of strings")
        if value is not None and not all(isinstance(v, str) for v in value):
            raise InvalidClientMetadata(f"{name}: must be an array of strings")
        if value is not None and len(value) > MAX_URIS:
            raise InvalidClientMetadata(f"{name}: at most {MAX_URIS}")
        return value

    def _method(self) -> AuthMethod:
        method = self._get("token_endpoint_auth_method", str, "a string")
        if method is None:
            method = "client_secret_basic"
        if method not in AUTH_METHODS:
            raise InvalidClientMetadata(
                f"token_endpoint_auth_method: {method!r} is not one of {', '.join(AUTH_METHODS)}"
            )
        if method != "none" and not self.policy.confidential_clients:
            raise InvalidClientMetadata(
                "token_endpoint_auth_method: only public clients (none, with PKCE) may register"
            )
        chosen: AuthMethod = method
        return chosen

    def _grant_types(self, public: bool) -> tuple[str, ...]:
        types = self._strings("grant_types")
        if types is None:
            types = [AUTHORIZATION_CODE_GRANT]
        types = list(dict.fromkeys(types))
        problem = grant_types_problem(types, "public" if public else "confidential")
        if problem is not None:
            raise InvalidClientMetadata(f"grant_types: {problem}")
        refused = [t for t in types if t not in self.policy.grant_types]
        if refused:
            raise InvalidClientMetadata(f"grant_types: {refused[0]} {self._not_offered}")
        return tuple(types)

    def _response_types(self, grant_types: tuple[str, ...]) -> tuple[str, ...]:
        code = AUTHORIZATION_CODE_GRANT in grant_types
        types = self._strings("response_types")
        if types is None:
            return (RESPONSE_TYPE_CODE,) if code else ()
        if any(t != RESPONSE_TYPE_CODE for t in types):
            raise InvalidClientMetadata("response_types: only code is supported")
        if bool(types) != code:
            # RFC 7591 section 2.1: the code response type goes with the code grant.
            raise InvalidClientMetadata(
                "response_types: code with the authorization_code grant, and only with it"
            )
        return tuple(dict.fromkeys(types))

    def _uris(
        self, name: str, *, native: bool, error: type[InvalidClientMetadata]
    ) -> tuple[str, ...]:
        uris = self._strings(name) or []
        for uri in uris:
            problem = (
                f"at most {MAX_URI_LENGTH} characters"
                if len(uri) > MAX_URI_LENGTH
                else redirect_uri_problem(uri, native=native)
            )
            if problem is not None:
                raise error(f"{name}: {uri!r} {problem}")
        return tuple(dict.fromkeys(uris))

    def _scope(self) -> tuple[str, ...]:
        text = self._get("scope", str, "a string of space-separated scopes")
        if text is None:
            oidc = [s for s in SUPPORTED_SCOPES if s in self.policy.scopes]
            return (*oidc, *sorted(self.policy.scopes.difference(SUPPORTED_SCOPES)))
        # RFC 7591 section 3.2.1 lets the server replace what it will not grant: the scopes the
        # policy allows are kept and the answer says so (an MCP client asking offline_access
        # of a policy without it still registers); none of them is a refusal.
        asked = list(dict.fromkeys(text.split()))
        scopes = tuple(
            s
            for s in asked
            if s in self.policy.scopes or (self.policy.any_scope and SCOPE_TOKEN.fullmatch(s))
        )
        if not scopes:
            raise InvalidClientMetadata(
                f"scope: names none a registered client may have "
                f"({', '.join(sorted(self.policy.scopes))})"
            )
        return scopes

    def _name(self) -> str | None:
        name = self._text("client_name")
        if name is None:
            return None
        if not name.strip() or len(name) > MAX_NAME_LENGTH or not name.isprintable():
            raise InvalidClientMetadata(f"client_name: 1 to {MAX_NAME_LENGTH} printable characters")
        return name

    def _web_url(self, name: str) -> str | None:
        url = self._text(name)
        if url is None:
            return None
        parts = urlsplit(url)
        if (
            len(url) > MAX_URI_LENGTH
            or parts.scheme != "https"
            or not parts.hostname
            or "@" in parts.netloc
            or any(c.isspace() for c in url)
        ):
            raise InvalidClientMetadata(f"{name}: must be an https URL")
        return url

    def _called_url(self, name: str) -> str | None:
        """A URL the service itself calls (a key set, a logout endpoint): https, or http on
        loopback, and only where the policy allows (never a registrant's: the service would
        call a host it chose, inside the network perhaps)."""
        url = self._text(name)
        if url is None:
            return None
        if not self.policy.urls_called:
            raise InvalidClientMetadata(f"{name} {self._not_offered}: the operator adds it")
        parts = urlsplit(url)
        loopback = parts.scheme == "http" and redirect_uri_problem(url, native=False) is None
        if loopback and "#" not in url and len(url) <= MAX_URI_LENGTH:
            return url  # a service on the same machine
        return self._web_url(name)

    def _keys(self, method: AuthMethod) -> tuple[str | None, Mapping[str, Any] | None]:
        jwks_uri = self._called_url("jwks_uri")
        jwks = self._get("jwks", dict, "a JWK Set (a JSON object)")
        if method != "private_key_jwt":
            if jwks_uri is not None or jwks is not None:
                raise InvalidClientMetadata("jwks_uri and jwks are the keys of private_key_jwt")
            return None, None
        if (jwks_uri is None) == (jwks is None):
            raise InvalidClientMetadata("private_key_jwt needs jwks or jwks_uri (one of them)")
        if jwks is not None:
            problem = public_jwks_problem(jwks)
            if problem is not None:
                raise InvalidClientMetadata(f"jwks: {problem}")
        return jwks_uri, jwks

    def _resources(self) -> tuple[str, ...]:
        """The resource servers named, each offered; without ``resources`` (which RFC 7591
        does not define, so an MCP client never sends it), every one the policy offers, as
        its scopes are: the client then asks for one by ``resource`` (RFC 8707)."""
        if "resources" not in self.document:
            return tuple(sorted(self.policy.resources))
        resources = self._strings("resources") or []
        for resource in resources:
            problem = resource_problem(resource)
            if problem is not None:
                raise InvalidClientMetadata(f"resources: {resource!r} {problem}")
            if not (self.policy.any_resource or resource in self.policy.resources):
                raise InvalidClientMetadata(f"resources: {resource!r} {self._not_offered}")
        return tuple(dict.fromkeys(resources))
