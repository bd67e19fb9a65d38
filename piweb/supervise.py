"""The lean supervisor process of `runpiweb` (``python piweb/supervise.py SPEC``).

``manage.py runpiweb`` checks the database, decides what runs and writes the banner's
lines with Django loaded, then replaces itself (exec, same pid) with this script, so the
process that stays up for the life of piweb holds the supervisor (piweb/supervisor.py)
and the embedded Redis starter, not Django and the whole app (about 100 MB less at rest).

It is run as a script, not as ``-m piweb.…``: the ``piweb`` package imports the Celery
app. Its folder is first on ``sys.path``, so ``supervisor`` and ``embedded`` are imported
as top-level modules. SPEC is JSON (no secrets: every child gets this process's
environment plus the few variables of ``extra_env``)::

    {"children": [{"name", "argv", "extra_env", "pass_fds"} | {"name", "redis_socket", "binary"}],
     "serving": [host, port], "banner": [lines printed once host:port answers]}
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time

import embedded  # type: ignore[import-not-found]  # (piweb/embedded.py, see above)
from supervisor import Supervisor  # type: ignore[import-not-found]  # (piweb/supervisor.py)


def _report(text: str) -> None:
    sys.stderr.write(f"runpiweb: {text}\n")
    sys.stderr.flush()


def _starter(spec: dict):
    if "redis_socket" in spec:
        return lambda: embedded.start(spec["redis_socket"], binary=spec["binary"])
    env = {**os.environ, **spec.get("extra_env", {})}
    argv, fds = spec["argv"], tuple(spec.get("pass_fds", ()))
    return lambda: subprocess.Popen(argv, env=env, pass_fds=fds)


def wait_until_serving(host: str, port: int, supervisor: Supervisor) -> bool:
    """True once something accepts connections on host:port; False if runpiweb stops
    first. A wildcard address is reached on the loopback."""
    target = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}.get(host, host)
    while not supervisor.stopping:
        try:
            with socket.create_connection((target, port), timeout=1):
                return True
        except OSError:
            time.sleep(0.1)
    return False


def main(spec: dict) -> None:
    supervisor = Supervisor(report=_report)
    for child in spec["children"]:
        supervisor.add(child["name"], _starter(child))
    supervisor.start_all()

    def banner() -> None:
        host, port = spec["serving"]
        if wait_until_serving(host, port, supervisor):
            sys.stdout.write("".join(f"{line}\n" for line in spec["banner"]))
            sys.stdout.flush()

    threading.Thread(target=banner, name="runpiweb-banner", daemon=True).start()
    supervisor.run()


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))
