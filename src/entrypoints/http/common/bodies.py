"""Response bodies of the sign-in application, with the spec's field names (2.2 to 2.5), and
the account's; :func:`app_errors` declares the spec's error body for statuses."""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import parse_qsl

import attrs

from authgate.domain.openid.refusals import OAuthInvalidRequest
from authgate.domain.passkeys import Passkey
from authgate.entrypoints.rest import wire_field

if TYPE_CHECKING:
    from attrs import AttrsInstance

B = TypeVar("B", bound="AttrsInstance")


def from_record(body: type[B], record: object, **others: Any) -> B:
    """A body whose fields are ``record``'s attributes of the same names, but ``others``."""
    names = [f.name for f in attrs.fields(body) if f.name not in others]
    return body(**{n: getattr(record, n) for n in names}, **others)


@attrs.frozen
class ProviderDetails:
    """Spec 2.4."""

    provider: str
    authorization_url: str = wire_field("authorizationUrl")
    client_id: str = wire_field("clientId")
    scopes: list[str] = wire_field("scopes")
    response_type: str = wire_field("responseType")
    state: str = wire_field("state")


@attrs.frozen
class LinkedProvider:
    """Spec 2.2: never a provider access or refresh token."""

    provider: str
    provider_id: str = wire_field("providerId")
    linked_at: dt.datetime = wire_field("linkedAt")
    is_primary: bool = wire_field("isPrimary")


@attrs.frozen
class LinkedProviders:
    """Spec 2.3."""

    providers: list[LinkedProvider]


@attrs.frozen
class AccountDetails:
    """The caller's account. ``emailVerified`` is true only when the provider of the primary
    identity said the email address is verified; false when it said false, did not say (the
    facebook-shaped profile endpoint) or gave no address."""

    id: str
    created_at: dt.datetime = wire_field("createdAt")
    providers: list[LinkedProvider] = wire_field("providers")
    email_verified: bool = wire_field("emailVerified")
    email: str | None = None
    name: str | None = None
    last_sign_in_at: dt.datetime | None = wire_field("lastSignInAt", default=None)


@attrs.frozen
class SessionInfo:
    """One live session of the caller (never its token)."""

    id: str
    provider: str
    created_at: dt.datetime = wire_field("createdAt")
    expires_at: dt.datetime = wire_field("expiresAt")
    current: bool = wire_field("current")
    user_agent: str | None = wire_field("userAgent", default=None)
    address: str | None = None
    # Whether the sign-in proved when the person authenticated (a provider's signed
    # auth_time, a passkey): a page may offer a passkey after one that proved nothing.
    auth_time_proven: bool = wire_field("authTimeProven", default=False)
    passkey_id: str | None = wire_field("passkeyId", default=None)


@attrs.frozen
class SessionList:
    sessions: list[SessionInfo]


@attrs.frozen
class AuditRecord:
    """One audited event of the account (a sign-in or an account change)."""

    at: dt.datetime
    provider: str
    outcome: str
    address: str | None = None
    user_agent: str | None = wire_field("userAgent", default=None)


@attrs.frozen
class SessionRecordExport:
    """One session the service recorded, revoked and expired ones included (never a token)."""

    id: str
    provider: str
    created_at: dt.datetime = wire_field("createdAt")
    expires_at: dt.datetime = wire_field("expiresAt")
    auth_time: dt.datetime = wire_field("authTime")
    revoked_at: dt.datetime | None = wire_field("revokedAt", default=None)
    user_agent: str | None = wire_field("userAgent", default=None)
    address: str | None = None
    passkey_id: str | None = wire_field("passkeyId", default=None)


@attrs.frozen
class AppInfo:
    """An application of the caller (:class:`~authgate.services.openid.apps.AccountApp`)."""

    client_id: str = wire_field("clientId")
    scopes: list[str] = wire_field("scopes")
    granted_at: dt.datetime = wire_field("grantedAt")
    granted: bool = wire_field("granted")
    live_token_families: int = wire_field("liveTokenFamilies")
    name: str | None = None
    last_used_at: dt.datetime | None = wire_field("lastUsedAt", default=None)


@attrs.frozen
class AppList:
    apps: list[AppInfo]


@attrs.frozen
class GrantExport:
    """One consent the caller gave an application, as stored."""

    client_id: str = wire_field("clientId")
    scopes: list[str] = wire_field("scopes")
    granted_at: dt.datetime = wire_field("grantedAt")
    last_used_at: dt.datetime | None = wire_field("lastUsedAt", default=None)


@attrs.frozen
class PasskeyInfo:
    """One passkey of the account (never its key), and by which session, address and browser
    it was added (absent for passkeys added before that was kept)."""

    id: str
    name: str
    created_at: dt.datetime = wire_field("createdAt")
    backed_up: bool = wire_field("backedUp")
    backup_eligible: bool = wire_field("backupEligible")
    transports: list[str] = wire_field("transports")
    aaguid: str = wire_field("aaguid")
    last_used_at: dt.datetime | None = wire_field("lastUsedAt", default=None)
    added_by_session: str | None = wire_field("addedBySession", default=None)
    added_from_address: str | None = wire_field("addedFromAddress", default=None)
    added_from_user_agent: str | None = wire_field("addedFromUserAgent", default=None)

    @classmethod
    def of(cls, p: Passkey) -> PasskeyInfo:
        """What the account's owner sees of a passkey (never its key)."""
        return from_record(cls, p, transports=list(p.transports))


