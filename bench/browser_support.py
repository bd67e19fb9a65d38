"""A throwaway piweb for the browser bench and `make screenshots`: a test database made
and dropped here, a seeded session, daphne serving it, headless Chromium logged in.

Only for bench/ and the screenshots; the tests have their own fixtures (tests/conftest.py).
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CHROMIUM = os.environ.get("PIWEB_CHROMIUM", "/usr/bin/chromium")
# Playwright's sync API keeps an event loop running in this thread; the ORM calls made
# between page steps (a cookie, an event) are plain sync code all the same.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _database_url(connection) -> str:
    db = connection.settings_dict
    if db["ENGINE"].endswith("sqlite3"):
        return f"sqlite:///{db['NAME']}"
    auth = db.get("USER") or ""
    if db.get("PASSWORD"):
        auth += f":{db['PASSWORD']}"
    return (
        f"postgres://{auth}@{db.get('HOST') or '127.0.0.1'}:{db.get('PORT') or 5432}/{db['NAME']}"
    )


@contextlib.contextmanager
def test_database():
    """Django set up on a fresh test database (test_<name>), dropped afterwards."""
    sys.path.insert(0, str(REPO))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "piweb.settings")
    import django

    django.setup()
    from django.conf import settings
    from django.db import connection
    from django.test.utils import setup_test_environment

    from piweb import embedded

    setup_test_environment()
    # Events and the page's websocket need Redis: without REDIS_URL that is the embedded
    # one, which `make run` starts and a bench must start itself (None: it already runs).
    redis_process = (
        embedded.start(settings.EMBEDDED_REDIS_SOCKET) if settings.USES_EMBEDDED_REDIS else None
    )
    old_name = connection.creation.create_test_db(verbosity=0, autoclobber=True)
    try:
        yield connection
    finally:
        if redis_process is not None:
            redis_process.terminate()
            redis_process.wait(10)
        from django.db import connections
        from django.db.utils import OperationalError

        connections.close_all()

        for attempt in range(20):  # (daphne's connections take a moment to go)
            try:
                connection.creation.destroy_test_db(old_name, verbosity=0)
                break
            except OperationalError:
                if attempt == 19:
                    raise
                time.sleep(0.5)


@contextlib.contextmanager
def daphne(connection):
    """daphne serving piweb on a free loopback port, on the test database."""
    from django.conf import settings

    port = _free_port()
    env = dict(os.environ, DATABASE_URL=_database_url(connection), PYTHONUNBUFFERED="1")
    env["PIWEB_VAR_DIR"] = str(settings.VAR_DIR)
    log = open(Path(settings.VAR_DIR) / "bench-daphne.log", "w")  # noqa: SIM115
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "daphne",
            "-b",
            "127.0.0.1",
            "-p",
            str(port),
            "piweb.asgi:application",
        ],
        cwd=REPO,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.5):
                break
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"daphne did not start (see {log.name})")
            time.sleep(0.2)
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


@contextlib.contextmanager
def chromium():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=CHROMIUM,
            headless=True,
            args=["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-sync"],
        )
        try:
            yield browser
        finally:
            # ORM calls made while Playwright's loop runs get their own connections
            from django.db import connections

            connections.close_all()
            browser.close()


def logged_in_context(browser, base_url: str, user, **kwargs):
    from tests.support.web import session_cookie_for

    context = browser.new_context(base_url=base_url, **kwargs)
    context.add_cookies([{**session_cookie_for(user), "url": base_url}])
    return context


def real_shaped_session(owner, entries: int = 1002):
    """The real-shaped session (tests/support/real_sessions.py) grown to at least
    `entries` entries, imported through the importer."""
    import io

    from sessions_app.services.importer import import_jsonl_stream
    from tests.support.real_sessions import real_session_bytes, real_session_entries

    target = 2_400_000
    while len(real_session_entries(target)[1]) < entries:
        target += 200_000
    data = real_session_bytes(target)
    return import_jsonl_stream(io.BytesIO(data), owner, filename="real.jsonl").session
