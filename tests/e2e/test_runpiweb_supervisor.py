"""When a process of `runpiweb` dies, the rest keep serving and the dead one comes back.

A real `manage.py runpiweb` (daphne + the runs and queues workers of the light layout, and
the embedded Redis in the embedded pass) is started on a free port; its children are
killed with SIGKILL one by one, as the kernel's OOM killer would.
"""

import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from piweb.supervisor import Supervisor
from tests.support.processes import REPO, free_port, wait_for

pytestmark = [pytest.mark.embedded, pytest.mark.django_db(transaction=True)]

BANNER = "piweb is running: log in at"


def _serving(url: str, timeout: float = 3) -> bool:
    try:
        with urllib.request.urlopen(url + "/login/", timeout=timeout) as response:
            return response.status == 200
    except OSError:
        return False


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie is dead too
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().split(") ")[-1][:1] != "Z"


def _pids(log: Path, name: str) -> list[int]:
    text = log.read_text(errors="replace")
    return [int(p) for p in re.findall(rf"started {re.escape(name)} \(pid (\d+)\)", text)]


@pytest.fixture
def runpiweb(child_env, tmp_path):
    port = free_port()
    env = {**child_env, "PIWEB_CELERY_QUEUE": f"q-supervisor-{port}"}
    log = tmp_path / "runpiweb.log"
    with log.open("ab") as out:
        process = subprocess.Popen(
            [sys.executable, "manage.py", "runpiweb", "--port", str(port), "--concurrency", "1"],
            cwd=REPO,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: BANNER in log.read_text(errors="replace"), 90, "the banner", log)
        # Asked once, the moment it shows (refused at once when nothing listens yet; a
        # busy server may take its time to answer).
        process.served_at_banner = _serving(url, timeout=15)
        wait_for(lambda: _serving(url), 30, "runpiweb to serve", log)
        wait_for(lambda: _pids(log, "runs worker"), 30, "the worker", log)
        yield process, url, log
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(40)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(10)


def test_killed_web_and_worker_are_restarted_while_the_rest_keeps_serving(runpiweb):
    process, url, log = runpiweb
    daphne, worker = _pids(log, "daphne")[-1], _pids(log, "runs worker")[-1]

    os.kill(daphne, signal.SIGKILL)
    wait_for(lambda: len(_pids(log, "daphne")) == 2, 30, "daphne to be restarted", log)
    assert _alive(worker), "killing the web server must not stop the worker"
    assert process.poll() is None, "runpiweb itself must keep running"
    wait_for(lambda: _serving(url), 90, "the restarted daphne to serve", log)
    text = log.read_text()
    assert re.search(rf"daphne \(pid {daphne}\) exited with -9 .*restarting it in", text)

    os.kill(worker, signal.SIGKILL)
    wait_for(lambda: len(_pids(log, "runs worker")) == 2, 30, "the worker restart", log)
    assert _serving(url), "the web server keeps serving while the worker is restarted"
    new_daphne, new_worker = _pids(log, "daphne")[-1], _pids(log, "runs worker")[-1]
    assert new_worker != worker and _alive(new_worker) and _alive(new_daphne)

    process.send_signal(signal.SIGTERM)  # a clean stop still stops every child
    process.wait(40)
    wait_for(lambda: not _alive(new_daphne) and not _alive(new_worker), 20, "children to stop")


def test_the_login_url_answers_when_the_banner_shows_it(runpiweb):
    process, url, log = runpiweb
    assert process.served_at_banner, log.read_text(errors="replace")[-3000:]
    assert f"{BANNER} {url}/login/" in log.read_text()


