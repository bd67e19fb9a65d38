"""Regression tests for the security review findings (C1, C3, C4, H1, H4, H5, L1-L4).

Each test fails on the code before its fix.
"""

import asyncio
import io
import json
import os
import re
import stat
import uuid
from pathlib import Path

import pytest
from django.test import Client
from django.urls import resolve, reverse

from sessions_app.models import Entry, Job, Session, SessionShare, Team, TeamMembership
from sessions_app.services import chat, tree
from sessions_app.services.importer import SessionImportError, import_jsonl_stream
from tests.support.tree_data import import_branched

pytestmark = [pytest.mark.django_db]


@pytest.fixture(autouse=True)
def fresh_workspace_root(settings, tmp_path):
    """A workspace root of this test's own: user pks repeat across test databases."""
    root = tmp_path / "workspaces"
    root.mkdir()
    settings.PIWEB_WORKSPACE_ROOTS = [root.resolve()]
    return root


def client_for(user) -> Client:
    c = Client()
    c.force_login(user)
    return c


def share(session, user, role):
    team = Team.objects.create(name=f"team-{uuid.uuid4().hex[:6]}")
    TeamMembership.objects.create(team=team, user=user)
    SessionShare.objects.create(session=session, team=team, role=role)


def area_of(settings, user) -> Path:
    path = Path(os.path.realpath(settings.PIWEB_WORKSPACE_ROOTS[0])) / str(user.pk)
    path.mkdir(parents=True, exist_ok=True)
    return path


def jsonl(header_id: str, entries: list[dict]) -> io.BytesIO:
    header = {
        "type": "session",
        "version": 3,
        "id": header_id,
        "timestamp": "2026-01-01T00:00:00.000Z",
        "cwd": "/tmp/x",
    }
    lines = [json.dumps(header)] + [json.dumps(e) for e in entries]
    return io.BytesIO(("\n".join(lines) + "\n").encode())


def message(eid, parent, n, role="user", text="hello"):
    msg = {"role": role, "content": [{"type": "text", "text": text}], "timestamp": n}
    if role == "assistant":
        msg.update(api="openai-completions", provider="x", model="m", usage=None, stopReason="stop")
    return {
        "type": "message",
        "id": eid,
        "parentId": parent,
        "timestamp": f"2026-01-01T00:00:{n % 60:02d}.000Z",
        "message": msg,
    }


# --- C1: full-output download only from this session's artifact directory --------------


def test_c1_imported_full_output_path_into_another_users_workspace_is_refused(make_user, settings):
    victim, attacker = make_user(), make_user()
    secret = area_of(settings, victim) / "proj" / ".env"
    secret.parent.mkdir(parents=True, exist_ok=True)
    secret.write_text("API_KEY=victim-secret\n")
    s = import_branched(attacker, "/tmp/anything", str(secret), session_id=str(uuid.uuid4()))
    c = client_for(attacker)
    response = c.get(reverse("sessions_app:entry_output", args=[s.pi_id, "e0000013"]))
    assert response.status_code == 404
    # ...and the page does not offer the link for it.
    pane = c.get(reverse("sessions_app:entry_pane", args=[s.pi_id, "e0000013"]))
    assert pane.status_code == 200
    assert "/output/" not in pane.content.decode()
    # A file in the global artifact dir but not this session's is refused too.
    other = Path(settings.PIWEB_ARTIFACT_DIR) / "sessions" / "999999999" / "bash-x.log"
    other.parent.mkdir(parents=True, exist_ok=True)
    other.write_text("someone else's output")
    entry = Entry.objects.get(session=s, pi_id="e0000013")
    payload = entry.payload
    payload["message"]["details"]["fullOutputPath"] = str(other)
    entry.payload = payload
    entry.save(update_fields=["line"])
    response = c.get(reverse("sessions_app:entry_output", args=[s.pi_id, "e0000013"]))
    assert response.status_code == 404


def test_c1_one_artifact_dir_helper_by_pk_for_agent_and_user_bash(make_user, settings):
    from sessions_app.agent.paths import Workspace
    from sessions_app.agent.tools import ToolContext
    from sessions_app.services import workspaces

    owner = make_user()
    session = tree.create_session(owner=owner, cwd=str(area_of(settings, owner)))
    expected = os.path.join(str(settings.PIWEB_ARTIFACT_DIR), "sessions", str(session.pk))
    assert workspaces.artifact_dir(session) == expected
    assert chat._artifact_dir(session) == expected
    ctx = ToolContext(workspace=Workspace(str(area_of(settings, owner))), artifact_dir=expected)
    made = ctx.output_file("bash")()
    assert os.path.dirname(made) == expected and re.fullmatch(
        r"bash-[0-9a-f]{16}\.log", os.path.basename(made)
    )
    # A file our run wrote there is served for this session.
    Path(made).write_text("full output\n")
    assert workspaces.session_artifact_file(session, made) == Path(os.path.realpath(made))
    assert workspaces.session_artifact_file(session, made + "/../../x") is None


