"""The benchmark against oidc-provider runs end to end (a smoke test, not a timed assertion).

``bench/openid_peer_bench.py --quick`` starts ``authgate serve`` on memory and on PostgreSQL and
the peer, bench/peers/oidc_provider/server.js, on its ``Map`` adapter and on its PostgreSQL
adapter (``pg``), signs a browser in at each, checks their userinfo and introspection answers
agree, and drives every work for half a second. Half-second figures are noise; only that every
server answered and every ratio was measured is asserted here.

The peer runs on the machine's Node.js from what ``scripts/interop-deps`` installed (it is run
here, quick when done). Without Node.js 20+ and npm the test skips, as tests/interop do; under
CI (``CI`` set) it fails instead, so that a CI machine never passes it by skipping.
"""

from __future__ import annotations

import os
from typing import Any

import pytest

from bench.openid_peer_bench import PAIRS, missing_node
from tests.bench.support import report_of
from tests.interop.support import install, missing_tools


@pytest.fixture(scope="module")
def peer_installed() -> None:
    why_not = missing_tools()
    if why_not is not None:
        if os.environ.get("CI"):
            pytest.fail(f"{why_not}; the machine must have Node.js 20+ and npm")
        pytest.skip(why_not)
    install()  # scripts/interop-deps: bench/peers/oidc_provider among its folders
    not_installed = missing_node()
    assert not_installed is None, not_installed


def test_quick_run_measures_every_server_and_ratio(
    peer_installed: None, postgres_server: Any
) -> None:
    report = report_of(
        "openid_peer_bench.py", "--quick", "--admin-url", postgres_server.admin_url, timeout=600
    )
    for work, by_side in report["figures"].items():
        for side, figures in by_side.items():
            assert figures["per_second"] > 0, (work, side, report)
    assert set(report["figures"]["code_flow"]) == {
        "authgate memory",
        "authgate PostgreSQL",
        "oidc-provider Map",
        "oidc-provider PostgreSQL",
        "oidc-provider Map, JWT access tokens",
        "oidc-provider PostgreSQL, JWT access tokens",
    }
    assert len(report["ratios"]) == len(PAIRS)
    for pair, ratio in report["ratios"].items():
        assert ratio["median"] is not None and ratio["median"] > 0, (pair, report)
    # The answers were compared before measuring: the same userinfo claims on every side.
    userinfo = {k: v for k, v in report["answers"].items() if k.startswith("userinfo ")}
    assert len(userinfo) == 4 and len({tuple(v) for v in userinfo.values()}) == 1, userinfo
    # oidc-provider's JWT access tokens are RS256 JWTs, as authgate's.
    assert report["oidc_provider_jwt_access_token_header"].startswith("eyJ")
