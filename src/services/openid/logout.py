"""Logout both ways for authgate as an OpenID Provider.

**Back-channel logout** (OpenID Connect Back-Channel Logout 1.0). An authgate session is the
single sign-on session of the clients that received tokens in it; whatever ends it (a sign-out,
a revocation, an unlink, a deletion, a provider's event, the operator) ends it through the
sessions service, which calls :meth:`BackchannelLogout.ended` inside the same unit of work: the
session's token families are revoked, and each client of the session with a
``backchannel_logout_uri`` gets an outbox row. A session that ends by expiring is ended the
same way by the worker (:meth:`LogoutTokenWorker.end_expired`): nothing revokes it, so the
worker takes the recorded clients of sessions that expired unrevoked, once across instances.
After the commit :class:`LogoutTokenWorker` (an outbox worker, started with the application on
every instance) claims the rows with a lease and POSTs a newly signed logout token to each
client, retried with backoff until the client answers 2xx or the row is older than the maximum
age; each delivery and each give-up is audited.

**RP-initiated logout** (OpenID Connect RP-Initiated Logout 1.0). :class:`RpInitiatedLogout`
decides what a request to the end-session endpoint earns: end the browser's session at once
(a valid ``id_token_hint`` of this very session), ask the person first, or nothing to end; and
whether the browser may then go back to the client's registered ``post_logout_redirect_uri``
(only for a request that identifies a registered client and names one of its URIs exactly).
"""

from __future__ import annotations

import datetime as dt
import enum
import logging
from collections.abc import Mapping, Sequence

import attrs

from authgate.domain.model import Outcome
from authgate.domain.openid.clients import Client, ClientRegistry
from authgate.domain.openid.logout import PendingLogout, logout_token_claims, post_logout_redirect
from authgate.domain.secrets import random_uuid_hex
from authgate.ports.clock import Clock
from authgate.ports.jose import InvalidToken, TokenSigner, VerifiedIdToken
from authgate.ports.openid import LogoutDeliveryFailed, LogoutTokenSender
from authgate.ports.unit_of_work import Transaction, UnitOfWork
from authgate.services.audit import audit_event
from authgate.services.outbox import OutboxInUnits, OutboxPolicy, OutboxWorker

log = logging.getLogger("authgate.openid_logout")
security_log = logging.getLogger("authgate.security")

# The expired sessions' client rows one unit of work takes at most (a few milliseconds).
EXPIRED_BATCH = 200


@attrs.frozen
class LogoutPolicy(OutboxPolicy):
    """The configurable rules of the logout tokens' delivery (``logout_tokens.*``): a client
    that is down for a while is told once it is back, within a day."""

    retry_initial: dt.timedelta = dt.timedelta(seconds=5)
    retry_max: dt.timedelta = dt.timedelta(minutes=10)
    give_up_after: dt.timedelta = dt.timedelta(hours=24)


class BackchannelLogout:
    """What ends with an authgate session for the clients of the provider
    (:class:`~authgate.services.sessions.SessionEndings`), on the worker that tells them (and
    knows them)."""

    def __init__(self, worker: LogoutTokenWorker) -> None:
        self.worker = worker
        self.clients = worker.clients
        # Reading the session's clients is needed only when one of them may be told.
        self._any_listener = any(c.backchannel_logout_uri for c in self.clients)

    async def ended(
        self, tx: Transaction, ended: Mapping[str, Sequence[str]], now: dt.datetime
    ) -> None:
        """Inside the unit of work that ended the sessions (by account): their token families
        die with them, and every client that received tokens in one of them and registered a
        ``backchannel_logout_uri`` is owed a logout token, due at once."""
        queued = 0
        for account_id, session_ids in ended.items():
            for session_id in session_ids:
                await tx.refresh_tokens.revoke_for_session(session_id, now)
                if not self._any_listener:
                    continue
                served = await tx.session_clients.for_session(session_id)
                queued += await owe_logouts(
                    tx, self.clients, account_id, session_id, [c.client_id for c in served], now
                )
        if queued:
            log.info("back-channel logouts queued: %d", queued)

    def committed(self) -> None:
        """Sessions ended and committed: the worker looks at once."""
        self.worker.wake()


