"""``History``: a list that counts its edits, so a growing conversation is read once.

A conversation mostly grows at its end. ``History`` is a plain ``list`` (every
list operation works, ``append`` and ``extend`` at C speed) that adds one
counter, ``edits``: every change other than adding at the end (``h[i] = m``,
``del h[i:j]``, ``insert``, ``pop``, ``remove``, ``clear``, ``sort``,
``reverse``, ``*=``) adds one to it. Whoever remembers what it read of a
history (the loop's index of it, the formatter, the request guard) keeps
``(the History, edits, length, last message)``; when the same object comes
back with the same ``edits``, at least that length and the same object at
that place, only the messages after it are new. Any other list is read in
full, as before.

The contract the fast paths rely on: messages are not changed in place once
they are in the history (``OpenAIFormatter`` documents the same rule); the
history itself may be edited in any way, and an edit is seen: each edit
logs the lowest index it may have changed, so a reader keeps what comes
before it (``del history[k:]`` rereads from ``k`` on, not from the start).
"""

from __future__ import annotations

import operator
from collections.abc import Iterable
from typing import Any, SupportsIndex, TypeVar, overload

__all__ = ["History", "Mark", "grew_from", "mark"]

T = TypeVar("T")


class History(list[T]):
    """A ``list`` whose ``edits`` counts every change that is not an addition at the end."""

    __slots__ = ("_low",)

    def __init__(self, items: Iterable[T] = ()) -> None:
        super().__init__(items)
        self._low: list[int] = []  # per edit, the lowest index it may have changed

    @property
    def edits(self) -> int:
        """Changes so far that were not additions at the end."""
        return len(self._low)

    def unchanged_since(self, edits: int) -> int:
        """How many leading items no edit after the first ``edits`` touched (``len`` when none did)."""
        low = self._low
        return min(low[edits:], default=len(self)) if edits < len(low) else len(self)

    def _slot(self, index: SupportsIndex) -> int:
        at = operator.index(index)
        return max(0, at + len(self) if at < 0 else at)

    def _touch(self, index: Any) -> None:
        if isinstance(index, slice):
            start, _, step = index.indices(len(self))
            self._low.append(start if step > 0 else 0)
        else:
            self._low.append(min(self._slot(index), len(self)))

    @overload
    def __setitem__(self, index: SupportsIndex, value: T) -> None: ...
    @overload
    def __setitem__(self, index: slice, value: Iterable[T]) -> None: ...
    def __setitem__(self, index: Any, value: Any) -> None:
        self._touch(index)
        super().__setitem__(index, value)

    def __delitem__(self, index: SupportsIndex | slice) -> None:
        self._touch(index)
        super().__delitem__(index)

    def __imul__(self, count: SupportsIndex) -> History[T]:
        self._low.append(0)
        super().__imul__(count)
        return self

    def insert(self, index: SupportsIndex, value: T) -> None:
        """``list.insert``, counted in ``edits``."""
        self._touch(index)
        super().insert(index, value)

    def pop(self, index: SupportsIndex = -1) -> T:
        """``list.pop``, counted in ``edits``."""
        self._touch(index)
        return super().pop(index)

    def remove(self, value: T) -> None:
        """``list.remove``, counted in ``edits``."""
        self._low.append(self.index(value) if value in self else len(self))
        super().remove(value)

    def clear(self) -> None:
        """``list.clear``, counted in ``edits``."""
        self._low.append(0)
        super().clear()

    def sort(self, *args: Any, **kwargs: Any) -> None:
        """``list.sort``, counted in ``edits``."""
        self._low.append(0)
        super().sort(*args, **kwargs)

    def reverse(self) -> None:
        """``list.reverse``, counted in ``edits``."""
        self._low.append(0)
        super().reverse()

    def __reduce__(self) -> tuple[Any, ...]:  # copy / pickle: a new History with the same items
        return (History, (list(self),))

    def __repr__(self) -> str:
        return f"History({list.__repr__(self)})"


Mark = tuple[Any, int, int, Any]
"""What a reader remembers of a list it read: ``(the list, edits, length, last item)``."""


def mark(items: list[Any]) -> Mark | None:
    """The mark of ``items`` as it is now; None for a list that does not count its edits."""
    if type(items) is not History:
        return None
    return (items, items.edits, len(items), items[-1] if items else None)


def grew_from(items: list[Any], seen: Mark | None) -> int | None:
    """How many leading items of ``items`` are those of ``seen`` unchanged (O(1) without edits); None: unknown.

    ``items`` must be the same ``History`` object. Without an edit since, that
    is the old length (checked: at least as long, the same last item there);
    after edits, the items before the lowest index an edit touched.
    """
    if seen is None or items is not seen[0] or type(items) is not History:
        return None
    length = seen[2]
    if items.edits != seen[1]:
        return min(length, items.unchanged_since(seen[1]), len(items))
    if len(items) < length or (length and items[length - 1] is not seen[3]):
        return None
    return length
