"""The code exchange: the authorization code redeemed at the provider's token endpoint."""

from __future__ import annotations

from typing import Any

import attrs

from authgate.adapters.provider.credentials import ClientAuthenticator
from authgate.adapters.provider.fetch import ProviderHttp, oauth_error_code
from authgate.domain.model import ProviderToken
from authgate.ports.provider import ExchangeFailed


@attrs.frozen
class TokenResponse:
    """The tokens of the token endpoint's answer."""

    access_token: str = attrs.field(repr=False)
    id_token: str | None = attrs.field(repr=False)
    refresh_token: str | None = attrs.field(default=None, repr=False)

    def to_revoke(self) -> ProviderToken:
        """The token that ends the grant at the provider's revocation endpoint: the refresh
        token when one was issued (revoking it ends the grant, RFC 7009 2.1), else the
        access token."""
        if self.refresh_token:
            return ProviderToken(self.refresh_token, "refresh_token")
        return ProviderToken(self.access_token, "access_token")


async def redeem(
    http: ProviderHttp,
    client_auth: ClientAuthenticator,
    token_endpoint: str,
    code: str,
    redirect_uri: str,
    code_verifier: str | None,
) -> TokenResponse:
    """The tokens the provider answers for ``code``; raises ExchangeFailed."""
    credentials = client_auth.credentials()
    form = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": redirect_uri,
        **credentials.form,
    }
    if code_verifier is not None:
        form["code_verifier"] = code_verifier
    what = f"provider {http.name}: token endpoint"
    answer = await http.call(
        "POST", token_endpoint, what, ExchangeFailed, headers=credentials.headers, data=form
    )
    if not 200 <= answer.status < 300:
        error = oauth_error_code(answer.body)
        detail = f" (error={error})" if error else ""
        raise ExchangeFailed(f"{what} answered HTTP {answer.status}{detail}")
    return _token_response(answer.body, what)


def _token_response(body: Any, what: str) -> TokenResponse:
    """A successful answer's tokens: a bearer access token, perhaps an ID token."""
    if not isinstance(body, dict):
        raise ExchangeFailed(f"{what} answered a body that is not a JSON object")
    access_token = body.get("access_token")
    if not isinstance(access_token, str) or not access_token:
        raise ExchangeFailed(f"{what}: the answer has no access_token")
    token_type = body.get("token_type")
    if token_type is not None and (
        not isinstance(token_type, str) or token_type.lower() != "bearer"
    ):
        raise ExchangeFailed(f"{what}: the token type is not bearer")
    id_token = body.get("id_token")
    if id_token is not None and not isinstance(id_token, str):
        raise ExchangeFailed(f"{what}: id_token is not a string")
    refresh_token = body.get("refresh_token")
    return TokenResponse(
        access_token=access_token,
        id_token=id_token or None,
        refresh_token=refresh_token if isinstance(refresh_token, str) else None,
    )
