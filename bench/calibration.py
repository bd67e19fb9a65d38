"""The yardstick the import and follower benches print first: how fast plain `json.loads`
parses their generated lines on this machine right now. The machine kind is shared and
its speed moves from minute to minute, so MB/s figures are read against this one."""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from pathlib import Path


def json_loads_mb_per_s(paths: Iterable[Path], limit: int) -> float:
    """MB/s of `json.loads` over the lines of `paths`, in order, stopping at the line that
    brings the total to `limit` bytes."""
    size = 0
    start = time.perf_counter()
    for path in paths:
        with path.open("rb") as fh:
            for line in fh:
                json.loads(line)
                size += len(line)
                if size >= limit:
                    return size / 1e6 / (time.perf_counter() - start)
    return size / 1e6 / (time.perf_counter() - start)