# --- C3: a session with no entries ------------------------------------------------------------


def test_c3_session_page_of_an_empty_session_renders(make_user, settings):
    owner = make_user()
    session = tree.create_session(owner=owner, cwd=str(area_of(settings, owner)))
    assert session.leaf_id is None
    response = client_for(owner).get(reverse("sessions_app:session_detail", args=[session.pi_id]))
    assert response.status_code == 200
    assert 'data-review-leaf=""' in response.content.decode()


# --- C4: id validation and robust URL building ------------------------------------------------


@pytest.mark.parametrize("bad", ["x/y", "..", ".", "a b", "x" * 65, "ü"])
def test_c4_bad_header_id_refuses_the_file(make_user, bad):
    owner = make_user()
    with pytest.raises(SessionImportError) as exc:
        import_jsonl_stream(jsonl(bad, [message("aaaa0001", None, 1)]), owner, filename="f.jsonl")
    assert "session header id" in str(exc.value)
    assert not Session.objects.filter(owner=owner).exists()
    # The session list still renders.
    assert client_for(owner).get(reverse("sessions_app:session_list")).status_code == 200


def test_c4_bad_entry_id_is_a_reported_malformed_line(make_user):
    owner = make_user()
    sid = str(uuid.uuid4())
    entries = [
        message("aaaa0001", None, 1),
        message("bad/id", "aaaa0001", 2, "assistant"),
        message("..", "aaaa0001", 3, "assistant"),
        message("aaaa0004", "aaaa0001", 4, "assistant"),
    ]
    report = import_jsonl_stream(jsonl(sid, entries), owner, filename="f.jsonl")
    assert report.skipped_count == 2
    assert [n for n, _ in report.skipped] == [3, 4]
    assert all("not a valid id" in reason for _, reason in report.skipped)
    ids = set(Entry.objects.filter(session__pi_id=sid).values_list("pi_id", flat=True))
    assert ids == {"aaaa0001", "aaaa0004"}
    page = client_for(owner).get(reverse("sessions_app:session_detail", args=[sid]))
    assert page.status_code == 200


def test_c4_pi_fixture_ids_stay_valid(make_user):
    from sessions_app.context.import_lines import valid_id

    assert valid_id(str(uuid.uuid4())) and valid_id("e0000013") and valid_id("a1b2c3d4")
    s = import_branched(make_user(), "/tmp/x", session_id=str(uuid.uuid4()))
    assert s.entries.count() > 10


def test_c4_fold_urls_survive_ids_containing_the_old_placeholders(make_user):
    owner = make_user()
    sid = "FIRST-LAST-HEAD-" + uuid.uuid4().hex[:8]
    entries, parent = [], None
    for i in range(400):
        eid = f"LAST{i:04d}HEADFIRST"
        entries.append(message(eid, parent, i, "user" if i % 2 == 0 else "assistant"))
        parent = eid
    # a side branch so a "more in this branch" row can appear too
    for j in range(60):
        eid = f"HEADb{j:03d}"
        entries.append(message(eid, "LAST0010HEADFIRST" if j == 0 else f"HEADb{j - 1:03d}", j))
    import_jsonl_stream(jsonl(sid, entries), owner, filename="f.jsonl")
    html = client_for(owner).get(reverse("sessions_app:session_detail", args=[sid])).content
    urls = re.findall(r'hx-get="([^"?]*/tree/(?:run|branch)/[^"?]*)', html.decode())
    assert urls, "expected folded rows in a 460-entry session"
    known = set(Entry.objects.filter(session__pi_id=sid).values_list("pi_id", flat=True))
    for url in urls:
        match = resolve(url.replace("&amp;", "&"))
        assert match.kwargs["session_id"] == sid
        for key in ("first_id", "last_id", "head_id"):
            if key in match.kwargs:
                assert match.kwargs[key] in known, url


# --- H1: per-user workspace areas ---------------------------------------------------------------


