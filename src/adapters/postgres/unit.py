"""The connection of one unit of work: few round trips, the same all-or-nothing.

* writes whose result nobody reads (:meth:`UnitConnection.write`) wait and go to the server
  together as one statement (data-modifying ``WITH`` clauses), before the next statement or at
  the end;
* the transaction begins at the first statement that needs one: a unit whose reads
  (:meth:`~UnitConnection.read_row`) all come before its writes needs none, its one combined
  write being atomic by itself (READ COMMITTED: a plain ``SELECT`` takes no lock).

A write that must change a row (:meth:`UnitConnection.write_required`, a passkey's counter)
waits with the others too: their statement then ends in a ``SELECT`` that divides by the rows
it changed, so that none fails the whole statement (a division by zero), nothing written.

So a login's unit, and a registration's, is two round trips; a registration's lost race fails
the whole statement (``IdentityRace``). A statement run after waiting writes sees them (they
are sent first); a write whose statement already waits is sent after the others, so no row is
changed twice by one statement.
"""

from __future__ import annotations

import contextlib
import functools
import re
from collections.abc import AsyncIterator, Sequence
from types import TracebackType

import asyncpg

from authgate.adapters.sql.engine import Db

from .pool import ConnectionPool, Leased

_PARAMETER = re.compile(r"\$(\d+)")


def affected(status: str) -> int:
    """The row count of a command status such as ``DELETE 3``."""
    try:
        return int(status.rsplit(" ", 1)[-1])
    except ValueError:
        return 0


class UnitConnection(Db):
    """The ``async with`` of a unit of work on PostgreSQL: a pooled connection for the block
    (see the module's text), the :class:`~authgate.adapters.sql.engine.Db` of its
    repositories; the unit is finished when the block ends and aborted when it raises."""

    defers_writes = True

    def __init__(self, pool: ConnectionPool) -> None:
        self._lease = pool.acquire()
        self._transaction: contextlib.AsyncExitStack | None = None
        self._waiting: list[tuple[str, Sequence[object]]] = []
        # The waiting write that must change a row (its arguments) and the error if it does not.
        self._required: tuple[Sequence[object], Exception] | None = None

    async def __aenter__(self) -> Db:
        self._conn: Leased = await self._lease.__aenter__()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            if exc is None:
                try:
                    await self.finish()
                except BaseException as e:
                    await self.abort(e)
                    raise
            else:
                await self.abort(exc)
        finally:
            await self._lease.__aexit__(None, None, None)

    # -- statements ----------------------------------------------------------------------

    async def write(self, query: str, *args: object) -> None:
        """A write whose outcome nobody reads: sent with the unit's other waiting writes.
        ``query`` is one INSERT, UPDATE or DELETE without a ``WITH`` of its own."""
        await self.write_amendable(query, args)

    async def write_amendable(self, query: str, args: Sequence[object]) -> None:
        """:meth:`write`, its ``args`` (a list) still open to change while it waits."""
        if any(waiting == query for waiting, _ in self._waiting):
            await self._ready()  # the same statement twice: the first goes first
        self._waiting.append((query, args))

    async def write_required(self, query: str, args: list[object], missing: Exception) -> bool:
        """A write that must change a row: it waits with the others, and the statement that
        sends them fails, nothing written, with ``missing`` raised if it changed none. One
        such write per statement: a second one sends the waiting writes first."""
        if self._required is not None:
            await self._ready()
        await self.write_amendable(query, args)
        self._required = (args, missing)
        return True

    def is_waiting(self, args: Sequence[object]) -> bool:
        return any(waiting is args for _, waiting in self._waiting)

    async def read_row(self, query: str, *args: object) -> asyncpg.Record | None:
        """A read (a plain SELECT): outside the transaction while the unit has written
        nothing, else in it, after the waiting writes."""
        if self._transaction is None and not self._waiting:
            return await self._conn.fetchrow(query, *args)
        return await self.fetchrow(query, *args)

    async def read_rows(self, query: str, *args: object) -> list[asyncpg.Record]:
        if self._transaction is None and not self._waiting:
            return await self._conn.fetch(query, *args)
        return await self.fetch(query, *args)

    async def fetchrow(self, query: str, *args: object) -> asyncpg.Record | None:
        return await (await self._ready()).fetchrow(query, *args)

    async def fetch(self, query: str, *args: object) -> list[asyncpg.Record]:
        return await (await self._ready()).fetch(query, *args)

    async def execute(self, query: str, *args: object) -> int:
        """A statement in the unit's transaction; the rows it changed."""
        return affected(await (await self._ready()).execute(query, *args))

    @contextlib.asynccontextmanager
    async def transaction(self) -> AsyncIterator[Db]:
        """A savepoint in the unit's transaction: the block's writes roll back alone."""
        conn = await self._ready()
        async with conn.transaction():
            yield self

    @contextlib.asynccontextmanager
    async def atomic(self) -> AsyncIterator[Db]:
        """The block in the unit's transaction (no savepoint: a failure fails the unit)."""
        await self._ready()
        yield self

    # -- the end of the unit -------------------------------------------------------------

    async def finish(self) -> None:
        """Send the waiting writes and commit."""
        if self._transaction is None:
            if self._waiting:  # one statement: atomic without a transaction
                await self._send_waiting()
            return
        await self._send_waiting()
        transaction, self._transaction = self._transaction, None
        await transaction.aclose()  # COMMIT

    async def abort(self, error: BaseException) -> None:
        """Drop the waiting writes and roll back what was sent."""
        self._waiting.clear()
        self._required = None
        transaction, self._transaction = self._transaction, None
        if transaction is not None:
            await transaction.__aexit__(type(error), error, error.__traceback__)  # ROLLBACK

    async def _ready(self) -> Leased:
        """The connection in the unit's transaction, the waiting writes sent."""
        if self._transaction is None:
            stack = contextlib.AsyncExitStack()
            await stack.enter_async_context(self._conn.transaction())  # BEGIN
            self._transaction = stack
        await self._send_waiting()
        return self._conn

    async def _send_waiting(self) -> None:
        if self._waiting:
            required, self._required = self._required, None
            guard = None
            if required is not None:
                guard = next(i for i, (_, a) in enumerate(self._waiting) if a is required[0])
            query, args = _combined(self._waiting, guard)
            self._waiting.clear()  # sent or failed: never twice
            try:
                await self._conn.execute(query, *args)
            except asyncpg.DivisionByZeroError as e:
                if required is None:
                    raise
                raise required[1] from e


