"""A de-duplicating, delaying queue of Job keys for the controller's worker."""

from __future__ import annotations

import threading
import time

Key = tuple[str, str]


class WorkQueue:
    """Each key is queued at most once, at the earliest time anyone asked for it."""

    def __init__(self) -> None:
        self._due: dict[Key, float] = {}
        self._cond = threading.Condition()
        self._closed = False

    def add(self, key: Key, delay_s: float = 0.0) -> None:
        due = time.monotonic() + max(0.0, delay_s)
        with self._cond:
            if key not in self._due or due < self._due[key]:
                self._due[key] = due
                self._cond.notify()

    def get(self, timeout_s: float) -> Key | None:
        """The next due key, or None after ``timeout_s`` (or once closed)."""
        deadline = time.monotonic() + timeout_s
        with self._cond:
            while not self._closed:
                now = time.monotonic()
                if self._due:
                    key, due = min(self._due.items(), key=lambda kv: kv[1])
                    if due <= now:
                        del self._due[key]
                        return key
                    wait = min(due, deadline) - now
                else:
                    wait = deadline - now
                if wait <= 0:
                    return None
                self._cond.wait(wait)
            return None

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    def __len__(self) -> int:
        with self._cond:
            return len(self._due)