async def owe_logouts(
    tx: Transaction,
    clients: ClientRegistry,
    account_id: str,
    session_id: str,
    client_ids: Sequence[str],
    now: dt.datetime,
) -> int:
    """In ``tx``: a logout token, due at once, for each of ``client_ids`` (clients that
    received tokens in the ended session) registered with a ``backchannel_logout_uri``; how
    many."""
    queued = 0
    for client_id in client_ids:
        client = clients.get(client_id)
        if client is None or client.backchannel_logout_uri is None:
            continue
        await tx.logout_outbox.add(
            PendingLogout(
                id=random_uuid_hex(),
                client_id=client_id,
                account_id=account_id,
                session_id=session_id,
                created_at=now,
                next_attempt_at=now,
            )
        )
        queued += 1
    return queued


class LogoutTokenWorker(OutboxWorker[PendingLogout]):
    """Delivers the logout tokens of the outbox (one task per running instance).

    Before each look at the outbox it ends, for the provider, the sessions that ended by
    expiring (:meth:`end_expired`): nothing else notices them, since an expired session is
    simply no longer live."""

    name = "back-channel logout worker"

    def __init__(
        self,
        *,
        clients: ClientRegistry,
        units: UnitOfWork,
        signer: TokenSigner,
        sender: LogoutTokenSender,
        clock: Clock,
        policy: LogoutPolicy,
    ) -> None:
        super().__init__(
            outbox=OutboxInUnits(units, lambda tx: tx.logout_outbox), clock=clock, policy=policy
        )
        self.clients = clients
        self.units = units
        self.signer = signer
        self.sender = sender

    async def run_once(self) -> int:
        await self.end_expired()
        return await super().run_once()

    async def end_expired(self) -> int:
        """What ends with a session that expired (its clients recorded, never revoked), once
        per session whichever instance sees it first: its token families are revoked and each
        client that received tokens in it and registered a ``backchannel_logout_uri`` is owed
        a logout token, in one unit of work with taking its clients' rows. How many clients'
        rows were taken."""
        taken_in_all = 0
        while True:
            now = self.clock.now()
            queued = 0
            async with self.units.begin() as tx:
                taken = await tx.session_clients.take_expired(now, EXPIRED_BATCH)
                by_session: dict[tuple[str, str], list[str]] = {}
                for served in taken:
                    key = (served.account_id, served.session_id)
                    by_session.setdefault(key, []).append(served.client_id)
                for (account_id, session_id), client_ids in by_session.items():
                    await tx.refresh_tokens.revoke_for_session(session_id, now)
                    queued += await owe_logouts(
                        tx, self.clients, account_id, session_id, client_ids, now
                    )
            taken_in_all += len(taken)
            if by_session:
                log.info(
                    "sessions ended by expiry: %d; back-channel logouts queued: %d",
                    len(by_session),
                    queued,
                )
            if len(taken) < EXPIRED_BATCH:
                return taken_in_all

    async def attempt(self, pending: PendingLogout) -> None:
        client = self.clients.get(pending.client_id)
        uri = client.backchannel_logout_uri if client is not None else None
        if uri is None:
            reason = "the client is no longer registered with a backchannel_logout_uri"
            await self._finish(pending, Outcome.BACKCHANNEL_LOGOUT_FAILED, reason)
            return
        now = self.clock.now()
        token = self.signer.logout_token(logout_token_claims(pending, now, random_uuid_hex()))
        try:
            await self.sender.send(uri, token)
        except LogoutDeliveryFailed as e:
            await self._failed(pending, str(e))
            return
        detail = f"after {pending.attempts + 1} attempt(s)"
        await self._finish(pending, Outcome.BACKCHANNEL_LOGOUT_SENT, detail)

    async def _failed(self, pending: PendingLogout, error: str) -> None:
        due = await self.put_back(pending, error)
        attempts = pending.attempts + 1
        if due is None:
            await self._finish(
                pending,
                Outcome.BACKCHANNEL_LOGOUT_FAILED,
                f"given up after {attempts} attempt(s): {error}",
            )
            return
        log.warning(
            "back-channel logout of session %s at client %s failed (attempt %d, next at %s): %s",
            pending.session_id,
            pending.client_id,
            attempts,
            due.isoformat(timespec="seconds"),
            error,
        )

    async def _finish(self, pending: PendingLogout, outcome: Outcome, detail: str) -> None:
        """Remove the row with its audit event: delivered, or given up."""
        text = f"session {pending.session_id}: {detail}"
        async with self.units.begin() as tx:
            await tx.logout_outbox.complete(pending.id)
            await tx.events.record(
                audit_event(
                    self.clock.now(), pending.client_id, outcome, None, pending.account_id, text
                )
            )
        if outcome is Outcome.BACKCHANNEL_LOGOUT_FAILED:
            security_log.error(
                "security event: back-channel logout of session %s of account %s at client %s "
                "failed permanently: %s",
                pending.session_id,
                pending.account_id,
                pending.client_id,
                detail,
            )


