"""The authorization request to a provider (its URL) and the check of its response's ``iss``."""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

from authgate.adapters.provider.discovery import EndpointResolver
from authgate.adapters.provider.id_token import loggable
from authgate.adapters.provider.settings import ProviderSettings
from authgate.domain.errors import ProviderUnavailable
from authgate.ports.provider import ExchangeFailed, VerificationFailed


def authorization_url(
    settings: ProviderSettings,
    endpoint: str,
    *,
    state: str,
    redirect_uri: str,
    code_challenge: str | None,
    nonce: str | None,
    reauthenticate: bool,
    login_hint: str | None,
) -> str:
    """The URL that sends the browser to the provider's authorization ``endpoint``
    (:meth:`~authgate.ports.provider.IdentityProvider.authorization_url`)."""
    params: dict[str, str] = {
        "client_id": settings.client_id,
        "redirect_uri": redirect_uri,
        "response_type": "code",
        "scope": " ".join(settings.scopes),
        "state": state,
    }
    if code_challenge is not None:
        params["code_challenge"] = code_challenge
        params["code_challenge_method"] = "S256"
    if nonce is not None:
        params["nonce"] = nonce
    if settings.response_mode == "form_post":
        params["response_mode"] = "form_post"
    params |= _reauthentication(settings, reauthenticate)
    if login_hint and settings.uses_id_token:
        params["login_hint"] = login_hint
    try:
        return with_query(endpoint, params)
    except ValueError:
        raise ProviderUnavailable(
            f"provider {settings.name}: the authorization endpoint is not a valid URL"
        ) from None


def _reauthentication(settings: ProviderSettings, reauthenticate: bool) -> dict[str, str]:
    """The parameters asking the provider to authenticate the person again, or to say when
    it last did."""
    if reauthenticate and settings.uses_id_token:
        # OIDC Core 3.1.2.1: authenticate again, whatever session the provider holds. Only
        # the ID token's signed auth_time proves that it did: the browser can strip these.
        return {"prompt": "login", "max_age": "0"}
    if settings.uses_id_token and settings.signin_max_age_seconds:
        # With max_age, auth_time is a required claim (OIDC Core 3.1.2.1): every sign-in
        # then proves when the person logged in.
        return {"max_age": str(settings.signin_max_age_seconds)}
    if reauthenticate and settings.profile_endpoint is not None:
        # Facebook Login: ask for the password again, even with a facebook session.
        return {"auth_type": "reauthenticate"}
    return {}


async def check_response_issuer(
    settings: ProviderSettings, endpoints: EndpointResolver, iss: str | None
) -> None:
    """RFC 9207 (mix-up defence): the authorization response's ``iss`` is this provider's.

    A given ``iss`` needs no discovery: it is compared with the configured issuer, which
    discovery has checked to be the document's. Only a missing ``iss`` asks whether the
    provider promises to send it.
    """
    expected = settings.issuer
    if iss is not None:
        if expected is None:
            raise VerificationFailed(
                f"provider {settings.name}: the authorization response has iss {loggable(iss)} "
                "but this provider has no issuer (mix-up?)"
            )
        if iss != expected:  # exactly (RFC 9207 2.4): no normalisation
            raise VerificationFailed(
                f"provider {settings.name}: the authorization response iss {loggable(iss)} "
                "is not the provider's issuer (mix-up?)"
            )
        return
    if settings.require_response_iss:
        raise VerificationFailed(
            f"provider {settings.name}: the authorization response has no iss (required)"
        )
    if expected is not None and (await endpoints.get_or(ExchangeFailed)).response_iss_supported:
        raise VerificationFailed(
            f"provider {settings.name}: the authorization response has no iss, "
            "which the provider's discovery document promises"
        )


def with_query(url: str, params: Mapping[str, str]) -> str:
    """``url`` with ``params`` added to its query (replacing same-named ones), %20 for spaces."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError("not an absolute http(s) URL")
    kept = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k not in params]
    query = urlencode([*kept, *params.items()], quote_via=quote)
    return urlunsplit((parts.scheme, parts.netloc, parts.path, query, parts.fragment))
