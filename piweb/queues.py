"""The Celery queues and the workers that serve them (docs/security.md, "What a session may take").

Each kind of work has its own queue and its own worker slots, so a user's long agent runs
never delay anyone's short command, summary or import:

- ``<base>-runs``: agent turns (``PIWEB_WORKER_CONCURRENCY`` slots);
- ``<base>-commands``: a user's ``!cmd`` / ``!!cmd`` (``PIWEB_COMMAND_CONCURRENCY``);
- ``<base>-summaries``: compactions, branch and compare summaries
  (``PIWEB_SUMMARY_CONCURRENCY``; ``PIWEB_JOBS_QUEUE`` names another queue for them);
- ``<base>-imports``: imports (``PIWEB_IMPORT_CONCURRENCY``), served with ``<base>``
  itself: the small jobs (search indexing after an import, workspace measures) and pings.

``<base>`` is the Celery app's default queue (``PIWEB_CELERY_QUEUE``, default "piweb"),
read when a task is sent, so a test that points the default queue elsewhere moves every
queue with it. ``runpiweb`` starts one worker per group of :func:`worker_groups`; the
test suite's worker consumes :func:`all_queues`.

``runpiweb`` on one machine (the default) starts the light layout instead,
:func:`light_workers`: two processes, the agent runs on a pool of threads (they wait on the
network) and every other queue in one process whose pool keeps each queue's own threads
(piweb/worker_pool.py). ``runworkers`` (a worker host of a scale-out layout) and
``runpiweb --separate-workers`` keep one process pool per group.
"""

from __future__ import annotations

from piweb.celery import app

RUNS = "runs"
COMMANDS = "commands"
SUMMARIES = "summaries"
IMPORTS = "imports"
KINDS = (RUNS, COMMANDS, SUMMARIES, IMPORTS)


def base() -> str:
    return app.conf.task_default_queue


def name(kind: str | None, base_name: str | None = None) -> str:
    """The queue of a kind of work (None: the default queue, for small tasks)."""
    root = base_name or base()
    if kind is None:
        return root
    if kind not in KINDS:
        raise ValueError(f"unknown queue kind {kind!r}")
    if kind == SUMMARIES and base_name is None:
        from django.conf import settings

        if settings.PIWEB_JOBS_QUEUE:
            return settings.PIWEB_JOBS_QUEUE
    return f"{root}-{kind}"


def all_queues(base_name: str) -> list[str]:
    """Every queue piweb sends to, for a worker that serves them all (tests)."""
    return [base_name, *(f"{base_name}-{kind}" for kind in KINDS)]


def worker_groups(base_name: str, runs_concurrency: int) -> list[tuple[str, list[str], int]]:
    """(supervisor name, queues, slots) of each worker ``runpiweb`` starts."""
    from django.conf import settings

    summaries = settings.PIWEB_JOBS_QUEUE or f"{base_name}-{SUMMARIES}"
    return [
        ("celery worker", [f"{base_name}-{RUNS}"], runs_concurrency),
        ("commands worker", [f"{base_name}-{COMMANDS}"], settings.PIWEB_COMMAND_CONCURRENCY),
        ("summaries worker", [summaries], settings.PIWEB_SUMMARY_CONCURRENCY),
        (
            "imports worker",
            [f"{base_name}-{IMPORTS}", base_name],
            settings.PIWEB_IMPORT_CONCURRENCY,
        ),
    ]


def light_workers(
    base_name: str, runs_concurrency: int, node_suffix: str
) -> list[tuple[str, list[str], list[str], dict[str, str]]]:
    """(supervisor name, queues, command line, environment additions) of the two workers
    of the light layout."""
    runs = max(1, runs_concurrency)
    other = slots_by_queue(base_name)
    common = ["-l", "warning", "--without-gossip", "--without-mingle"]
    runs_argv = _celery_worker() + ["-P", "threads", "-c", str(runs)]
    runs_argv += ["-Q", f"{base_name}-{RUNS}", "-n", f"runs-{node_suffix}@%h", *common]
    queues_argv = _celery_worker() + ["-P", "custom"]  # (CELERY_CUSTOM_WORKER_POOL)
    queues_argv += ["-c", str(sum(other.values()))]
    queues_argv += ["--prefetch-multiplier", str(PREFETCH_MULTIPLIER)]
    queues_argv += ["-Q", ",".join(other), "-n", f"queues-{node_suffix}@%h", *common]
    return [
        ("runs worker", [f"{base_name}-{RUNS}"], runs_argv, {}),
        ("queues worker", list(other), queues_argv, {"CELERY_CUSTOM_WORKER_POOL": POOL}),
    ]


POOL = "piweb.worker_pool:QueuePool"
# Messages the queues worker may hold unacknowledged at once (its -c times this): more
# than any queue's threads, so a full queue never keeps another's message in the broker.
PREFETCH_MULTIPLIER = 64


def slots_by_queue(base_name: str) -> dict[str, int]:
    """Threads of each queue the light layout's queues worker serves (piweb/worker_pool.py);
    the small tasks share the imports' threads, as they shared the imports worker."""
    from django.conf import settings

    imports = max(1, settings.PIWEB_IMPORT_CONCURRENCY)
    summaries = settings.PIWEB_JOBS_QUEUE or f"{base_name}-{SUMMARIES}"
    return {
        f"{base_name}-{COMMANDS}": max(1, settings.PIWEB_COMMAND_CONCURRENCY),
        summaries: max(1, settings.PIWEB_SUMMARY_CONCURRENCY),
        f"{base_name}-{IMPORTS}": imports,
        base_name: imports,
    }


def _celery_worker() -> list[str]:
    import sys

    return [sys.executable, "-m", "celery", "-A", "piweb", "worker"]


def worker_argv(label: str, names: list[str], slots: int, node_suffix: str) -> list[str]:
    """The command line of one of those workers."""
    import sys

    node = "runs" if label == "celery worker" else label.split()[0]
    argv = [sys.executable, "-m", "celery", "-A", "piweb", "worker", "-l", "warning"]
    argv += ["-c", str(max(1, slots)), "-Q", ",".join(names)]
    return argv + ["-n", f"{node}-{node_suffix}@%h", "--without-gossip", "--without-mingle"]
