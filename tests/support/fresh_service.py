"""A whole service built and asked in a fresh interpreter: for what only a new process shows,
such as which libraries it has imported by a given request."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]

_PROBE = """
import asyncio, json, sys, yaml
from aiohttp.test_utils import TestClient, TestServer
from authgate.entrypoints.app import build as assembly
from authgate.entrypoints.app.config import parse
from authgate.entrypoints.app.serving import build_app

async def main(folder, more):
    settings = {{
        "environment": "test",
        "rest": {{"port": 8080}},
        "otel": {{"service": {{"name": "authgate-test"}}, "sdk": {{"disabled": True}}}},
        "metrics": {{"enabled": False}},
        "app": {{"url": "https://app.example.com", "callback_urls": []}},
        "database": {{"url": "memory://"}},
        "session": {{"keys_file": folder + "/keys.json", "generate_keys": True}},
        "ratelimit": {{"storage": "memory://"}},
        "providers": {{}},
        **json.loads(more),
    }}
    app = await assembly.create_app(parse(yaml.safe_dump(settings)), build_app)
    async with TestClient(TestServer(app)) as client:
{requests}

asyncio.run(main(sys.argv[1], sys.argv[2]))
"""


def probe(folder: Path, settings: dict[str, Any], requests: str) -> list[str]:
    """What ``requests`` prints, one line each: code run with ``client`` (an aiohttp test
    client of the service configured by ``settings`` over a memory store) in a new
    interpreter. Fails the test with the probe's error output if it does not end well."""
    script = _PROBE.format(requests=textwrap.indent(textwrap.dedent(requests), " " * 8))
    done = subprocess.run(
        [sys.executable, "-c", script, str(folder), json.dumps(settings)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.splitlines()
