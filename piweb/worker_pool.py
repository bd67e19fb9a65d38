"""A Celery pool of threads with separate slots per queue, for `runpiweb`'s light layout.

`runpiweb` on one machine runs two workers (piweb/queues.py, ``light_worker_groups``):
the agent runs on Celery's own thread pool (they wait on the model's network answers; the
commands they run are bubblewrap processes of their own), and every other queue in one
process on this pool. Each queue kind keeps its own threads, as the separate workers of
``runworkers`` keep their own processes:

- ``<base>-commands``: ``PIWEB_COMMAND_CONCURRENCY`` threads;
- the summaries queue: ``PIWEB_SUMMARY_CONCURRENCY`` threads;
- ``<base>-imports`` and ``<base>`` (the small tasks): ``PIWEB_IMPORT_CONCURRENCY``.

So a flood of imports or summaries waits in its own queue and never takes the thread a
user's `!echo` needs. The worker is started with room to prefetch many messages (its
``-c`` times ``queues.PREFETCH_MULTIPLIER``): tasks wait here, in their own
queue's line, rather than in the broker behind a message the worker cannot take yet. They
stay unacknowledged until they ran (acks_late), so a worker that dies loses none.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

from celery.concurrency.base import BasePool, apply_target
from celery.concurrency.thread import ApplyResult  # type: ignore[attr-defined]  # celery-types' stub omits it
from celery.concurrency.thread import TaskPool as ThreadTaskPool

from piweb import queues


class QueuePool(ThreadTaskPool):
    """Celery's thread pool, one executor per queue kind (``queues.slots_by_queue``)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        BasePool.__init__(self, *args, **kwargs)  # (not the thread pool's single executor)
        base_name = self.app.conf.task_default_queue if self.app else "piweb"
        slots = queues.slots_by_queue(base_name)
        # The imports and the small tasks share one line (as they shared one worker).
        shared = ThreadPoolExecutor(max_workers=slots[base_name], thread_name_prefix="imports")
        self.lines: dict[str, ThreadPoolExecutor] = {}
        for queue, count in slots.items():
            if queue == base_name or queue == f"{base_name}-imports":
                self.lines[queue] = shared
            else:
                prefix = queue.rsplit("-", 1)[-1]
                self.lines[queue] = ThreadPoolExecutor(max_workers=count, thread_name_prefix=prefix)
        self.fallback = shared

    def line_for(self, request: dict | None) -> ThreadPoolExecutor:
        info = (request or {}).get("delivery_info") or {}
        return self.lines.get(info.get("routing_key") or "", self.fallback)

    def on_stop(self) -> None:
        for executor in {id(e): e for e in self.lines.values()}.values():
            executor.shutdown(cancel_futures=True)
        self.lines = {}

    def on_apply(
        self,
        target,
        args=None,
        kwargs=None,
        callback=None,
        accept_callback=None,
        **_: Any,
    ) -> ApplyResult:
        request = args[2] if args and len(args) > 2 and isinstance(args[2], dict) else None
        future = self.line_for(request).submit(
            apply_target, target, args, kwargs, callback, accept_callback
        )
        return ApplyResult(future)

    def _get_info(self) -> dict:
        info: dict = {"max-concurrency": self.limit}
        info["lines"] = {queue: e._max_workers for queue, e in self.lines.items()}
        return info