def test_h1_new_session_only_inside_the_users_own_area(make_user, settings):
    alice, bob = make_user(), make_user()
    alice_proj = area_of(settings, alice) / "proj"
    alice_proj.mkdir(parents=True, exist_ok=True)
    c = client_for(bob)
    new = reverse("sessions_app:session_new")
    for cwd in (str(alice_proj), str(settings.PIWEB_WORKSPACE_ROOTS[0]), "/etc", "relative/x"):
        response = c.post(new, {"cwd": cwd, "name": "x"})
        assert response.status_code == 400, cwd
    assert not Session.objects.filter(owner=bob).exists()
    # a symlink in bob's area pointing into alice's is refused too
    os.symlink(alice_proj, area_of(settings, bob) / "sneaky")
    assert c.post(new, {"cwd": str(area_of(settings, bob) / "sneaky")}).status_code == 400
    mine = area_of(settings, bob) / "fresh-project"
    response = c.post(new, {"cwd": str(mine), "name": "Mine"})
    assert response.status_code == 302
    assert mine.is_dir()  # created on demand
    session = Session.objects.get(owner=bob)
    assert session.cwd == str(mine) and session.name == "Mine"


def test_h1_chat_refuses_a_cwd_outside_the_owners_area(make_user, settings):
    alice, bob = make_user(), make_user()
    alice_proj = area_of(settings, alice) / "proj"
    alice_proj.mkdir(parents=True, exist_ok=True)
    # e.g. an imported session whose recorded cwd is alice's project: kept for display...
    session = tree.create_session(owner=bob, cwd=str(alice_proj), model_profile="scripted")
    page = client_for(bob).get(reverse("sessions_app:session_detail", args=[session.pi_id]))
    assert page.status_code == 200
    # ...but bob's chat never runs there.
    with pytest.raises(chat.ChatError) as exc:
        chat.send_message(session, bob, "!cat .env")
    assert exc.value.code == "workspace" and "outside your workspace area" in str(exc.value)
    assert not Job.objects.filter(session=session).exists()
    # the root itself is not a workspace either
    root_session = tree.create_session(
        owner=bob, cwd=str(settings.PIWEB_WORKSPACE_ROOTS[0]), model_profile="scripted"
    )
    with pytest.raises(chat.ChatError):
        chat.send_message(root_session, bob, "!ls")


@pytest.mark.django_db(transaction=True)
def test_h1_worker_refuses_to_run_tools_outside_the_owners_area(make_user, settings, redis_ready):
    alice, bob = make_user(), make_user()
    alice_proj = area_of(settings, alice) / "proj"
    alice_proj.mkdir(parents=True, exist_ok=True)
    session = tree.create_session(owner=bob, cwd=str(alice_proj), model_profile="scripted")
    job = Job.objects.create(
        session=session, kind=Job.Kind.AGENT_RUN, params={"mode": "bash", "command": "touch pwn"}
    )
    chat.execute_run(str(job.pk))
    job.refresh_from_db()
    assert job.status == "failed" and "outside your workspace area" in job.error
    assert not (alice_proj / "pwn").exists()


# --- H4: compare summaries need EDITOR ----------------------------------------------------------


def test_h4_viewer_cannot_start_a_compare_summary(make_user, settings):
    owner, viewer = make_user(), make_user()
    s = import_branched(owner, str(area_of(settings, owner)), session_id=str(uuid.uuid4()))
    share(s, viewer, "viewer")
    url = reverse("sessions_app:compare_summary", args=[s.pi_id])
    response = client_for(viewer).post(url, {"a": "e0000014", "b": "e0000016"})
    assert response.status_code == 403
    assert not Job.objects.filter(session=s, kind=Job.Kind.COMPARE_SUMMARY).exists()


def test_h4_compare_summary_redirect_query_is_encoded(make_user, settings):
    from urllib.parse import parse_qs, urlsplit

    owner, editor = make_user(), make_user()
    s = import_branched(owner, str(area_of(settings, owner)), session_id=str(uuid.uuid4()))
    share(s, editor, "editor")
    url = reverse("sessions_app:compare_summary", args=[s.pi_id])
    response = client_for(editor).post(url, {"a": "e0000014", "b": "e0000016"})
    assert response.status_code == 302, response.content
    query = parse_qs(urlsplit(response["Location"]).query)
    assert query == {"a": ["e0000014"], "b": ["e0000016"]}


# --- H5: no server paths in websocket snapshots -------------------------------------------------


def test_h5_bash_snapshot_has_no_server_path(tmp_path):
    from sessions_app.agent.paths import output_file_factory
    from sessions_app.agent.shell import run_shell, snapshot_event

    events = []
    outcome = run_shell(
        "seq 1 30000",
        str(tmp_path),
        output_path=output_file_factory(str(tmp_path / "art"), "bash"),
        on_snapshot=lambda snap: events.append(snapshot_event(snap)),
    )
    assert outcome.result.full_output_path  # the output was long enough to spill to a file
    assert events
    for event in events:
        assert "full_output_path" not in event
        assert str(tmp_path) not in json.dumps(event)
    assert any(event["has_full_output"] for event in events)


# --- L1: stop with Redis down -------------------------------------------------------------------


