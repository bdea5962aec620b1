"""Logout as the OpenID Provider sees it: the back-channel logout owed to a client when an
authgate session ends (OpenID Connect Back-Channel Logout 1.0), and where the browser goes after
an RP-initiated logout (OpenID Connect RP-Initiated Logout 1.0)."""

from __future__ import annotations

import datetime as dt
from typing import Any
from urllib.parse import urlencode

import attrs

from authgate.domain.provider_events import BACKCHANNEL_LOGOUT

# The one member of a logout token's ``events`` claim (Back-Channel Logout 1.0 section 2.4).
BACKCHANNEL_LOGOUT_EVENT = BACKCHANNEL_LOGOUT
# Long enough to deliver it: each attempt signs a new token, so a retry carries a fresh one.
LOGOUT_TOKEN_LIFETIME = dt.timedelta(minutes=2)


@attrs.frozen
class PendingLogout:
    """An outbox row (:class:`~authgate.ports.outbox.Pending`): a client to tell that an
    authgate session ended, once that committed; ``account_id`` and ``session_id`` are the
    logout token's ``sub`` and ``sid``, as the session's ID tokens named them."""

    id: str
    client_id: str
    account_id: str
    session_id: str
    created_at: dt.datetime
    next_attempt_at: dt.datetime
    attempts: int = 0


def logout_token_claims(pending: PendingLogout, now: dt.datetime, jti: str) -> dict[str, Any]:
    """The claims of one delivery attempt's logout token (the signer adds ``iss``); never a
    ``nonce`` (section 2.4: it must not pass for an ID token). ``jti`` is new at every
    attempt: a client that remembers ``jti`` values must not refuse the retry of a delivery
    whose answer was lost."""
    issued = int(now.timestamp())
    return {
        "aud": pending.client_id,
        "iat": issued,
        "exp": issued + int(LOGOUT_TOKEN_LIFETIME.total_seconds()),
        "jti": jti,
        "events": {BACKCHANNEL_LOGOUT_EVENT: {}},
        "sid": pending.session_id,
        "sub": pending.account_id,
    }


def post_logout_redirect(uri: str, state: str | None) -> str:
    """Where the browser goes after an RP-initiated logout: the registered URI, with ``state``
    added to its query when the client sent one (RP-Initiated Logout 1.0 section 3)."""
    if state is None:
        return uri
    # A registered URI has no fragment (the configuration refuses one).
    separator = "" if uri.endswith(("?", "&")) else "&" if "?" in uri else "?"
    return uri + separator + urlencode({"state": state})
