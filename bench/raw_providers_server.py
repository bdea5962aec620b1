"""The baseline of bench/providers_bench.py: a raw aiohttp + asyncpg handler.

    python bench/raw_providers_server.py PORT DATABASE_URL ACCOUNT_ID [uvloop|asyncio]

``GET /v1/account/providers`` runs the same query as the PostgreSQL adapter's
``list_identities`` for a fixed account (the same statement, prepared by asyncpg's statement
cache as the adapter's is), on asyncpg's pool of the same size without its reset query (as
authgate's pool), and answers the same JSON, byte for
byte (bench/providers_bench.py checks it before measuring); no authentication, no parameter
handling, no validation, no error handling, no access log, no metrics. It runs on the event
loop named (bench/providers_bench.py names authgate's own, ``rest.event_loop``'s default:
uvloop when installed).
"""

from __future__ import annotations

import asyncio
import json
import sys
import uuid

import asyncpg
from aiohttp import web

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


async def _no_reset(_conn: asyncpg.Connection) -> None:
    """No reset statement when a connection goes back to the pool."""


def main(port: int, database_url: str, account_id: str, loop: str = "asyncio") -> None:
    key = uuid.UUID(account_id)

    async def open_pool(app: web.Application) -> None:
        # asyncpg's pool with its reset query at release switched off, as authgate's own pool
        # has none (nothing to undo after a read): otherwise the baseline pays a round trip
        # per request that authgate does not.
        app["pool"] = await asyncpg.create_pool(
            database_url, min_size=1, max_size=10, reset=_no_reset
        )

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
    main(int(sys.argv[1]), sys.argv[2], sys.argv[3], *sys.argv[4:5])
