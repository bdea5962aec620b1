"""Provider events: verifying the providers' signed event tokens, and remembering which were
seen so that a replayed one changes nothing twice."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any, ClassVar, Protocol

import attrs

from authgate.domain.errors import ContractError, Wire
from authgate.domain.model import EventId

# RFC 8935 section 2.4 (Security Event Token error codes), also answered by the Apple
# receiver; the back-channel logout answers OAuth's ``invalid_request`` (its section 2.8)
# with these beside it.
INVALID_REQUEST = "invalid_request"
INVALID_KEY = "invalid_key"
INVALID_ISSUER = "invalid_issuer"
INVALID_AUDIENCE = "invalid_audience"


class EventTokenRejected(Exception):
    """The event token does not verify: ``code`` is the RFC 8935 error code, the text a
    log-safe description that may be returned to the provider. A 400 is final (RFC 8935
    section 2.3: the provider does not retry)."""

    status: ClassVar[int] = 400

    def __init__(self, code: str, description: str) -> None:
        self.code = code
        self.description = description
        super().__init__(description)


class EventTokenUnavailable(ContractError):
    """The provider's key set or configuration cannot be loaded: an outage, not a bad token,
    so a 503 that the provider retries (RFC 8935 makes a 400 final)."""

    wire = Wire(
        503,
        "temporarily_unavailable",
        "the provider's keys cannot be loaded; retry later",
        headers={"Retry-After": "60", "Cache-Control": "no-store"},
        logged=True,
    )


@attrs.frozen
class VerifiedEventToken:
    """A verified event token: its claims, and the one-time identity of its event."""

    claims: Mapping[str, Any]
    event_id: EventId


class EventTokenVerifier(Protocol):
    """Verifies one provider's event tokens: signature (the provider's key set), ``iss``,
    ``aud``, ``iat`` recent and not in the future, ``exp`` when present, ``jti`` present."""

    async def verify(self, token: str) -> VerifiedEventToken:
        """Raises :class:`EventTokenRejected` or :class:`EventTokenUnavailable`."""


class SeenEvents(Protocol):
    """The one-time ``jti`` store of provider events."""

    async def first_sight(self, event: EventId, now: dt.datetime) -> bool:
        """Remember ``event`` until its ``expires_at`` (dropping expired ones on the way);
        False for a replay."""
