"""The error bodies docs/api.md gives as examples are what the service answers: the page's
"Parameter error" record quotes the answer to an unknown ``intent`` and to a sign-in start
without ``redirect_uri``, and each is asked of the real application here."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from tests.app.conftest import CALLBACK_URL, SignIn, make_service, signin  # noqa: F401
from tests.fakeidp.fixtures import fake_idp, idp_clock  # noqa: F401

PAGE = (Path(__file__).resolve().parents[2] / "docs" / "api.md").read_text()


def _record() -> str:
    return PAGE.split("**Parameter error**", 1)[1].split("\n\n", 1)[0]


def _quoted(after: str) -> dict[str, Any]:
    """The JSON body the record quotes after ``after``."""
    text = " ".join(_record().split()).split(after, 1)[1]
    match = re.search(r"`(\{.*?\})`", text)
    assert match is not None, f"docs/api.md no longer quotes a body after {after!r}"
    body: dict[str, Any] = json.loads(match.group(1))
    return body


async def test_the_unknown_intent_example_is_the_answer(signin: SignIn) -> None:  # noqa: F811
    response = await signin.start(intent="delete-everything")
    assert response.status == 400
    assert await response.json() == _quoted("an unknown `intent`")


async def test_the_missing_redirect_uri_example_is_the_answer(signin: SignIn) -> None:  # noqa: F811
    response = await signin.client.get("/v1/auth/google", headers={"Accept": "application/json"})
    assert response.status == 400
    assert await response.json() == _quoted("without `redirect_uri`")
