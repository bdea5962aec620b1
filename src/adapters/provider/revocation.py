"""Token revocation at a provider (RFC 7009; Apple's /auth/revoke; Google's revoke)."""

from __future__ import annotations

from authgate.adapters.http_fetch import ProviderHttp, oauth_error_code
from authgate.adapters.provider.code_exchange import ClientAuthenticator
from authgate.domain.model import ProviderToken
from authgate.ports.provider_tokens import RevocationFailed, Revoked


async def revoke(
    http: ProviderHttp,
    endpoint: str | None,
    token: ProviderToken,
    client_auth: ClientAuthenticator | None,
) -> Revoked:
    """Revoke ``token`` at the revocation ``endpoint``, authenticated as the client when
    ``client_auth`` is given; raises RevocationFailed."""
    what = f"provider {http.name}: revocation endpoint"
    if endpoint is None:
        raise RevocationFailed(f"{what}: none configured or discovered")
    form = {"token": token.value}
    headers: dict[str, str] = {}
    if client_auth is not None:
        credentials = client_auth.credentials()
        form |= {"token_type_hint": token.hint, **credentials.form}
        headers = credentials.headers
    answer = await http.call("POST", endpoint, what, RevocationFailed, headers=headers, data=form)
    if 200 <= answer.status < 300:
        return Revoked.REVOKED
    error = oauth_error_code(answer.body)
    # Google answers 400 invalid_token for a token it no longer knows (expired, revoked
    # already); RFC 7009 2.2 answers 200 for it. Either way there is nothing to revoke.
    if answer.status == 400 and error in ("invalid_token", "invalid_grant"):
        return Revoked.ALREADY_INVALID
    detail = f" (error={error})" if error else ""
    raise RevocationFailed(f"{what} answered HTTP {answer.status}{detail}")
