"""The pool a raw baseline (bench/raw_*_server.py) runs its statements on.

A raw baseline stands for "the same work, hand-written": it must not pay for a pool authgate
does not use. authgate's PostgreSQL adapters lease from its own pool
(src/adapters/postgres/pool.py), whose lease and release are plain calls; asyncpg's pool spends
about 98K instructions more per lease (a task and a timer per release, a proxy per call). So
each baseline runs on either:

* ``authgate``: authgate's own pool, as ``open_postgres`` opens it (the fair floor, the
  default);
* ``asyncpg``: asyncpg's pool with the same settings (``open_asyncpg_pool``, as
  ``open_postgres(..., asyncpg_pool=True)`` opens it: no reset statement at release), what a
  hand-written aiohttp + asyncpg service would use.

The benches run both and print authgate's ratio to each.
"""

from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from authgate.adapters.postgres.pool import ConnectionPool, open_asyncpg_pool, open_pool

POOLS = ("authgate", "asyncpg")
DEFAULT_POOL = "authgate"
BASELINES = {"raw": "authgate", "raw-asyncpg": "asyncpg"}
"""The raw baselines' names in the benches' reports, and the pool each runs on."""


async def open_raw_pool(
    kind: str, url: str, *, min_size: int = 1, max_size: int = 10
) -> ConnectionPool:
    """The pool ``kind`` (one of :data:`POOLS`) on ``url``, with authgate's defaults: 1 to 10
    connections, 5 s to connect and per statement."""
    if kind not in POOLS:
        raise ValueError(f"pool: one of {', '.join(POOLS)}, not {kind!r}")
    opener = open_pool if kind == "authgate" else open_asyncpg_pool
    return await opener(url, min_size=min_size, max_size=max_size, timeout=5.0)
