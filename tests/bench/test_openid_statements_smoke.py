"""The OpenID Provider's statement count runs end to end (``bench/openid_statements.py
--quick``): every request counted on its own, its statements and round trips reported, the
service's background work kept apart. The counts themselves are kept by
tests/storage/test_postgres_unit.py; here only what makes the table trustworthy: a code's
redemption in one transaction, a refresh in none (its one read, then its writes as one
statement), a request that writes nothing outside one, and every statement a request sends
counted once."""

from __future__ import annotations

from typing import Any

import pytest

from tests.bench.support import report_of

REQUESTS = (
    "authorize",
    "token (code)",
    "refresh",
    "userinfo",
    "introspection (access token)",
    "introspection (refresh token)",
)


def test_quick_run_counts_each_request_alone(postgres_server: Any) -> None:
    report = report_of(
        "openid_statements.py", "--quick", "--admin-url", postgres_server.admin_url, timeout=300
    )
    assert report["operations"] == 10
    for name in REQUESTS:
        counted = report[name]
        assert counted["statements"] >= 1, (name, counted)
        # a statement is a round trip at least; preparations add to them, never remove
        assert counted["round_trips"] >= counted["statements"], (name, counted)
        by_statement = sum(counted["by_statement"].values())
        assert by_statement == pytest.approx(counted["statements"], abs=0.05), (name, counted)
    assert report["authorize"]["transactions"] == 0
    assert report["token (code)"]["transactions"] == 1
    assert report["refresh"]["transactions"] == 0
    for read in ("userinfo", "introspection (access token)", "introspection (refresh token)"):
        assert report[read]["transactions"] == 0, report[read]
    flow = report["code flow"]
    parts = report["authorize"]["statements"] + report["token (code)"]["statements"]
    assert flow["statements"] == pytest.approx(parts, abs=0.01)
