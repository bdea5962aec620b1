"""``authgate ARGS`` with the PostgreSQL adapters on asyncpg's pool instead of authgate's own.

    python bench/serve_on_asyncpg_pool.py serve --config FILE

The second server of bench/pool_bench.py: the same code and configuration, the pool opened by
``open_asyncpg_pool`` (src/adapters/postgres/pool.py) where ``open_postgres`` opens ours. It
says so on stderr (the service's log) when it opens one, which the bench checks. One process
only: the workers of ``rest.workers`` > 1 would be fresh ``authgate serve`` processes.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from authgate.adapters.postgres import pool, store
from authgate.entrypoints.cli import main

OPENED = "bench: the PostgreSQL adapters on asyncpg's pool"


async def open_asyncpg_pool(url: str, **settings: Any) -> Any:
    print(OPENED, file=sys.stderr, flush=True)
    return await pool.open_asyncpg_pool(url, **settings)


if __name__ == "__main__":
    store.open_pool = open_asyncpg_pool  # what open_postgres calls for our pool
    raise SystemExit(main(sys.argv[1:]))
