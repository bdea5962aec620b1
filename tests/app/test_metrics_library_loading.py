"""prometheus_client is imported by the first scrape of ``/metrics``, not when the service
starts: counting needs none of it, and with the modules it brings (its exposition server's
``wsgiref``, ``http.server``, ``socketserver``, ``gzip``) it is about 1 MiB of an idle service's
memory. Checked in a fresh interpreter, which builds the whole service with metrics on, answers
a request that counts, then a scrape (in the text the library writes)."""

from __future__ import annotations

from pathlib import Path

from prometheus_client import CONTENT_TYPE_LATEST

from tests.support.fresh_service import probe

REQUESTS = """
live = await client.get("/health/liveness")
print(live.status, "prometheus_client" in sys.modules)
scrape = await client.get("/metrics")
counted = 'http_route="/health/liveness"' in await scrape.text()
print(scrape.status, "prometheus_client" in sys.modules, counted, scrape.headers["Content-Type"])
"""


def test_prometheus_client_loads_on_the_first_scrape(tmp_path: Path) -> None:
    # metrics.port null: /metrics on the API's listener, which the test client reaches.
    started, scraped = probe(tmp_path, {"metrics": {"enabled": True, "port": None}}, REQUESTS)
    assert started == "200 False"
    assert scraped == f"200 True True {CONTENT_TYPE_LATEST}"
