"""Back-channel logout (OpenID Connect Back-Channel Logout 1.0) for authgate as an OpenID
Provider (docs/openid-provider.md, "To the applications: back-channel logout"): what ends with
a session (:class:`BackchannelLogout`, called by the sessions service in the unit of work that
ends it), and the outbox worker that tells the clients and ends the sessions that expire, which
nothing revokes (:class:`LogoutTokenWorker`).
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Mapping, Sequence

import attrs

from authgate.domain.model import Outcome
from authgate.domain.openid.logout import PendingLogout, logout_token_claims
from authgate.domain.secrets import random_uuid_hex
from authgate.ports.clock import Clock
from authgate.ports.jose import TokenSigner
from authgate.ports.openid import LogoutDeliveryFailed, LogoutTokenSender
from authgate.ports.unit_of_work import Transaction, UnitOfWork
from authgate.services.audit import record_audit
from authgate.services.openid.client_directory import ClientDirectory
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
        # Reading the session's clients is needed only when one of them may be told: any
        # client beyond the configuration may have registered a logout URI.
        self._any_listener = not self.clients.only_configured or any(
            c.backchannel_logout_uri for c in self.clients.configured
        )

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
    clients: ClientDirectory,
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
        client = await clients.find_in(tx, client_id)
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
    """Delivers the logout tokens of the outbox (one task per running instance); before each
    look it ends the sessions that expired (:meth:`end_expired`)."""

    name = "back-channel logout worker"
    log = log

    def __init__(
        self,
        *,
        clients: ClientDirectory,
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
        """End the sessions that expired (their clients recorded, never revoked) as
        :meth:`BackchannelLogout.ended` ends a revoked one, once per session whichever instance
        takes its clients' rows first, in the unit of work that takes them; how many rows."""
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
        client = await self.clients.find(pending.client_id)
        uri = client.backchannel_logout_uri if client is not None else None
        if uri is None:
            reason = "the client is no longer registered with a backchannel_logout_uri"
            await self.finish(pending, False, reason)
            return
        now = self.clock.now()
        token = self.signer.logout_token(logout_token_claims(pending, now, random_uuid_hex()))
        try:
            await self.sender.send(uri, token)
        except LogoutDeliveryFailed as e:
            await self.failed(pending, str(e))
            return
        await self.finish(pending, True, f"after {pending.attempts + 1} attempt(s)")

    def describe(self, pending: PendingLogout) -> str:
        return f"back-channel logout of session {pending.session_id} at client {pending.client_id}"

    async def finish(self, pending: PendingLogout, done: bool, detail: str) -> None:
        outcome = Outcome.BACKCHANNEL_LOGOUT_SENT if done else Outcome.BACKCHANNEL_LOGOUT_FAILED
        text = f"session {pending.session_id}: {detail}"
        async with self.units.begin() as tx:
            await tx.logout_outbox.complete(pending.id)
            at = self.clock.now()
            await record_audit(tx, at, pending.client_id, outcome, None, pending.account_id, text)
        if not done:
            security_log.error(
                "security event: back-channel logout of session %s of account %s at client %s "
                "failed permanently: %s",
                pending.session_id,
                pending.account_id,
                pending.client_id,
                detail,
            )
