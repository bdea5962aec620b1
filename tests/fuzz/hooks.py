"""Schemathesis hooks for the fuzz run (loaded through ``SCHEMATHESIS_HOOKS=tests.fuzz.hooks``).

The auth hook mints a session token from the service's own key file, for the account that the
test registered before fuzzing, so the protected operations are exercised past their bearer
check; schemathesis' ``ignored_auth`` check still sends them without it (401 expected).

Environment (set by tests/fuzz/test_schemathesis.py):

    AUTHGATE_FUZZ_KEYS_FILE     the service's session.keys_file
    AUTHGATE_FUZZ_ACCOUNT       the account id the token names
    AUTHGATE_FUZZ_ISSUER / AUTHGATE_FUZZ_AUDIENCE   session.issuer / session.audience
"""

from __future__ import annotations

import datetime as dt
import os
from typing import Any

import schemathesis

from authgate.adapters.sessions import JwtSessionTokens, load_or_create_keys


@schemathesis.auth(refresh_interval=600)
class SessionTokenAuth:
    """``Authorization: Bearer <session JWT>`` signed with the service's first key."""

    def get(self, case: Any, context: Any) -> str:
        keys = load_or_create_keys(os.environ["AUTHGATE_FUZZ_KEYS_FILE"], create=False)
        tokens = JwtSessionTokens(
            keys,
            issuer=os.environ["AUTHGATE_FUZZ_ISSUER"],
            audience=os.environ["AUTHGATE_FUZZ_AUDIENCE"],
            ttl=dt.timedelta(hours=1),
        )
        account = os.environ["AUTHGATE_FUZZ_ACCOUNT"]
        return tokens.issue(account, "google", dt.datetime.now(dt.UTC)).token

    def set(self, case: Any, data: str, context: Any) -> None:
        case.headers = case.headers or {}
        case.headers["Authorization"] = f"Bearer {data}"


CALLBACK = "GET /v1/auth/{provider}/callback"


@schemathesis.hook
def filter_case(context: Any, case: Any) -> bool:
    """Keep every case but one shape of negative callback (spec 4.6, rule 2 before rule 3).

    The document marks the callback's ``code`` and ``state`` required, as the spec's table
    does. A provider that reports an error sends ``error`` instead of ``code`` (RFC 6749
    4.1.2.1), and the spec handles ``error`` before it requires ``code`` and ``state``: such a
    request is redirected to the login page (302 ``access_denied`` / ``authentication_failed``)
    by design. A "negative" case carrying a non-empty ``error`` is therefore no violation, and
    OpenAPI 3.0 cannot say "required unless error is present"; every other negative callback
    is still sent and must be rejected.
    """
    if case.operation.label != CALLBACK:
        return True
    meta = getattr(case, "meta", None)
    negative = meta is not None and meta.generation.mode.is_negative
    error = (case.query or {}).get("error")
    return not (negative and isinstance(error, str) and error != "")
