"""Shared fixtures: real services, a real Celery worker, a real ASGI server, a real browser.

The suite runs in one of two passes (see bin/run-tests):
- services: DATABASE_URL (PostgreSQL) and REDIS_URL (Redis) point at real servers;
- embedded: nothing set, so SQLite and the embedded Redis on a unix socket.
Processes we start (worker, daphne) get the test database through DATABASE_URL, so
tests that talk to them use `transactional_db` and see each other's commits.
"""

import json
import os
import shutil
import socket
import sys
import uuid
from pathlib import Path

import pytest

from tests.support.processes import REPO, SERVER_UPLOAD_LIMIT, ManagedProcess, free_port
from tests.support.scripted_llm import ScriptedLLM

# Playwright's sync API keeps an event loop running in the main thread once a browser
# has started; Django then refuses ORM calls from that thread unless told otherwise.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "1")

ARTIFACTS = REPO / "test-artifacts"
CHROMIUM = os.environ.get("PIWEB_CHROMIUM", "/usr/bin/chromium")


def pytest_configure(config):
    config.addinivalue_line("markers", "embedded: also runs in the embedded (SQLite) pass")
    config.addinivalue_line("markers", "browser: drives headless Chromium")
    config.addinivalue_line("markers", "worker: needs the real Celery worker")


# --- services ---------------------------------------------------------------------------


@pytest.fixture(scope="session", autouse=True)
def sandbox_account_passes_through_test_folders(tmp_path_factory):
    """A root test run's commands run as PIWEB_SANDBOX_HOST_UID, whose bubblewrap opens
    the workspaces by path: let it pass through pytest's private temporary folders and
    the test var folder and the folders above it (search access only) to what the tests make
    there."""
    from django.conf import settings

    if os.geteuid() != 0:
        return
    var = Path(settings.VAR_DIR)
    var.mkdir(parents=True, exist_ok=True)
    for inner in (tmp_path_factory.getbasetemp(), var / "x"):
        for directory in inner.parents:
            info = directory.stat()
            if info.st_uid == 0 and not info.st_mode & 0o001:
                directory.chmod(info.st_mode | 0o001)  # e.g. var/ above var/test-services
    base = tmp_path_factory.getbasetemp()
    base.chmod(base.stat().st_mode | 0o001)


@pytest.fixture
def tmp_path(tmp_path):
    """pytest's own ``tmp_path``, with search access for other accounts on a root run
    (see ``sandbox_account_passes_through_test_folders``)."""
    if os.geteuid() == 0:
        tmp_path.chmod(tmp_path.stat().st_mode | 0o001)
    return tmp_path


@pytest.fixture(scope="session")
def redis_ready():
    """Make sure the broker / channel layer answers; start the embedded one if needed."""
    import redis
    from django.conf import settings

    from piweb import embedded

    process = None
    if settings.USES_EMBEDDED_REDIS:
        process = embedded.start(settings.EMBEDDED_REDIS_SOCKET)
    client = redis.Redis.from_url(settings.REDIS_URL)
    client.ping()
    client.flushdb()
    yield settings.REDIS_URL
    if process is not None:
        process.terminate()
        process.wait(10)


@pytest.fixture(scope="session")
def llm_server():
    server = ScriptedLLM()
    yield server
    server.close()


@pytest.fixture
def llm(llm_server):
    """The scripted model, emptied for this test."""
    llm_server.reset()
    yield llm_server
    llm_server.reset()


def _model_profiles(llm_server: ScriptedLLM) -> str:
    return json.dumps(
        {
            "scripted": {
                "base_url": llm_server.base_url,
                "api_key": "test-key-not-secret",
                "model": "scripted-model",
                "context_window": 128000,
                "max_output": 4096,
            },
            # models tests: a priced reasoning model of its own provider (a cloud stand-in)
            "scripted-cloud": {
                "base_url": llm_server.base_url,
                "api_key": "server-key-not-secret",
                "provider": "scripted-cloud",
                "model": "scripted-priced",
                "context_window": 200000,
                "max_output": 4096,
                "reasoning": True,
                "cost": {"input": 3, "output": 15, "cacheRead": 0.3, "cacheWrite": 3.75},
            },
            # chat box tests: a model that takes images
            "scripted-vision": {
                "base_url": llm_server.base_url,
                "api_key": "test-key-not-secret",
                "model": "scripted-vision-model",
                "context_window": 128000,
                "max_output": 4096,
                "input": ["text", "image"],
            },
            # chat tests: a short read timeout (timeout -> visible error entry)
            "scripted-fast": {
                "base_url": llm_server.base_url,
                "api_key": "test-key-not-secret",
                "model": "scripted-fast-model",
                "context_window": 128000,
                "max_output": 4096,
                "timeout": 2,
            },
        }
    )


@pytest.fixture(scope="session", autouse=True)
def _fast_password_hashing():
    """Users made by tests never log in with a password (sessions come from force_login or
    a cookie), so hashing them with PBKDF2's 10^6 rounds only costs time."""
    from django.conf import settings

    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(scope="session", autouse=True)