@attrs.frozen
class PasskeyExport:
    """One passkey as stored: what the list shows, and the credential's public parts
    (base64url); the service holds no private value of a passkey."""

    passkey: PasskeyInfo
    credential_id: str = wire_field("credentialId")
    public_key: str = wire_field("publicKey")
    sign_count: int = wire_field("signCount")


@attrs.frozen
class AccountExportBody:
    """Everything stored about the caller."""

    account: AccountDetails
    sessions: list[SessionRecordExport]
    events: list[AuditRecord]
    grants: list[GrantExport]
    passkeys: list[PasskeyExport] = wire_field("passkeys", factory=list)


@attrs.frozen
class AppError:
    """Spec 2.5."""

    error: str
    message: str


def app_errors(*statuses: int) -> dict[int, type]:
    """An operation's ``responses`` that answer the spec's error body."""
    return dict.fromkeys(statuses, AppError)


@attrs.frozen
class PublicKey:
    """A public JWK: ``crv``, ``x``, ``y`` for an EC or OKP key, ``n``, ``e`` for an RSA key."""

    kty: str
    kid: str
    use: str | None = None
    alg: str | None = None
    crv: str | None = None
    x: str | None = None
    y: str | None = None
    n: str | None = None
    e: str | None = None


@attrs.frozen
class Jwks:
    keys: list[PublicKey]


@attrs.frozen
class ProviderMetadata:
    """The OpenID Provider's discovery document (OpenID Connect Discovery 1.0 section 3,
    RFC 8414, and the logout and RFC 9207 members)."""

    issuer: str
    authorization_endpoint: str
    token_endpoint: str
    userinfo_endpoint: str
    jwks_uri: str
    revocation_endpoint: str
    introspection_endpoint: str
    end_session_endpoint: str
    scopes_supported: list[str]
    response_types_supported: list[str]
    response_modes_supported: list[str]
    grant_types_supported: list[str]
    subject_types_supported: list[str]
    id_token_signing_alg_values_supported: list[str]
    token_endpoint_auth_methods_supported: list[str]
    token_endpoint_auth_signing_alg_values_supported: list[str]
    revocation_endpoint_auth_methods_supported: list[str]
    revocation_endpoint_auth_signing_alg_values_supported: list[str]
    introspection_endpoint_auth_methods_supported: list[str]
    introspection_endpoint_auth_signing_alg_values_supported: list[str]
    code_challenge_methods_supported: list[str]
    claims_supported: list[str]
    prompt_values_supported: list[str]
    authorization_response_iss_parameter_supported: bool
    backchannel_logout_supported: bool
    backchannel_logout_session_supported: bool
    request_parameter_supported: bool
    request_uri_parameter_supported: bool
    claims_parameter_supported: bool
    # RFC 8628 section 4.
    device_authorization_endpoint: str | None = None
    # The OAuth working group's client ID metadata document draft: present (true) only when a
    # client_id may be the https URL of a document describing the client.
    client_id_metadata_document_supported: bool | None = None
    # RFC 7591's endpoint, only while dynamic client registration is enabled.
    registration_endpoint: str | None = None


@attrs.frozen
class OAuthErrorBody:
    """The OpenID Provider's error (RFC 6749 section 5.2, RFC 6750 section 3)."""

    error: str
    error_description: str | None = None


FORM = "application/x-www-form-urlencoded"
MAX_FORM_FIELDS = 32


def oauth_form(content_type: str, body: bytes) -> dict[str, str]:
    """An OAuth request's form fields: one sent twice is ``invalid_request`` (RFC 6749 section
    3.2), one without a value is left out (section 3.1)."""
    form, _ = oauth_form_repeating(content_type, body, "")
    return form


def oauth_form_repeating(
    content_type: str, body: bytes, repeatable: str
) -> tuple[dict[str, str], list[str]]:
    """:func:`oauth_form`, but the field ``repeatable`` (RFC 8707's ``resource``) may be sent
    several times: its values apart, in order."""
    if content_type != FORM:
        raise OAuthInvalidRequest(f"the request body must be {FORM}")
    try:
        text = body.decode("utf-8")
        pairs = parse_qsl(text, keep_blank_values=False, max_num_fields=MAX_FORM_FIELDS)
    except (UnicodeDecodeError, ValueError):
        raise OAuthInvalidRequest("the form is malformed or has too many fields") from None
    form: dict[str, str] = {}
    repeated: list[str] = []
    for name, value in pairs:
        if name == repeatable:
            repeated.append(value)
            continue
        if name in form:
            raise OAuthInvalidRequest(f"{name} is given more than once")
        form[name] = value
    return form, repeated
