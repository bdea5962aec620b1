"""Back-channel logout: the outbox of logout tokens owed to clients, and the client's endpoint.

When an authgate session ends, every client that received tokens in it and registered a
``backchannel_logout_uri`` is owed a logout token (OpenID Connect Back-Channel Logout 1.0). The
row is written in the transaction that ends the session, so the client is told if and only if
the session ended; a background worker delivers it after the commit.
"""

from __future__ import annotations

from typing import Protocol

from authgate.domain.logout import PendingLogout
from authgate.ports.outbox import Outbox


class LogoutOutbox(Outbox[PendingLogout], Protocol):
    """Pending back-channel logouts (:class:`~authgate.ports.outbox.Outbox`): claimed with a
    lease by one worker of any instance at a time, delivered at least once."""


class LogoutDeliveryFailed(Exception):
    """The client did not confirm the logout (unreachable, a timeout, an answer other than
    2xx). The text is for the log and the audit trail: the status or the error, never the
    token."""


class LogoutTokenSender(Protocol):
    """The clients' back-channel logout endpoints."""

    async def send(self, uri: str, logout_token: str) -> None:
        """POST ``logout_token`` to ``uri`` as the form field ``logout_token``; returns when
        the client answered 2xx, raises :class:`LogoutDeliveryFailed` otherwise."""
        ...
