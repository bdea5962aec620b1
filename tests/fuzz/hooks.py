"""Schemathesis hooks for the fuzz run (loaded through ``SCHEMATHESIS_HOOKS=tests.fuzz.hooks``).

The auth hook mints a session token from the service's own key file, for the account that the
test registered before fuzzing, so the protected operations are exercised past their bearer
check; schemathesis' ``ignored_auth`` check still sends them without it (401 expected).

Environment (set by tests/fuzz/test_schemathesis.py):

    AUTHGATE_FUZZ_KEYS_FILE     the service's session.keys_file
    AUTHGATE_FUZZ_ACCOUNT       the account id the token names
    AUTHGATE_FUZZ_DATABASE_URL  the service's database (the session's record goes there)
    AUTHGATE_FUZZ_ISSUER / AUTHGATE_FUZZ_AUDIENCE   session.issuer / session.audience
"""

from __future__ import annotations

import ast
import asyncio
import concurrent.futures
import functools
import os
import threading
from typing import Any

import schemathesis

from bench.harness import mint_session


def _one_parse_at_a_time() -> None:
    """CPython 3.11 keeps the recursion depth of the AST converter in interpreter-wide state,
    so two threads in ``ast.parse`` at once can fail with ``SystemError: AST constructor
    recursion depth mismatch`` (python/cpython#106905). Schemathesis' two workers reach it
    when hypothesis describes a lambda of a strategy (it parses the lambda's source): seen
    once in a CI run whose 1,179 cases had all passed. The lock, in this tool's process only,
    leaves one parse at a time."""
    parse = ast.parse
    lock = threading.Lock()

    @functools.wraps(parse)
    def parse_alone(*args: Any, **kwargs: Any) -> Any:
        with lock:
            return parse(*args, **kwargs)

    ast.parse = parse_alone


_one_parse_at_a_time()


@schemathesis.auth(refresh_interval=5)
class SessionTokenAuth:
    """``Authorization: Bearer <session JWT>`` signed with the service's first key, for a
    session recorded in the service's database as a sign-in records it. A new session every
    few seconds: a case that signs out (or ends every session) ends only what it was given."""

    def get(self, case: Any, context: Any) -> str:
        minted = mint_session(
            os.environ["AUTHGATE_FUZZ_KEYS_FILE"],
            os.environ["AUTHGATE_FUZZ_ACCOUNT"],
            database_url=os.environ["AUTHGATE_FUZZ_DATABASE_URL"],
            issuer=os.environ["AUTHGATE_FUZZ_ISSUER"],
            audience=os.environ["AUTHGATE_FUZZ_AUDIENCE"],
        )
        # The hook runs where an event loop may already run: mint on a thread of its own.
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            return pool.submit(asyncio.run, minted).result()

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
