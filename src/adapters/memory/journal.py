"""What a memory unit of work puts back when it fails: each table notes, on its first write
within the unit, what it held before, so a unit pays only for what it writes.

A :class:`Table` notes the value a key had (or that it had none) the first time the unit
writes that key; deleting a row that was there when the unit began copies the table once (a
row put back would otherwise land at the end of the dict's order; the deletions that do so
scan the table already). A :class:`Log` notes what its appends evicted. Outside a unit, or
in a store no unit of work watches, nothing is noted.
"""

from __future__ import annotations

import collections
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Generic, Self, TypeVar

K = TypeVar("K")
V = TypeVar("V")
T = TypeVar("T")


class _Missing:
    """The mark of a key a table did not hold when the unit began."""


_MISSING = _Missing()


class Journal:
    """The tables and logs a unit has written so far. :meth:`open` starts a unit's journal;
    :meth:`rollback` or :meth:`commit` ends it."""

    def __init__(self) -> None:
        self.active = False
        self._touched: list[Table[Any, Any] | Log[Any]] = []

    def touched(self, part: Table[Any, Any] | Log[Any]) -> None:
        """``part`` was written for the first time in this unit."""
        self._touched.append(part)

    def open(self) -> None:
        """A unit begins: nothing is noted yet."""
        self.active = True

    def commit(self) -> None:
        """The unit ended normally: its writes stay."""
        self._end(undo=False)

    def rollback(self) -> None:
        """The unit raised: every part it wrote holds what it held when the unit began."""
        self._end(undo=True)

    def _end(self, *, undo: bool) -> None:
        touched, self._touched, self.active = self._touched, [], False
        for part in touched:
            if undo:
                part.undo()
            else:
                part.forget()


class Table(dict[K, V]):
    """A dict whose writes within a unit are noted in the journal watching it (reads are the
    dict's own). Its writes are ``[]=``, ``del``, :meth:`pop`, :meth:`setdefault` and
    :meth:`delete_where` only."""

    def __init__(self) -> None:
        super().__init__()
        self.journal: Journal | None = None
        self._before: dict[K, V | _Missing] | None = None
        self._copy: dict[K, V] | None = None

    def _note(self, key: K, *, deleting: bool = False) -> None:
        journal = self.journal
        if journal is None or not journal.active or self._copy is not None:
            return
        if self._before is None:
            self._before = {}
            journal.touched(self)
        before = self._before
        if key not in before:
            before[key] = dict.get(self, key, _MISSING)
        if deleting and before[key] is not _MISSING:
            self._copy = self._as_it_was()

    def _as_it_was(self) -> dict[K, V]:
        """The rows as the unit found them, in their order (no row of theirs deleted yet)."""
        rows = dict(self)
        for key, value in (self._before or {}).items():
            if isinstance(value, _Missing):
                rows.pop(key, None)
            else:
                rows[key] = value
        return rows

    def undo(self) -> None:
        """Put back the rows the unit found."""
        if self._copy is not None:
            dict.clear(self)
            dict.update(self, self._copy)
        else:
            for key, value in (self._before or {}).items():
                if isinstance(value, _Missing):
                    dict.pop(self, key, None)
                else:
                    dict.__setitem__(self, key, value)
        self.forget()

    def forget(self) -> None:
        """The unit committed: drop what was noted."""
        self._before = self._copy = None

    def __setitem__(self, key: K, value: V) -> None:
        self._note(key)
        dict.__setitem__(self, key, value)

    def __delitem__(self, key: K) -> None:
        self._note(key, deleting=True)
        dict.__delitem__(self, key)

    def pop(self, key: K) -> V | None:  # type: ignore[override]
        """Remove the row of ``key`` and return it (None when there is none)."""
        if key not in self:
            return None
        self._note(key, deleting=True)
        return dict.pop(self, key)

    def setdefault(self, key: K, value: V) -> V:
        """The row of ``key``, ``value`` put there first when there is none."""
        if key not in self:
            self[key] = value
        return dict.__getitem__(self, key)

    def delete_where(self, keys: Iterable[K]) -> int:
        """Remove the rows of ``keys`` (each held); how many."""
        count = 0
        for key in list(keys):
            del self[key]
            count += 1
        return count

    def delete_if(self, condition: Callable[[V], bool]) -> int:
        """Remove the rows that meet ``condition``; how many."""
        return self.delete_where([k for k, v in self.items() if condition(v)])


class Log(Generic[T]):
    """A bounded deque whose appends within a unit are noted in the journal watching it."""

    def __init__(self, maxlen: int) -> None:
        self.journal: Journal | None = None
        self._items: collections.deque[T] = collections.deque(maxlen=maxlen)
        self._maxlen = maxlen
        self._noted = False
        self._own = 0  # items appended in this unit and still held
        self._evicted: list[T] = []  # items the unit found, evicted by its appends, in order
        self._copy: list[T] | None = None

    def _note(self) -> bool:
        """Whether this write is noted (a unit is open and the log was not copied)."""
        journal = self.journal
        if journal is None or not journal.active or self._copy is not None:
            return False
        if not self._noted:
            self._noted = True
            journal.touched(self)
        return True

    def append(self, item: T) -> None:
        """Add ``item`` at the end (the oldest goes when the log is full)."""
        if self._note():
            if len(self._items) == self._maxlen:
                if len(self._items) > self._own:
                    self._evicted.append(self._items[0])
                else:
                    self._own -= 1
            self._own += 1
        self._items.append(item)

    def replace(self, items: Iterable[T]) -> None:
        """Hold ``items`` instead (the unit's first such write copies the log once)."""
        if self._note():
            self._copy = self._as_it_was()
        self._items = collections.deque(items, maxlen=self._maxlen)

    def _as_it_was(self) -> list[T]:
        held = list(self._items)
        return self._evicted + held[: len(held) - self._own]

    def undo(self) -> None:
        """Put back the items the unit found."""
        if self._copy is not None:
            self._items = collections.deque(self._copy, maxlen=self._maxlen)
        else:
            for _ in range(self._own):
                self._items.pop()
            self._items.extendleft(reversed(self._evicted))
        self.forget()

    def forget(self) -> None:
        """The unit committed: drop what was noted."""
        self._noted, self._own, self._evicted, self._copy = False, 0, [], None

    def __iter__(self) -> Iterator[T]:
        return iter(self._items)

    def __reversed__(self) -> Iterator[T]:
        return reversed(self._items)

    def __len__(self) -> int:
        return len(self._items)


class Stored:
    """A memory store whose :class:`Table` and :class:`Log` attributes note a unit's writes."""

    def bound(self, _handle: object) -> Self:
        """The store itself: a memory unit of work uses the stores as they are."""
        return self

    def join(self, journal: Journal) -> None:
        """Note this store's writes within a unit in ``journal`` (the unit of work's)."""
        for part in vars(self).values():
            if isinstance(part, Table | Log):
                part.journal = journal


class OneTable(Stored, Generic[K, V]):
    """A memory store of one :class:`Table` (``_rows``) of immutable records."""

    def __init__(self) -> None:
        self._rows: Table[K, V] = Table()

    def snapshot(self) -> dict[K, V]:
        """The rows held (a shallow copy)."""
        return self._rows.copy()
