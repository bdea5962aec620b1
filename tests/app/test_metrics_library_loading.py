"""prometheus_client is imported by the first scrape of ``/metrics``, not when the service
starts: counting needs none of it, and with the modules it brings (its exposition server's
``wsgiref``, ``http.server``, ``socketserver``, ``gzip``) it is about 1 MiB of an idle service's
memory. Checked in a fresh interpreter, which builds the whole service with metrics on, answers
a request that counts, then a scrape (in the text the library writes)."""

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

async def main(folder):
    config = parse(yaml.safe_dump({
        "environment": "test",
        "rest": {"port": 8080},
        "otel": {"service": {"name": "authgate-test"}, "sdk": {"disabled": True}},
        "metrics": {"enabled": True, "port": None},
        "app": {"url": "https://app.example.com", "callback_urls": []},
        "database": {"url": "memory://"},
        "session": {"keys_file": folder + "/keys.json", "generate_keys": True},
        "ratelimit": {"storage": "memory://"},
        "providers": {},
    }))
    app = await assembly.create_app(config, build_app)
    async with TestClient(TestServer(app)) as client:
        live = await client.get("/health/liveness")
        print(live.status, "prometheus_client" in sys.modules)
        scrape = await client.get("/metrics")
        text = await scrape.text()
        counted = 'http_route="/health/liveness"' in text
        print(scrape.status, "prometheus_client" in sys.modules, counted,
              scrape.headers["Content-Type"])

asyncio.run(main(sys.argv[1]))
"""


def test_prometheus_client_loads_on_the_first_scrape(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(tmp_path)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    started, scraped = done.stdout.splitlines()
    assert started == "200 False"
    from prometheus_client import CONTENT_TYPE_LATEST

    assert scraped == f"200 True True {CONTENT_TYPE_LATEST}"
