"""docs/openid-provider.md's "Machines" configuration example is a valid registration, and the
client it registers gets its token as the page's curl line asks for it."""

from __future__ import annotations

import base64
import re
from pathlib import Path
from typing import Any

import yaml

from tests.app.conftest import MakeService, load_config
from tests.fakeidp import FakeIdP, SettableClock
from tests.openid.harness import ISSUER
from tests.support.jwt import claims_of

from .conftest import machine_config

PAGE = Path(__file__).parents[2] / "docs" / "openid-provider.md"
SECTION = "## Machines: client credentials and resource indicators"
BLOCK = re.compile(r'^```yaml title="config.yaml"\n(.*?)^```$', re.MULTILINE | re.DOTALL)
SECRET = "report-job-secret-of-more-than-thirty-two-characters"


def example() -> dict[str, Any]:
    text = PAGE.read_text()
    section = text[text.index(SECTION) :]
    section = section[: section.find("\n## ", len(SECTION))]
    [block] = BLOCK.findall(section)
    expanded = block.replace("${REPORT_JOB_SECRET}", SECRET)
    clients: dict[str, Any] = yaml.safe_load(expanded)["clients"]
    return clients


def test_the_example_is_a_valid_registration(tmp_path: Path) -> None:
    config = load_config(tmp_path, {"rest": {"public_url": ISSUER}, "clients": example()})
    assert config.clients is not None and "report-job" in config.clients


async def test_the_example_client_gets_its_token(
    make_service: MakeService,
    fake_idp: FakeIdP,
    idp_clock: SettableClock,
) -> None:
    config = machine_config(fake_idp)
    config["clients"] = {**config["clients"], **example()}
    client = await make_service(config, clock=idp_clock)
    raw = base64.b64encode(f"report-job:{SECRET}".encode()).decode()
    answer = await client.post(
        "/oauth2/token",
        data=[
            ("grant_type", "client_credentials"),
            ("scope", "mcp:tools"),
            ("resource", "https://mcp.example.com/"),
        ],
        headers={"Authorization": f"Basic {raw}"},
    )
    assert answer.status == 200, await answer.text()
    claims = claims_of((await answer.json())["access_token"])
    assert claims["sub"] == "report-job" and claims["aud"] == "https://mcp.example.com/"
