"""Helpers of the provider-token tests: reading what the database holds, and the
revocation outcomes in an account's audit trail."""

from __future__ import annotations

import base64
import json
import sqlite3
from typing import Any

import asyncpg

from authgate.domain.model import Outcome
from authgate.entrypoints.app.build import RESOURCES

from .conftest import Client


def account_of(token: str) -> str:
    """The account id a session token names (its ``sub``)."""
    payload = token.split(".")[1]
    claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    return str(claims["sub"])


async def raw_rows(database_url: str, table: str) -> list[dict[str, Any]]:
    """Every row of ``table`` as the database holds it (no adapter in between)."""
    if database_url.startswith("sqlite:///"):
        with sqlite3.connect(database_url.removeprefix("sqlite:///")) as db:
            db.row_factory = sqlite3.Row
            return [dict(r) for r in db.execute(f"SELECT * FROM {table}")]
    conn = await asyncpg.connect(database_url)
    try:
        return [dict(r) for r in await conn.fetch(f"SELECT * FROM {table}")]
    finally:
        await conn.close()


async def outbox_empty(database_url: str) -> bool:
    """Whether no revocation is pending."""
    return not await raw_rows(database_url, "provider_token_revocations")


async def outcomes(client: Client, account_id: str) -> list[tuple[str, str]]:
    """(provider, outcome) of every audit event of the account."""
    events = await client.app[RESOURCES].stores.events.for_account(account_id)
    return [(e.provider, e.outcome.value) for e in events]


def revoked_event(provider: str) -> tuple[str, str]:
    return (provider, Outcome.PROVIDER_TOKEN_REVOKED.value)