def test_l1_stop_with_redis_unreachable_is_a_clear_503(make_user, settings):
    owner = make_user()
    session = tree.create_session(owner=owner, cwd=str(area_of(settings, owner)))
    Job.objects.create(
        session=session, kind=Job.Kind.AGENT_RUN, status=Job.Status.RUNNING, params={}
    )
    settings.REDIS_URL = "redis://127.0.0.1:1/0"  # nothing listens there
    response = client_for(owner).post(reverse("sessions_app:chat_stop", args=[session.pi_id]))
    assert response.status_code == 503
    assert "Could not reach Redis" in response.content.decode()


# --- L2, L3, L4 ----------------------------------------------------------------------------------


def test_l2_api_key_not_in_repr():
    from sessions_app.agent.loop import LLMConfig

    config = LLMConfig(base_url="http://x", model="m", api_key="sk-very-secret")
    assert "sk-very-secret" not in repr(config)
    assert config.api_key == "sk-very-secret"


def test_l3_secret_key_file_is_private_and_reused(tmp_path, monkeypatch):
    import piweb.settings as piweb_settings

    monkeypatch.delenv("SECRET_KEY", raising=False)
    monkeypatch.setattr(piweb_settings, "VAR_DIR", tmp_path)
    old_umask = os.umask(0)  # the file must be private even with a permissive umask
    try:
        key = piweb_settings._secret_key()
    finally:
        os.umask(old_umask)
    path = tmp_path / "secret_key"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert len(key) > 40 and piweb_settings._secret_key() == key
    # another process won the race: its key is used, not overwritten
    path.unlink()
    path.write_text("from-the-other-process\n")
    assert piweb_settings._secret_key() == "from-the-other-process"


def test_l4_consumer_ignores_non_dict_frames():
    from sessions_app.consumers import SessionConsumer

    consumer = SessionConsumer()
    sent = []

    async def send_json(content, close=False):
        sent.append(content)

    consumer.send_json = send_json
    for frame in ([], 1, "ping", None, [{"type": "ping"}]):
        asyncio.run(consumer.receive_json(frame))
    assert sent == []
    asyncio.run(consumer.receive_json({"type": "ping"}))
    assert sent == [{"event": "pong", "data": {}}]


def test_static_root_exists(settings):
    assert Path(settings.STATIC_ROOT).is_dir()


# --- L5: create + rename in one transaction -----------------------------------------------------


def test_l5_new_session_with_name_is_created_with_its_name(make_user, settings):
    owner = make_user()
    cwd = area_of(settings, owner) / "named"
    response = client_for(owner).post(
        reverse("sessions_app:session_new"), {"cwd": str(cwd), "name": "Named"}
    )
    assert response.status_code == 302
    session = Session.objects.get(owner=owner)
    assert session.name == "Named"
    assert session.entries.filter(type="session_info").count() == 1


# --- Content-Security-Policy -------------------------------------------------------------


def test_every_page_carries_a_policy_that_allows_only_our_own_scripts(
    make_user, settings, fresh_workspace_root
):
    owner = make_user("csp-owner", is_staff=True, is_superuser=True)
    session = import_branched(owner, str(fresh_workspace_root))
    signed_in = client_for(owner)
    pages = [
        (Client(), "/login/"),
        (signed_in, "/"),
        (signed_in, f"/s/{session.pi_id}/"),
        (signed_in, "/admin/"),
        (signed_in, "/no-such-page/"),
    ]
    for client, url in pages:
        response = client.get(url)
        assert response["Content-Security-Policy"] == settings.PIWEB_CSP, url
    directives = dict(
        (part.split()[0], part.split()[1:]) for part in settings.PIWEB_CSP.split("; ")
    )
    assert directives["script-src"] == ["'self'"]  # no inline scripts, handlers or eval
    assert directives["object-src"] == ["'none'"] and directives["frame-ancestors"] == ["'none'"]
    # No page or partial relies on an inline script or handler (the policy blocks them).
    from sessions_app.services import sharing

    sharing.create_link(session, actor=owner, leaf_pi_id="e0000014")
    for url in (
        f"/s/{session.pi_id}/sharing/",
        f"/s/{session.pi_id}/",
        f"/s/{session.pi_id}/tree/",
        f"/s/{session.pi_id}/e/e0000014/",
        f"/s/{session.pi_id}/inspect/?leaf=e0000014",
    ):
        page = signed_in.get(url).content.decode()
        assert "data-select-all" in page or not url.endswith(("/e/e0000014/", "/sharing/"))
        assert not re.search(r'<script(?![^>]*(\bsrc=|type="application/json"))[^>]*>', page)
        assert not re.search(r"<[a-zA-Z][^<>]*\son[a-z]+=", page), url  # not escaped text
