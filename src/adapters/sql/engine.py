"""What the SQL repositories run on: a connection of either engine (:class:`Db`) and the
spelling of the engine's SQL (:class:`Dialect`), each engine's subclasses (see the package).
"""

from __future__ import annotations

import datetime as dt
import functools
from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol


@functools.cache
def insert(table: str, columns: str, upsert_key: str | None = None) -> str:
    """An INSERT into ``table`` of ``columns`` (``$1``... in their order); with ``upsert_key``,
    a row of the same key takes the other columns' new values instead."""
    names = columns.split(", ")
    marks = ", ".join(f"${i}" for i in range(1, len(names) + 1))
    text = f"INSERT INTO {table} ({columns}) VALUES ({marks})"  # noqa: S608 - our names
    if upsert_key is None:
        return text
    new = ", ".join(f"{c} = EXCLUDED.{c}" for c in names if c not in upsert_key.split(", "))
    return f"{text} ON CONFLICT ({upsert_key}) DO UPDATE SET {new}"


class Row(Protocol):
    """A row as a store reads it back: its values by position."""

    def __getitem__(self, index: int, /) -> Any: ...


class Db:
    """The store's connections, or the one connection of a unit of work: an engine's
    subclass provides ``execute``, ``fetch``, ``fetchrow``, ``transaction`` and ``atomic``.

    ``write`` is a statement whose outcome nobody reads: a unit of work may hold it to send it
    with its other such writes (``defers_writes``); ``read_row`` and ``read_rows`` are plain
    SELECTs, which such a unit may run before its transaction begins. Here, as on every
    engine but in PostgreSQL's unit of work, both run now."""

    defers_writes = False

    async def execute(self, query: str, *args: object) -> int:
        """Run a statement; the number of rows it changed."""
        raise NotImplementedError

    async def fetch(self, query: str, *args: object) -> Sequence[Row]:
        raise NotImplementedError

    async def fetchrow(self, query: str, *args: object) -> Row | None:
        raise NotImplementedError

    def transaction(self) -> AbstractAsyncContextManager[Db]:
        """One connection, all or nothing; in a unit of work a savepoint of its own."""
        raise NotImplementedError

    def atomic(self) -> AbstractAsyncContextManager[Db]:
        """One connection, all or nothing; in a unit of work the unit's own transaction."""
        raise NotImplementedError

    async def write(self, query: str, *args: object) -> None:
        """A write whose outcome is not read (see the class)."""
        await self.execute(query, *args)

    async def write_amendable(self, query: str, args: list[object]) -> None:
        """:meth:`write`, with arguments the caller may change while it waits."""
        await self.execute(query, *args)

    async def write_required(self, query: str, args: list[object], missing: Exception) -> bool:
        """A write that must change a row for the unit to stand (an UPDATE without
        ``RETURNING``); whether it did. A unit of work that sends its writes together
        (``defers_writes``) answers True and checks it when it sends them: the statement then
        fails, nothing of it written, and the unit raises ``missing``."""
        return await self.execute(query, *args) > 0

    def is_waiting(self, args: list[object]) -> bool:
        """Whether the write of ``args`` (:meth:`write_amendable`) waits still."""
        return False

    async def read_row(self, query: str, *args: object) -> Row | None:
        """One row of a plain SELECT."""
        return await self.fetchrow(query, *args)

    async def read_rows(self, query: str, *args: object) -> Sequence[Row]:
        return await self.fetch(query, *args)


class Dialect:
    """How an engine spells what differs: times, lists and account ids as its tables keep
    them, row addresses, locks, a few statements, and its errors. A subclass per engine."""

    rowid = "rowid"
    """The column that addresses a row."""
    greatest = "MAX"
    """The larger of two values (PostgreSQL's ``GREATEST`` ignores NULL, SQLite's ``MAX``
    does not: the repositories never pass it a NULL)."""
    least = "MIN"
    purge_inline = True
    """Whether a due purge runs in the write that triggered it (else in the background)."""

    def time(self, value: dt.datetime) -> object:
        """A time as the driver takes it."""
        raise NotImplementedError

    def read_time(self, value: Any) -> dt.datetime:
        """A time as the driver gives it back."""
        raise NotImplementedError

    def account_key(self, account_id: str) -> object | None:
        """The account id as the tables hold it; None for one that cannot be an account's."""
        return account_id

    def scopes(self, values: Sequence[str]) -> object:
        """A list of scopes as stored."""
        raise NotImplementedError

    def read_scopes(self, value: Any) -> list[str]:
        raise NotImplementedError

    def strings(self, values: Sequence[str]) -> object:
        """A list of other names (a passkey's transports) as stored."""
        raise NotImplementedError

    def read_strings(self, value: Any) -> list[str]:
        raise NotImplementedError

    def lock(self, clause: str) -> str:
        """A row-locking clause (``FOR UPDATE``...), or nothing where the engine's one writer
        at a time makes it needless."""
        return ""

    def batch_delete(self, table: str, column: str, condition: str) -> str:
        """Delete at most ``$2`` rows that meet ``condition``, the oldest by ``column`` first."""
        raise NotImplementedError

    def claim(self, table: str, columns: Sequence[str]) -> str:
        """Lease (``leased_until = $2``) at most ``$3`` rows of an outbox due at ``$1``,
        returning ``columns``."""
        raise NotImplementedError

    take_expired = ""
    """Delete and return (the session clients' columns) at most ``$2`` clients of sessions
    expired unrevoked at ``$1``."""

    rotate: str | None = None
    """A refresh token's rotation as one statement (see ``authorization``), if the engine has
    one."""
    grant_put: str | None = None
    """A grant's upsert that unions the scopes in one statement (see ``authorization``)."""
    grant_consent_first: str | None = None
    grant_consent_again: str | None = None

    def is_unique_violation(self, error: BaseException) -> bool:
        raise NotImplementedError

    def is_foreign_key_violation(self, error: BaseException) -> bool:
        raise NotImplementedError

    def is_identity_race(self, error: BaseException) -> bool:
        """Whether ``error`` is a second insert of a provider identity's key."""
        raise NotImplementedError
