"""The OpenID Provider's benchmark runs end to end (a smoke test, not a timed assertion).

``bench/openid_bench.py --quick`` starts ``authgate serve`` with a first-party confidential
client on a fresh PostgreSQL database, drives complete single-sign-on code flows (authorize
with PKCE, then the token endpoint) and refresh rotations for a second each, then compares
introspection of an access token with the raw aiohttp + asyncpg handler after checking that
both give the same answer. One-second figures are noise; only that the run completes and
reports every figure is asserted here.
"""

from __future__ import annotations

from typing import Any

from tests.bench.support import report_of


def test_quick_run_completes_and_reports_every_figure(postgres_server: Any) -> None:
    report = report_of("openid_bench.py", "--quick", "--admin-url", postgres_server.admin_url)
    for kind in ("code_flow", "refresh"):
        figures = report[kind]
        assert figures["count"] > 0, report
        assert figures["per_cpu_second"] > 0, report
        assert figures["database_cpu_seconds"] >= 0, report
    for server in ("authgate", "authgate, access log off", "raw", "raw-asyncpg"):
        assert report["introspection"]["servers"][server]["per_second"] > 0, report
    assert len(report["introspection"]["round_ratios"]) == 2, report
    assert len(report["introspection"]["round_ratios_without_access_log"]) == 2, report
    assert report["introspection"]["authgate/raw"] > 0, report
    assert report["introspection"]["authgate without access log/raw"] > 0, report
    assert report["introspection"]["authgate/raw-asyncpg"] > 0, report
    assert set(report["met"]) == {"code_flow", "refresh", "introspection"}