def _combined(
    writes: Sequence[tuple[str, Sequence[object]]], guard: int | None = None
) -> tuple[str, list[object]]:
    """One statement for ``writes``: each but the last a data-modifying WITH clause, their
    parameters renumbered. All of them run, in one snapshot, or none does. With ``guard``
    (the index of a write that must change a row) every write is a clause and the statement
    ends in a ``SELECT`` that divides by that write's rows."""
    args: list[object] = []
    for _, values in writes:
        args.extend(values)
    return _combined_text(tuple((query, len(values)) for query, values in writes), guard), args


# By (query, argument count) of each write: a sign-in combines the same few sequences.
@functools.lru_cache(maxsize=256)
def _combined_text(shape: tuple[tuple[str, int], ...], guard: int | None = None) -> str:
    clauses: list[str] = []
    offset = 0
    for query, count in shape:
        clauses.append(_renumbered(query.strip(), offset))
        offset += count
    if guard is not None:
        clauses[guard] += " RETURNING 1"
        named = ", ".join(f"w{i} AS ({q})" for i, q in enumerate(clauses))
        return f"WITH {named} SELECT 1 / (SELECT count(*) FROM w{guard})"  # noqa: S608
    *first, last = clauses
    if first:
        last = "WITH " + ", ".join(f"w{i} AS ({q})" for i, q in enumerate(first)) + " " + last
    return last


def _renumbered(query: str, offset: int) -> str:
    return _PARAMETER.sub(lambda m: f"${int(m.group(1)) + offset}", query)


class PoolDb(Db):
    """The :class:`~authgate.adapters.sql.engine.Db` of the pool: each statement on a pooled
    connection of its own; a transaction on one for its block, as a unit of work's."""

    def __init__(self, pool: ConnectionPool) -> None:
        self.pool = pool

    async def execute(self, query: str, *args: object) -> int:
        return affected(await self.pool.execute(query, *args))

    async def fetch(self, query: str, *args: object) -> list[asyncpg.Record]:
        return await self.pool.fetch(query, *args)

    async def fetchrow(self, query: str, *args: object) -> asyncpg.Record | None:
        return await self.pool.fetchrow(query, *args)

    def transaction(self) -> UnitConnection:
        return UnitConnection(self.pool)

    atomic = transaction
