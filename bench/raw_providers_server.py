"""The baseline of bench/providers_bench.py: a raw aiohttp + asyncpg handler.

    python bench/raw_providers_server.py PORT DATABASE_URL ACCOUNT_ID [LOOP] [POOL]

LOOP: ``uvloop`` or ``asyncio`` (the default); POOL: ``authgate`` (the default) or ``asyncpg``.

``GET /v1/account/providers`` runs the same query as the PostgreSQL adapter's
``list_identities`` for a fixed account (the same statement, prepared by asyncpg's statement
cache as the adapter's is), on the pool named last (bench/raw_pool.py: authgate's own, the
default, or asyncpg's of the same size without its reset query), and answers the same JSON,
byte for byte (bench/providers_bench.py checks it before measuring); no authentication, no parameter
handling, no validation, no error handling, no access log, no metrics. It runs on the event
loop named (bench/providers_bench.py names authgate's own, ``rest.event_loop``'s default:
uvloop when installed).
"""

from __future__ import annotations

import asyncio
import json
import sys
import uuid
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from aiohttp import web

from bench.raw_pool import DEFAULT_POOL, open_raw_pool

QUERY = (
    """
    SELECT account_id, provider, subject, email, linked_at, is_primary, email_verified,
        disabled_reason, email_disabled
    FROM identities
"""
    + "WHERE account_id = $1 ORDER BY linked_at, is_primary DESC, provider, subject"
)


# Compact and UTF-8 as is, as authgate writes JSON.
encode = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode


def new_event_loop(name: str) -> asyncio.AbstractEventLoop:
    if name == "uvloop":
        import uvloop

        return uvloop.new_event_loop()
    return asyncio.new_event_loop()


def main(
    port: int,
    database_url: str,
    account_id: str,
    loop: str = "asyncio",
    pool: str = DEFAULT_POOL,
) -> None:
    key = uuid.UUID(account_id)

    async def open_pool(app: web.Application) -> None:
        app["pool"] = await open_raw_pool(pool, database_url)

    async def close_pool(app: web.Application) -> None:
        await app["pool"].close()

    async def providers(request: web.Request) -> web.Response:
        rows = await request.app["pool"].fetch(QUERY, key)
        body = {
            "providers": [
                {
                    "provider": r["provider"],
                    "providerId": f"user:{r['provider']}:{r['subject']}",
                    "linkedAt": r["linked_at"].isoformat(),
                    "isPrimary": r["is_primary"],
                }
                for r in rows
            ]
        }
        return web.Response(body=encode(body).encode(), content_type="application/json")

    app = web.Application()
    app.on_startup.append(open_pool)
    app.on_cleanup.append(close_pool)
    app.router.add_get("/v1/account/providers", providers)
    app.router.add_get("/health/liveness", liveness)
    web.run_app(
        app,
        host="127.0.0.1",
        port=port,
        access_log=None,
        print=None,
        loop=new_event_loop(loop),
    )


async def liveness(_: web.Request) -> web.Response:
    return web.Response(text="ok")


if __name__ == "__main__":
    main(int(sys.argv[1]), sys.argv[2], sys.argv[3], *sys.argv[4:6])
