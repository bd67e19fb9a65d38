"""A cross-thread abort signal (pi's AbortSignal): an Event plus callbacks."""

from __future__ import annotations

import threading
from collections.abc import Callable


class AbortSignal:
    def __init__(self) -> None:
        self._event = threading.Event()
        self._lock = threading.Lock()
        self._callbacks: list[Callable[[], None]] = []
        self.reason = ""

    def is_set(self) -> bool:
        return self._event.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        return self._event.wait(timeout)

    def trigger(self, reason: str = "aborted") -> None:
        with self._lock:
            if self._event.is_set():
                return
            self.reason = reason
            self._event.set()
            callbacks = list(self._callbacks)
        for callback in callbacks:
            try:
                callback()
            except Exception:  # a failing canceller must not stop the others
                pass

    def add_callback(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Call ``callback`` on abort (at once if already aborted); returns a remover."""
        with self._lock:
            fire = self._event.is_set()
            if not fire:
                self._callbacks.append(callback)
        if fire:
            callback()

        def remove() -> None:
            with self._lock:
                if callback in self._callbacks:
                    self._callbacks.remove(callback)

        return remove
