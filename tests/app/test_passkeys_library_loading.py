"""fido2's ceremonies load on the first passkey ceremony, not when the service starts: a service
with passkeys on that runs none does not hold ``fido2.server`` and what it brings (its data
classes, its COSE keys: 1.8 MiB of idle memory). Checked in a fresh interpreter, which builds
the whole service and answers a request that is no ceremony, then one that is."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import asyncio, sys, yaml
from aiohttp.test_utils import TestClient, TestServer
from authgate.entrypoints import assembly
from authgate.entrypoints.config import parse
from authgate.entrypoints.serve_config import build_app

HEAVY = ("fido2.server", "fido2.webauthn", "fido2.cose")

def loaded():
    return ",".join(m for m in HEAVY if m in sys.modules) or "-"

async def main(folder):
    config = parse(yaml.safe_dump({
        "environment": "test",
        "rest": {"port": 8080},
        "otel": {"service": {"name": "authgate-test"}, "sdk": {"disabled": True}},
        "metrics": {"enabled": False},
        "app": {"url": "https://app.example.com", "callback_urls": []},
        "database": {"url": "memory://"},
        "session": {"keys_file": folder + "/keys.json", "generate_keys": True},
        "ratelimit": {"storage": "memory://"},
        "providers": {},
        "passkeys": {"enabled": True, "rp_id": "example.com",
                     "origins": ["https://app.example.com"]},
    }))
    app = await assembly.create_app(config, build_app)
    async with TestClient(TestServer(app)) as client:
        live = await client.get("/health/liveness")
        print(live.status, "fido2.utils" in sys.modules, loaded())
        options = await client.post("/v1/passkeys/authentication/options")
        print(options.status, loaded())

asyncio.run(main(sys.argv[1]))
"""


def test_fido2_s_ceremonies_load_on_the_first_ceremony(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(tmp_path)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    started, ceremony = done.stdout.splitlines()
    # Started: the type hints' fast path was checked (fido2.utils), nothing else of fido2.
    assert started == "200 True -"
    assert ceremony == "200 fido2.server,fido2.webauthn,fido2.cose"