def _snapshot_dir(tmp_path_factory):
    """Workspace snapshots (services/changes.py) of this test run go to a folder of its
    own, deleted with pytest's temporary folders, not into var/ (the worker's too:
    child_env passes it on)."""
    from django.conf import settings

    settings.PIWEB_SNAPSHOT_DIR = tmp_path_factory.mktemp("snapshots")


@pytest.fixture(scope="session", autouse=True)
def _scripted_profiles(llm_server):
    """Give this process the same model profiles the worker and daphne get."""
    from django.conf import settings

    settings.PIWEB_MODEL_PROFILES_JSON = _model_profiles(llm_server)
    # Never the pi config of whoever runs the tests (tests give their own folder).
    settings.PIWEB_PI_AGENT_DIR = ""


@pytest.fixture(scope="session", autouse=True)
def run_queue():
    """This run's own Celery queues: tasks sent here and the worker fixture (which gets the
    name through ``child_env``) use them, so a worker left behind on the same broker by a
    killed run in another checkout cannot take this run's tasks."""
    from piweb.celery import app

    name = f"piweb-test-{uuid.uuid4().hex[:8]}"
    app.conf.task_default_queue = name
    return name


@pytest.fixture(scope="session")
def child_env(
    django_db_setup,
    django_db_blocker,
    redis_ready,
    llm_server,
    tmp_path_factory,
    _snapshot_dir,
    run_queue,
):
    """Environment for processes that must share this test run's database and Redis.

    Folders come from the configuration itself (`piweb.settings`), never from
    `django.conf.settings`: the first test to ask for this session-wide environment may
    have overridden them for itself (test_sandbox gives every test its own workspace root),
    and the worker started from it would then keep that test's folders for the whole run."""
    from django.conf import settings
    from django.db import connection

    from piweb import settings as configured

    db = connection.settings_dict
    if db["ENGINE"].endswith("sqlite3"):
        database_url = f"sqlite:///{db['NAME']}"
    else:
        database_url = (
            f"postgres://{db.get('USER') or ''}@{db.get('HOST') or '127.0.0.1'}:"
            f"{db.get('PORT') or 5432}/{db['NAME']}"
        )
    env = dict(os.environ)
    env.update(
        DATABASE_URL=database_url,
        PIWEB_VAR_DIR=str(configured.VAR_DIR),
        PIWEB_MODEL_PROFILES=_model_profiles(llm_server),
        PIWEB_PI_AGENT_DIR="",
        PIWEB_WORKSPACE_ROOTS=",".join(str(p) for p in configured.PIWEB_WORKSPACE_ROOTS),
        PIWEB_ARTIFACT_DIR=str(configured.PIWEB_ARTIFACT_DIR),
        PIWEB_SNAPSHOT_DIR=str(settings.PIWEB_SNAPSHOT_DIR),
        PIWEB_MAX_UPLOAD_BYTES=str(SERVER_UPLOAD_LIMIT),
        PIWEB_CELERY_QUEUE=run_queue,
        PYTHONUNBUFFERED="1",
    )
    if not settings.USES_EMBEDDED_REDIS:
        env["REDIS_URL"] = settings.REDIS_URL
    else:
        env.pop("REDIS_URL", None)
    return env


@pytest.fixture(scope="session")
def worker(child_env, tmp_path_factory):
    """A real Celery worker process on this run's broker and database, consuming every
    queue piweb sends to (runs, commands, summaries, imports, small tasks: piweb/queues.py)."""
    from piweb import queues

    log_dir = tmp_path_factory.mktemp("worker")
    queue = ",".join(queues.all_queues(child_env.get("PIWEB_CELERY_QUEUE", "piweb")))
    proc = ManagedProcess(
        "celery-worker",
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "piweb",
            "worker",
            "-l",
            "info",
            "-c",
            "2",
            "-Q",
            queue,
            "--without-gossip",
            "--without-mingle",
            "-n",
            f"test-{uuid.uuid4().hex[:6]}@%h",
        ],
        child_env,
        lambda p: "ready." in p.log.read_text(errors="replace"),
        log_dir,
    )
    proc.start()
    yield proc
    proc.stop()


@pytest.fixture(scope="session")
def asgi_server(child_env, tmp_path_factory):
    """daphne serving piweb.asgi on a free loopback port; yields its base URL."""
    port = free_port()

    def ready(_):
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return True
        except OSError:
            return False

    proc = ManagedProcess(
        "daphne",
        [
            sys.executable,
            "-m",
            "piweb.server",  # daphne with bounded, paced request bodies
            "-b",
            "127.0.0.1",
            "-p",
            str(port),
            "piweb.asgi:application",
        ],
        child_env,
        ready,
        tmp_path_factory.mktemp("daphne"),
    )
    proc.start()
    proc.url = f"http://127.0.0.1:{port}"
    yield proc
    proc.stop()


# --- users and sessions -----------------------------------------------------------------


@pytest.fixture
def make_user(db):
    from django.contrib.auth import get_user_model

    def make(username: str | None = None, password: str = "pw-for-tests-only", **extra):
        User = get_user_model()
        user = User.objects.create_user(
            username or f"u{uuid.uuid4().hex[:8]}", password=password, **extra
        )
        user.raw_password = password
        return user

    return make


