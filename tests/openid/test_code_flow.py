"""The authorization code flow end to end, named after the OIDF basic OP plan's modules: a
browser with an authgate session gets a code, the application redeems it, the ID token passes
the suite's standard checks against the published keys."""

from __future__ import annotations

import math
from collections import Counter

from .harness import ISSUER, WEB_REDIRECT, Op, Request


async def test_oidcc_server(op: Op) -> None:
    await op.sign_in()
    request = Request()
    response = await op.authorize(request)
    assert response.status == 302
    assert response.headers["Cache-Control"] == "no-store"
    answer = await op.answer(response)
    assert answer.redirect_uri == WEB_REDIRECT
    assert answer.params["state"] == request.state and len(request.state or "") >= 128
    assert answer.params["iss"] == ISSUER
    # at least 128 bits, random-looking
    code = answer.code
    assert len(code) >= 43
    counts = Counter(code)
    entropy = -sum(n / len(code) * math.log2(n / len(code)) for n in counts.values())
    assert entropy * len(code) >= 96

    tokens = await op.tokens(request, answer)
    assert tokens["token_type"] == "Bearer"
    assert tokens["expires_in"] == 300
    assert tokens["scope"] == "openid"
    assert "refresh_token" not in tokens  # no offline_access
    claims = await op.verify_id_token(
        tokens["id_token"], nonce=request.nonce, access_token=tokens["access_token"]
    )
    assert claims["azp"] == "web"
    assert claims["sid"]
    assert "auth_time" in claims
