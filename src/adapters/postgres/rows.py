"""Conversions between asyncpg records and the domain's records."""

from __future__ import annotations

import datetime as dt
import functools
import json
import uuid
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any, Self, TypeVar

import asyncpg

from authgate.domain.model import (
    Account,
    LinkedIdentity,
    Outcome,
    ProviderIdentity,
    SignInEvent,
)

from .pool import ConnectionPool, Leased, Pool
from .unit import UnitConnection

# What an adapter runs its statements on: the pool, or one connection of a unit of work.
Executor = ConnectionPool | asyncpg.Connection | UnitConnection
Connection = Leased | UnitConnection


@asynccontextmanager
async def connection(db: Executor) -> AsyncIterator[Connection]:
    """One connection of ``db``: a pooled one for the block, or ``db`` itself."""
    if isinstance(db, (Pool, asyncpg.Pool)):
        async with db.acquire() as conn:
            yield conn
    else:
        yield db


@asynccontextmanager
async def atomic(conn: Connection) -> AsyncIterator[None]:
    """The block in one transaction: the unit of work's own in a unit (no savepoint: a
    failure fails the unit), else a transaction of its own."""
    if isinstance(conn, UnitConnection):
        async with conn.atomic():
            yield
    else:
        async with conn.transaction():
            yield


async def write(db: Executor, query: str, *args: object) -> None:
    """A write whose outcome is not read: in a unit of work it is sent with the unit's other
    such writes (:class:`~.unit.UnitConnection`), else now."""
    if isinstance(db, UnitConnection):
        await db.write(query, *args)
    else:
        await db.execute(query, *args)


async def read_row(db: Executor, query: str, *args: object) -> asyncpg.Record | None:
    """One row of a plain SELECT; a unit of work that has not written yet needs no
    transaction for it (:meth:`~.unit.UnitConnection.read_row`)."""
    if isinstance(db, UnitConnection):
        return await db.read_row(query, *args)
    return await db.fetchrow(query, *args)


async def read_rows(db: Executor, query: str, *args: object) -> list[asyncpg.Record]:
    """The rows of a plain SELECT, as :func:`read_row` reads one
    (:meth:`~.unit.UnitConnection.read_rows`)."""
    if isinstance(db, UnitConnection):
        return await db.read_rows(query, *args)
    return await db.fetch(query, *args)


def utc(value: dt.datetime) -> dt.datetime:
    """An aware datetime; a naive one is taken as UTC (timestamptz would read it as UTC too)."""
    return value if value.tzinfo is not None else value.replace(tzinfo=dt.UTC)


def account_uuid(account_id: str) -> uuid.UUID | None:
    """The account id as a UUID, or None for a value that cannot be an account id here."""
    try:
        return _parsed_uuid(account_id)
    except (ValueError, TypeError, AttributeError):
        return None


# uuid.UUID parses in Python (~2 µs); a caller sends the same account id on every request
# (docs/benchmarks.md). UUIDs are immutable; failures are not cached.
@functools.lru_cache(maxsize=4096)
def _parsed_uuid(account_id: str) -> uuid.UUID:
    return uuid.UUID(account_id)


def profile_json(profile: Mapping[str, Any]) -> str:
    # default=str: a provider's claim of an odd type is kept as text rather than failing.
    return _PROFILE_JSON(dict(profile))


# json.dumps(..., default=str, separators=(",", ":")), its encoder made once.
_PROFILE_JSON = json.JSONEncoder(default=str, separators=(",", ":")).encode


def account(row: asyncpg.Record) -> Account:
    return Account(
        id=str(row["id"]),
        email=row["email"],
        name=row["name"],
        created_at=row["created_at"],
        last_login_at=row["last_login_at"],
        email_verified=row["email_verified"],
    )


def linked_identity(row: asyncpg.Record, *, own: str = "") -> LinkedIdentity:
    """``own``: the prefix of the identity's ``email`` and ``email_verified`` columns in a row
    that joins the account's (whose columns of those names are the account's)."""
    return LinkedIdentity(
        account_id=str(row["account_id"]),
        identity=ProviderIdentity(row["provider"], row["subject"]),
        email=row[own + "email"],
        linked_at=row["linked_at"],
        is_primary=row["is_primary"],
        email_verified=row[own + "email_verified"],
        disabled_reason=row["disabled_reason"],
        email_disabled=row["email_disabled"],
    )


def sign_in_event(row: asyncpg.Record) -> SignInEvent:
    return SignInEvent(
        at=row["at"],
        provider=row["provider"],
        outcome=Outcome(row["outcome"]),
        client_address=row["client_address"],
        user_agent=row["user_agent"],
        account_id=row["account_id"],
        detail=row["detail"],
    )


def affected(status: str) -> int:
    """The row count of a command status such as ``DELETE 3``."""
    try:
        return int(status.rsplit(" ", 1)[-1])
    except ValueError:
        return 0


_T = TypeVar("_T")


def shallow_copy(obj: _T) -> _T:
    """``copy.copy`` of a plain object (its ``__dict__`` shared out), without ``copy``'s
    ``__reduce_ex__`` round: a repository bound to a unit of work is made per sign-in."""
    copied: _T = object.__new__(type(obj))
    copied.__dict__.update(obj.__dict__)
    return copied


class Bindable:
    """A repository whose statements run on ``_db``: the pool, or one connection of a unit of
    work (:meth:`bound`)."""

    def __init__(self, db: Executor) -> None:
        self._db = db

    def bound(self, conn: Executor) -> Self:
        """The same repository through ``conn`` (a unit of work's transaction), sharing all
        else it holds (a purge's schedule)."""
        bound = shallow_copy(self)
        bound._db = conn
        return bound