def test_the_light_layout_is_five_processes_at_most_and_the_banner_says_what_runs(runpiweb):
    """The supervisor (lean: no Django once it has started everything), the embedded Redis
    (embedded pass), daphne, the runs worker and the queues worker; no pool children."""
    process, url, log = runpiweb
    text = log.read_text()
    assert re.search(r"Running: .*runs worker \(1 threads\), queues worker .*web server", text)
    tree = _descendants(process.pid)
    assert 1 + len(tree) <= 5, tree
    assert "piweb/supervise.py" in Path(f"/proc/{process.pid}/cmdline").read_text()
    status = Path(f"/proc/{process.pid}/status").read_text()
    rss_mb = int(re.search(r"VmRSS:\s+(\d+) kB", status).group(1)) / 1024
    assert rss_mb < 80, f"the supervisor holds {rss_mb:.0f} MB (Django loaded is over 120)"


def _descendants(pid: int) -> list[str]:
    """The command lines of every process below pid."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(") ", 1)[1].split()
        except (OSError, IndexError):
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            cmdline = Path(f"/proc/{child}/cmdline").read_text(errors="replace")
            found.append(cmdline.replace("\0", " ")[:120])
            todo.append(child)
    return found


def test_a_database_never_migrated_gets_a_clear_message(child_env, tmp_path):
    env = {**child_env, "DATABASE_URL": f"sqlite:///{tmp_path / 'never.sqlite3'}"}
    done = subprocess.run(
        [sys.executable, "manage.py", "runpiweb", "--port", str(free_port())],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    out = done.stdout + done.stderr
    assert done.returncode == 1, out
    assert "has never been migrated: run `make migrate`" in out and "Traceback" not in out
    assert "started" not in out  # nothing was started


def test_backoff_doubles_for_quick_deaths_and_resets_after_a_stable_run():
    reports = []
    supervisor = Supervisor(
        backoff_start=0.2, backoff_max=0.8, stable_after=5, report=reports.append
    )
    child = supervisor.add_command("crasher", [sys.executable, "-c", "import sys; sys.exit(3)"])
    supervisor.start_all()
    delays = []
    deadline = time.monotonic() + 30
    while len(delays) < 4 and time.monotonic() < deadline:
        before = child.restart_at
        supervisor.check()
        if child.restart_at is not None and child.restart_at != before:
            delays.append(round(supervisor.backoff(child), 1))
        time.sleep(0.02)
    supervisor.stop_all()
    assert delays == [0.2, 0.4, 0.8, 0.8]  # doubling, capped
    assert child.restarts == 3 and len(child.history) == 4
    assert any("crasher (pid" in r and "exited with 3" in r for r in reports)
    # a child that ran longer than stable_after starts over from the first delay
    child.quick_deaths = 3
    child.started_at = time.monotonic() - 10
    child.process = subprocess.Popen([sys.executable, "-c", "pass"])
    child.process.wait()
    supervisor.stopping = False
    supervisor.check()
    assert child.quick_deaths == 1 and supervisor.backoff(child) == 0.2


def test_two_web_processes_share_the_port_and_one_keeps_serving_when_the_other_dies(
    child_env, tmp_path
):
    port = free_port()
    env = {**child_env, "PIWEB_CELERY_QUEUE": f"q-web2-{port}"}
    log = tmp_path / "runpiweb.log"
    argv = [sys.executable, "manage.py", "runpiweb", "--port", str(port), "--web", "2"]
    with log.open("ab") as out:
        process = subprocess.Popen(
            [*argv, "--concurrency", "1"],
            cwd=REPO,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: BANNER in log.read_text(errors="replace"), 90, "the banner", log)
        assert "web server (2 processes)" in log.read_text()
        first, second = _pids(log, "daphne 1")[-1], _pids(log, "daphne 2")[-1]
        wait_for(lambda: _serving(url), 60, "the web processes to serve", log)
        os.kill(first, signal.SIGKILL)
        # The other one answers every request meanwhile (the socket is shared, not lost).
        for _ in range(5):
            assert _serving(url, timeout=15), log.read_text(errors="replace")[-3000:]
        assert _alive(second)
        wait_for(lambda: len(_pids(log, "daphne 1")) == 2, 30, "daphne 1 to be restarted", log)
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(40)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(10)
