"""RP-initiated logout (OpenID Connect RP-Initiated Logout 1.0) for authgate as an OpenID
Provider: the end-session endpoint's decisions (:meth:`RpInitiatedLogout.decide`).
"""

from __future__ import annotations

import enum
import logging

import attrs

from authgate.domain.openid.clients import Client
from authgate.domain.openid.logout import post_logout_redirect
from authgate.ports.jose import InvalidToken, TokenSigner, VerifiedIdToken
from authgate.services.openid.client_directory import ClientDirectory

log = logging.getLogger("authgate.openid_logout")


@attrs.frozen
class EndSessionRequest:
    """The parameters of a request to the end-session endpoint that mean something here
    (``ui_locales`` and any other are ignored)."""

    id_token_hint: str | None = None
    client_id: str | None = None
    post_logout_redirect_uri: str | None = None
    state: str | None = None


@attrs.frozen
class BrowserSession:
    """The browser's live authgate session."""

    account_id: str
    session_id: str


class Verdict(enum.Enum):
    END = "end"  # end the browser's session now
    CONFIRM = "confirm"  # ask the person before ending anything
    NOTHING_TO_END = "nothing_to_end"  # the browser holds no live session


@attrs.frozen
class EndSessionDecision:
    """What a request to the end-session endpoint earns.

    ``redirect``: where the browser goes once signed out (the registered URI with ``state``),
    None for the signed-out page. ``client``: the registered client the request identified, if
    any. ``problem``: why the request cannot be acted on as sent (shown to the person, never
    the request's own text)."""

    verdict: Verdict
    redirect: str | None = None
    client: Client | None = None
    problem: str | None = None


# What a request's checks found: its hint, its client, its redirect, and its problem (if any).
_Checked = tuple[VerifiedIdToken | None, Client | None, str | None, str | None]


@attrs.define(eq=False, repr=False, slots=False)
class RpInitiatedLogout:
    """Decides what a request to the end-session endpoint earns (RP-Initiated Logout 1.0)."""

    clients: ClientDirectory
    signer: TokenSigner

    async def decide(
        self,
        request: EndSessionRequest,
        browser: BrowserSession | None,
        *,
        session_visible: bool,
        confirmed: bool = False,
    ) -> EndSessionDecision:
        """``browser``: the live session the request's cookie names, if any;
        ``session_visible``: whether the browser would have sent that cookie (a cross-site
        POST carries no SameSite=Lax cookie: no session seen proves nothing then);
        ``confirmed``: the person confirmed on the confirmation page (its token checked).

        The session ends at once only for a request whose ``id_token_hint`` this provider
        issued in the very session the browser holds; any other request, and any request
        that fails a check, is confirmed by the person first. The browser goes back to the
        client only when the request is valid throughout: a hint the provider signed for a
        registered client (or that client's ``client_id``), the same client in both when
        both are sent, and one of its registered ``post_logout_redirect_uris`` exactly."""
        hint, client, redirect, problem = await self._check(request)  # with a problem, no redirect
        if confirmed:
            verdict = Verdict.END if browser is not None else Verdict.NOTHING_TO_END
        elif (
            problem is None
            and browser is not None
            and hint is not None
            and (hint.session_id, hint.subject) == (browser.session_id, browser.account_id)
        ):
            verdict = Verdict.END
        elif browser is None and session_visible:
            verdict = Verdict.NOTHING_TO_END
        else:
            verdict = Verdict.CONFIRM
        return EndSessionDecision(verdict, redirect, client, problem)

    async def _check(self, request: EndSessionRequest) -> _Checked:
        hint: VerifiedIdToken | None = None
        client: Client | None = None
        if request.id_token_hint is not None:
            try:
                hint = self.signer.verify_id_token(request.id_token_hint)
            except InvalidToken as e:
                log.info("end-session request with an id_token_hint refused: %s", e)
                return None, None, None, _BAD_HINT
            if not [a for a in hint.audiences if await self.clients.find(a) is not None]:
                # The service's session tokens are signed by the same keys: their audience is
                # never a client's.
                return None, None, None, _BAD_HINT
        if request.client_id is not None:
            client = await self.clients.find(request.client_id)
            if client is None:
                return hint, None, None, _UNKNOWN_CLIENT
            if hint is not None and client.client_id not in hint.audiences:
                return hint, None, None, _CLIENT_MISMATCH
        elif hint is not None:
            client = await self._client_of(hint)
        uri = request.post_logout_redirect_uri
        if uri is None:
            return hint, client, None, None
        if client is None:
            return hint, None, None, _WHO_ASKS
        if not client.post_logout_redirect_uri_registered(uri):
            return hint, client, None, _UNREGISTERED_URI
        return hint, client, post_logout_redirect(uri, request.state), None

    async def _client_of(self, hint: VerifiedIdToken) -> Client | None:
        """The client an ID token was issued to: its one audience, or its ``azp`` among
        several."""
        audiences = hint.audiences
        if len(audiences) == 1:
            return await self.clients.find(audiences[0])
        azp = hint.claims.get("azp")
        if isinstance(azp, str) and azp in audiences:
            return await self.clients.find(azp)
        return None


_BAD_HINT = "The application's sign-out request could not be verified."
_UNKNOWN_CLIENT = "The sign-out request names an application that is not registered."
_CLIENT_MISMATCH = "The sign-out request names two different applications."
_WHO_ASKS = "The sign-out request does not say which application sent it."
_UNREGISTERED_URI = "The application asked to return to an address it has not registered."
