"""Agent runs through the real worker, for the end-to-end chat tests: a session in its
owner's area, the chat's requests, waiting for the run, and a websocket that records
every event of a session; and a run executed in the test's own process."""

import asyncio
import json
import threading

import psutil
import websockets

from sessions_app.models import Job
from sessions_app.selectors import paths
from sessions_app.services import chat, jobs, sessions
from tests.support.waiting import wait_until
from tests.support.web import session_cookie_for
from tests.support.workspaces import place_workspace


def new_session(user, workspace, profile="scripted"):
    cwd = place_workspace(user, workspace)  # sessions run only in their owner's folder
    return sessions.create_session(owner=user, cwd=str(cwd), model_profile=profile)


def run_here(session, user, text_):
    """Send `text_` as `user` and execute the run in this process; its job."""
    job = chat.send_message(session, user, text_)
    assert jobs.run_job(str(job.pk)) in ("done", "aborted")
    session.refresh_from_db()
    return job


def send(client, session, text_):
    return client.post(f"/s/{session.pi_id}/chat/send/", {"text": text_})


def stop(client, session):
    return client.post(f"/s/{session.pi_id}/chat/stop/")


def wait_run(session, timeout=60.0):
    """Wait until the session has no active run; return the last agent_run job."""
    done = wait_until(
        lambda: (
            not Job.objects.filter(
                session=session, kind="agent_run", status__in=Job.ACTIVE
            ).exists()
        ),
        timeout,
    )
    assert done, "the run did not finish in time"
    return Job.objects.filter(session=session, kind="agent_run").order_by("-created_at").first()


def messages(session):
    """The message payloads on the leaf's path, in order."""
    session.refresh_from_db()
    return [e["message"] for e in paths.load_path(session) if e["type"] == "message"]


def ws_url(server, session):
    return server.url.replace("http", "ws") + f"/ws/sessions/{session.pi_id}/"


class EventLog:
    """A websocket client in a thread, collecting every event of one session."""

    def __init__(self, server, session, user):
        cookie = session_cookie_for(user)
        self.headers = {"Cookie": f"{cookie['name']}={cookie['value']}", "Origin": server.url}
        self.url = ws_url(server, session)
        self.events: list[dict] = []
        self.ready = threading.Event()
        self.closing = threading.Event()
        self.thread = threading.Thread(target=lambda: asyncio.run(self._run()), daemon=True)

    async def _run(self):
        async with websockets.connect(
            self.url, additional_headers=self.headers, max_size=None
        ) as ws:
            self.ready.set()
            while not self.closing.is_set():
                try:
                    raw = await asyncio.wait_for(ws.recv(), 0.2)
                except TimeoutError:
                    continue
                self.events.append(json.loads(raw))

    def __enter__(self):
        self.thread.start()
        assert self.ready.wait(15), "websocket did not connect"
        assert wait_until(lambda: self.of("run_state"), 10)
        return self

    def __exit__(self, *exc):
        self.closing.set()
        self.thread.join(10)

    def of(self, event):
        return [e["data"] for e in list(self.events) if e["event"] == event]

    def wait_for(self, event, predicate=lambda d: True, timeout=30.0):
        return wait_until(lambda: next((d for d in self.of(event) if predicate(d)), None), timeout)


def host_processes_with(marker: str) -> list:
    """Live host processes whose command line contains ``marker``."""
    return [
        p
        for p in psutil.process_iter(["cmdline", "status"])
        if marker in " ".join(p.info["cmdline"] or []) and p.info["status"] != psutil.STATUS_ZOMBIE
    ]