# -- RP-initiated logout --------------------------------------------------------------------


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


@attrs.frozen
class _Checked:
    hint: VerifiedIdToken | None
    client: Client | None
    redirect: str | None
    problem: str | None


class RpInitiatedLogout:
    """Decides what a request to the end-session endpoint earns (RP-Initiated Logout 1.0)."""

    def __init__(self, clients: ClientRegistry, signer: TokenSigner) -> None:
        self.clients = clients
        self.signer = signer

    def decide(
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
        checked = self._check(request)
        redirect = checked.redirect
        if confirmed:
            verdict = Verdict.END if browser is not None else Verdict.NOTHING_TO_END
            return EndSessionDecision(verdict, redirect, checked.client, checked.problem)
        if checked.problem is not None:
            if browser is None and session_visible:
                return EndSessionDecision(
                    Verdict.NOTHING_TO_END, None, checked.client, checked.problem
                )
            return EndSessionDecision(Verdict.CONFIRM, None, checked.client, checked.problem)
        hint = checked.hint
        if (
            browser is not None
            and hint is not None
            and hint.session_id == browser.session_id
            and hint.subject == browser.account_id
        ):
            return EndSessionDecision(Verdict.END, redirect, checked.client)
        if browser is None and session_visible:
            return EndSessionDecision(Verdict.NOTHING_TO_END, redirect, checked.client)
        return EndSessionDecision(Verdict.CONFIRM, redirect, checked.client)

    def _check(self, request: EndSessionRequest) -> _Checked:
        hint: VerifiedIdToken | None = None
        client: Client | None = None
        if request.id_token_hint is not None:
            try:
                hint = self.signer.verify_id_token(request.id_token_hint)
            except InvalidToken as e:
                log.info("end-session request with an id_token_hint refused: %s", e)
                return _Checked(None, None, None, _BAD_HINT)
            if not any(a in self.clients for a in hint.audiences):
                # The service's session tokens are signed by the same keys: their audience is
                # never a client's.
                return _Checked(None, None, None, _BAD_HINT)
        if request.client_id is not None:
            client = self.clients.get(request.client_id)
            if client is None:
                return _Checked(hint, None, None, _UNKNOWN_CLIENT)
            if hint is not None and client.client_id not in hint.audiences:
                return _Checked(hint, None, None, _CLIENT_MISMATCH)
        elif hint is not None:
            client = self._client_of(hint)
        uri = request.post_logout_redirect_uri
        if uri is None:
            return _Checked(hint, client, None, None)
        if client is None:
            return _Checked(hint, None, None, _WHO_ASKS)
        if not client.post_logout_redirect_uri_registered(uri):
            return _Checked(hint, client, None, _UNREGISTERED_URI)
        return _Checked(hint, client, post_logout_redirect(uri, request.state), None)

    def _client_of(self, hint: VerifiedIdToken) -> Client | None:
        """The client an ID token was issued to: its one audience, or its ``azp`` among
        several."""
        audiences = hint.audiences
        if len(audiences) == 1:
            return self.clients.get(audiences[0])
        azp = hint.claims.get("azp")
        if isinstance(azp, str) and azp in audiences:
            return self.clients.get(azp)
        return None


_BAD_HINT = "The application's sign-out request could not be verified."
_UNKNOWN_CLIENT = "The sign-out request names an application that is not registered."
_CLIENT_MISMATCH = "The sign-out request names two different applications."
_WHO_ASKS = "The sign-out request does not say which application sent it."
_UNREGISTERED_URI = "The application asked to return to an address it has not registered."
