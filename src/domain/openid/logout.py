"""Logout as the OpenID Provider sees it: the back-channel logout owed to a client when an
authgate session ends (OpenID Connect Back-Channel Logout 1.0), and where the browser goes after
an RP-initiated logout (OpenID Connect RP-Initiated Logout 1.0). Pure values and rules: the
services send, store and decide.
"""

from __future__ import annotations

import datetime as dt
from typing import Any
from urllib.parse import urlencode

import attrs

BACKCHANNEL_LOGOUT_EVENT = "http://schemas.openid.net/event/backchannel-logout"
"""The one member of a logout token's ``events`` claim (Back-Channel Logout 1.0 section 2.4)."""

LOGOUT_TOKEN_LIFETIME = dt.timedelta(minutes=2)
"""How long a logout token is valid: the time it takes to deliver it, not more. Each attempt
signs a new one, so a delivery retried hours later still carries a fresh token."""


@attrs.frozen
class PendingLogout:
    """An outbox row: a client to tell that an authgate session ended, once the change that
    ended it committed.

    ``account_id`` and ``session_id`` are the logout token's ``sub`` and ``sid``, as the ID
    tokens issued in the session named them. ``attempts`` made so far; ``next_attempt_at`` when
    it is due again; ``created_at`` starts the clock of the maximum age after which it is given
    up."""

    id: str
    client_id: str
    account_id: str
    session_id: str
    created_at: dt.datetime
    next_attempt_at: dt.datetime
    attempts: int = 0


def logout_token_claims(pending: PendingLogout, now: dt.datetime, jti: str) -> dict[str, Any]:
    """The claims of the logout token of one delivery attempt (the signer adds ``iss``): the
    client as ``aud``, the session as ``sid`` and the account as ``sub``, the back-channel
    logout event, and never a ``nonce`` (section 2.4 forbids one: a logout token must not pass
    for an ID token). ``jti`` is new at every attempt: a client that remembers the ``jti``
    values it saw must not refuse the retry of a delivery whose answer was lost."""
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
    """Where the browser goes after an RP-initiated logout: the registered
    ``post_logout_redirect_uri`` as registered, with ``state`` added to its query only when the
    client sent one (RP-Initiated Logout 1.0 section 3)."""
    if state is None:
        return uri
    # A registered URI has no fragment (the configuration refuses one).
    separator = "" if uri.endswith(("?", "&")) else "&" if "?" in uri else "?"
    return uri + separator + urlencode({"state": state})