@pytest.fixture
def workspace(settings, tmp_path, request):
    """A fresh workspace directory inside an allowed root.

    Sessions may only run in their owner's folder of a root (``<root>/<owner pk>/``): when
    the test has an ``owner`` fixture the workspace is made there; otherwise give it to the
    session's owner with ``tests.support.workspaces.place_workspace(user, workspace)``
    before creating the session.
    """
    root = Path(settings.PIWEB_WORKSPACE_ROOTS[0])
    if "owner" in request.fixturenames:
        root = root / str(request.getfixturevalue("owner").pk)
    path = root / f"ws-{uuid.uuid4().hex[:8]}"
    path.mkdir(parents=True)
    yield path
    if path.is_symlink():  # moved by place_workspace
        real = path.resolve()
        path.unlink()
        path = real
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def fresh_workspace_root(settings, tmp_path):
    """A workspace root of this test's own: user pks repeat across test databases, so an
    area (``<root>/<user pk>``, see tests/support/workspaces.py) must not outlive its test."""
    root = tmp_path / "workspaces"
    root.mkdir()
    settings.PIWEB_WORKSPACE_ROOTS = [root.resolve()]
    return root


@pytest.fixture
def client_for():
    """tests.support.web.client_for as a fixture: ``client_for(user, csrf=False)``."""
    from tests.support.web import client_for

    return client_for


# --- jobs that run in this process ------------------------------------------------------


@pytest.fixture
def own_snapshot_dir(settings, tmp_path):
    """Shadow repositories of this test alone, with snapshots on (services/changes.py)."""
    settings.PIWEB_SNAPSHOT_DIR = tmp_path / "snapshots"
    settings.PIWEB_SNAPSHOTS = True
    return settings.PIWEB_SNAPSHOT_DIR


@pytest.fixture
def tasks_stay_in_process(monkeypatch):
    """For tests that run a job here: a worker started by another test module may still be
    alive, so tasks go to a queue nobody consumes and it cannot claim them first."""
    from piweb.celery import app

    monkeypatch.setitem(app.conf, "task_default_queue", "piweb-in-process-tests")


@pytest.fixture
def no_worker_for_these_jobs(settings):
    """For tests that run jobs in this process (jobs.run_job): their tasks go to a queue no
    worker consumes, so a worker started by another test module cannot race them."""
    settings.PIWEB_JOBS_QUEUE = "q-jobs-service-tests-unconsumed"


# --- browser ----------------------------------------------------------------------------


def browser_available() -> bool:
    return Path(CHROMIUM).exists()


@pytest.fixture(scope="module")
def browser():
    """Headless Chromium for one test module. Module scope on purpose: Playwright's sync
    API runs an event loop in the main thread while it is open, and later tests that call
    asyncio.run() (the websocket tests) need that loop gone."""
    if not browser_available():
        if os.environ.get("PIWEB_REQUIRE_BROWSER") == "1":
            pytest.fail(f"PIWEB_REQUIRE_BROWSER=1 but no Chromium at {CHROMIUM}")
        pytest.skip(f"no system Chromium at {CHROMIUM}; browser tests skipped")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        instance = pw.chromium.launch(
            executable_path=CHROMIUM,
            headless=True,
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
            ],
        )
        yield instance
        instance.close()


@pytest.fixture
def page_for(browser, asgi_server):
    """Open a browser page logged in as a user: `page = page_for(user)`. Anything the
    Content-Security-Policy blocks on the page fails the test (`page.csp_violations`
    lists it, for a test that provokes one on purpose and then clears the list)."""
    contexts = []
    pages = []

    def open_page(user=None):
        context = browser.new_context(
            base_url=asgi_server.url, viewport={"width": 1400, "height": 900}
        )
        if user is not None:
            from tests.support.web import session_cookie_for

            cookie = session_cookie_for(user)
            context.add_cookies([{**cookie, "url": asgi_server.url}])
        contexts.append(context)
        page = context.new_page()
        page.set_default_timeout(15000)
        page.csp_violations = []
        page.on(
            "console",
            lambda message: (
                page.csp_violations.append(message.text)
                if "Content Security Policy" in message.text
                else None
            ),
        )
        pages.append(page)
        return page

    yield open_page
    violations = [text for page in pages for text in page.csp_violations]
    for context in contexts:
        context.close()
    assert not violations, f"the page broke its Content-Security-Policy: {violations}"


@pytest.fixture
def artifact_dir():
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS


# --- sandbox ------------------------------------------------------------------------------


@pytest.fixture
def bwrap_required():
    """The sandbox tests need bubblewrap; PIWEB_REQUIRE_SANDBOX=1 (CI) makes them mandatory."""
    if shutil.which("bwrap") is None:
        if os.environ.get("PIWEB_REQUIRE_SANDBOX") == "1":
            pytest.fail("PIWEB_REQUIRE_SANDBOX=1 but bubblewrap (bwrap) is not installed")
        pytest.skip("bubblewrap (bwrap) is not installed; sandbox tests skipped")
