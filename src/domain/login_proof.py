"""What proves when a person logged in at an upstream provider: only a signed statement, the
``auth_time`` of a verified ID token (or a passkey assertion with user verification).
Parameters asking a provider to log the person in again (``prompt=login``, ``max_age``) travel
in the browser's address, which its holder can strip. So every OpenID Connect sign-in sends
``max_age`` (Core 3.1.2.1 then requires ``auth_time``), and step-up offers only the ways that
can prove a login.
"""

from __future__ import annotations

# Google's issuer, as its ID tokens spell it (both forms are documented).
GOOGLE_ISSUERS = frozenset({"https://accounts.google.com", "accounts.google.com"})

# The max_age of every OpenID Connect sign-in: a year practically never makes a provider ask
# for a login, but makes its ID token state auth_time.
DEFAULT_SIGNIN_MAX_AGE = 365 * 86400


def proves_login_time(issuer: str | None, states_auth_time: bool | None) -> bool:
    """Whether a provider's sign-ins prove when the person logged in: only one with ID tokens
    (``issuer``), as configured, else every one but Google (which signs ``auth_time`` only
    once its "session age claims" setting is on for the OAuth client)."""
    if issuer is None:
        return False
    if states_auth_time is not None:
        return states_auth_time
    return issuer not in GOOGLE_ISSUERS
