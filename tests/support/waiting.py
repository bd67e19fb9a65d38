"""Polling for what another process (the worker, daphne, the browser) does."""

from __future__ import annotations

import time


def wait_until(predicate, timeout: float = 30.0, interval: float = 0.1):
    """Call ``predicate`` until it returns something truthy and return that; None when
    ``timeout`` seconds pass first (so callers ``assert wait_until(...)``)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    return None


def wait_db(predicate, timeout: float = 30.0, what: str = "the database"):
    """``wait_until`` for a row another process writes: fails the test when it times out."""
    value = wait_until(predicate, timeout, 0.2)
    if not value:
        raise AssertionError(f"timed out waiting for {what}")
    return value
