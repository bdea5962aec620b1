"""Audit events: sign-ins and the account changes audited like them (time, client address,
user agent, account, provider, outcome), logged and stored, never with a token."""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable, Coroutine
from typing import Any, Concatenate, ParamSpec

from authgate.domain.model import ClientInfo, Outcome, SignInEvent
from authgate.domain.text import printable
from authgate.ports.events import SignInEventLog
from authgate.ports.metrics import Metrics, NoMetrics
from authgate.ports.unit_of_work import Transaction

log = logging.getLogger("authgate.audit")

security_log = logging.getLogger("authgate.security")
"""Where the services log security events (a refused attack, a suspicious provider answer)."""

_LINE = "%s event: provider=%s outcome=%s client=%s user_agent=%r account=%s"

NOBODY = ClientInfo(None, None)

P = ParamSpec("P")

# Outcomes of account changes (the others are a callback's: "sign-in events").
ACCOUNT_CHANGES = frozenset(
    {
        Outcome.UNLINKED,
        Outcome.SESSION_REVOKED,
        Outcome.SIGNED_OUT,
        Outcome.SIGNED_OUT_EVERYWHERE,
        Outcome.ACCOUNT_DELETED,
        Outcome.PROVIDER_TOKEN_REVOKED,
        Outcome.PROVIDER_TOKEN_REVOCATION_FAILED,
        Outcome.BACKCHANNEL_LOGOUT_SENT,
        Outcome.BACKCHANNEL_LOGOUT_FAILED,
        Outcome.APP_WITHDRAWN,
        Outcome.PASSKEY_ADDED,
        Outcome.PASSKEY_REMOVED,
    }
)


def audit_event(
    at: dt.datetime,
    provider: str,
    outcome: Outcome,
    client: ClientInfo | None,
    account_id: str | None,
    detail: str | None = None,
    *,
    logged: bool = True,
) -> SignInEvent:
    """The event, its client-chosen text made storable, logged on one line (unless not
    ``logged``: the caller logs it with :func:`log_event` once it is stored)."""
    client = client or NOBODY
    event = SignInEvent(
        at=at,
        provider=provider,
        outcome=outcome,
        client_address=printable(client.address, 64),
        user_agent=printable(client.user_agent, 512),
        account_id=account_id,
        detail=printable(detail, 200),
    )
    if logged:
        log_event(event)
    return event


def _stored(
    make: Callable[P, SignInEvent],
) -> Callable[Concatenate[Transaction, P], Coroutine[Any, Any, SignInEvent]]:
    """``make``, its event stored in the unit of work given first."""

    async def store(tx: Transaction, /, *args: P.args, **kwargs: P.kwargs) -> SignInEvent:
        event = make(*args, **kwargs)
        await tx.events.record(event)
        return event

    return store


record_audit = _stored(audit_event)
"""Inside the unit of work given first: the :func:`audit_event` of a change, stored with the
change it audits (same arguments after the unit)."""


async def record_refusal(
    events: SignInEventLog, event: SignInEvent, logger: logging.Logger, what: str
) -> None:
    """Store the audit event of a refusal on its own; a failure to store it is logged on
    ``logger`` (as ``what``), never raised: the audit trail must not turn a refusal into a
    500."""
    try:
        await events.record(event)
    except Exception:
        logger.exception("could not store %s", what)


def log_event(event: SignInEvent) -> None:
    """The event's line in the log."""
    log.info(
        _LINE,
        "account" if event.outcome in ACCOUNT_CHANGES else "sign-in",
        event.provider,
        event.outcome.value,
        event.client_address,
        event.user_agent,
        event.account_id,
    )


def or_no_metrics(metrics: Metrics | None) -> Metrics:
    """The metrics a service counts on: ``metrics``, or none counted when not given."""
    return metrics or NoMetrics()
