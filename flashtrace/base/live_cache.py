"""What is derived from a live object that never changes (a `Trace`), kept while the object lives.

One `LiveCache` per kind of result: `get(owner, key, build)` builds once per key (threads asking at once get the
same result), and the entry goes when `owner` is collected, so a long app session does not keep every trace it
analysed. Keying on the object is right only because the object cannot change: a changed trace is a new object.
"""

from __future__ import annotations

import threading
import weakref
from typing import Callable, Generic, Hashable, TypeVar

T = TypeVar("T")


class LiveCache(Generic[T]):
    """Results by key (``entries``), each dropped with the object it was derived from; thread-safe."""

    def __init__(self) -> None:
        self.entries: dict[Hashable, T] = {}
        self._lock = threading.Lock()

    def get(self, owner: object, key: Hashable, build: Callable[[], T]) -> T:
        """The result kept under `key`, else `build()`'s, kept until `owner` is collected. Built outside the lock;
        when two threads build at once, the first one stored is every caller's answer.

        Args:
            owner: The live object the result is derived from; the entry is dropped when it is collected.
            key: What the result is kept under.
            build: Makes the result when none is kept under `key` yet.

        Returns:
            The result kept under `key`: the one already there, else `build()`'s (or another thread's, when it
            stored first).
        """
        with self._lock:
            if key in self.entries:
                return self.entries[key]
        value = build()
        with self._lock:
            if key not in self.entries:
                self.entries[key] = value
                weakref.finalize(owner, self._forget, key)
            return self.entries[key]

    def _forget(self, key: Hashable) -> None:
        with self._lock:
            self.entries.pop(key, None)


__all__ = ["LiveCache"]
