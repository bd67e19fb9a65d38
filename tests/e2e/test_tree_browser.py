"""The session tree in headless Chromium: import, open, keyboard, filter, fold, label,
navigate (plain and with a summary, real worker + scripted model), fork, and that
hostile model output stays inert."""

import uuid

import pytest
from playwright.sync_api import expect

from sessions_app.models import Entry, Job, Session
from tests.support.browser import collect_errors
from tests.support.pi1_session import REPLACEMENT, USAGE_NOTE, import_pi1_session
from tests.support.pi_files import an_earlier_session
from tests.support.scripted_llm import text
from tests.support.tree_data import branched_jsonl, import_branched
from tests.support.waiting import wait_db

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def selected_id(page):
    return page.eval_on_selector("#tree-panel .tn.selected", "el => el.dataset.id || ''")


def assert_inert(page):
    assert page.evaluate("() => window.__pwned") is None
    assert page.locator('a[href^="javascript:"]').count() == 0
    assert page.locator("#entry-pane script, #tree-panel script").count() == 0


def test_tree_page_end_to_end(page_for, worker, make_user, workspace, artifact_dir):
    owner = make_user("tree-owner")
    an_earlier_session(owner)  # the list with its forms, not the first-run state
    page = page_for(owner)
    errors = collect_errors(page)  # and failed requests, from the response hook:
    page.on("response", lambda r: errors.append(f"{r.status} {r.url}") if r.status >= 400 else None)

    # --- import through the upload form (a job in the worker), see the report -------
    sid = str(uuid.uuid4())
    page.goto("/")
    page.locator("summary", has_text="Import pi session").click()
    page.set_input_files(
        "#import-form input[name=file]",
        files=[
            {
                "name": "branched.jsonl",
                "mimeType": "application/jsonl",
                "buffer": branched_jsonl(str(workspace), session_id=sid),
            }
        ],
    )
    page.click("#import-form button[type=submit]")
    page.wait_for_selector("#import-result .ok", timeout=30_000)  # a busy machine
    assert "1 malformed line skipped" in page.inner_text("#import-result")
    Session.objects.filter(pi_id=sid).update(model_profile="scripted")
    page.click("#import-result a")
    page.wait_for_selector("#n-e0000014.session-leaf.on-path")

    # --- shape: branch point, side branches, label, compaction/branch-summary look ----
    assert page.locator("#n-e0000004 .badge.fork").inner_text() == "3 branches"
    assert page.locator("#n-e0000004 .label-chip").inner_text() == "checkpoint"
    assert page.locator("#n-e00000c1.k-compaction").count() == 1
    assert page.locator("#n-e0000b51.k-branch_summary").count() == 1
    assert page.locator("#n-e00000f1").count() == 0  # label entries hidden by default

    # --- keyboard: up/down along the tree, left/right between siblings, Enter opens --
    page.click("#n-e0000014 .preview")
    page.wait_for_selector('#entry-pane [data-entry="e0000014"]')
    page.focus("#n-e0000014")
    page.keyboard.press("ArrowUp")
    above = selected_id(page)
    assert above and above != "e0000014"
    page.keyboard.press("ArrowDown")
    assert selected_id(page) == "e0000014"
    page.click("#n-e000000a .preview")
    page.keyboard.press("ArrowRight")
    assert selected_id(page) == "e0000b51"
    page.keyboard.press("ArrowRight")
    assert selected_id(page) == "e0000010"
    page.keyboard.press("ArrowLeft")
    assert selected_id(page) == "e0000b51"
    page.keyboard.press("Enter")
    page.wait_for_selector('#entry-pane [data-entry="e0000b51"]')
    assert "src/a.py" in page.inner_text("#entry-pane")  # branch summary opens with its files
    assert "target=e0000b51" in page.url

    # --- hostile content stays inert -------------------------------------------------
    for node in ("e0000004", "e0000003", "e0000013", "e000000c"):
        page.click(f"#n-{node} .preview")
        page.wait_for_selector(f'#entry-pane [data-entry="{node}"]')
        assert_inert(page)
    assert page.locator("#entry-pane .ansi34").count() == 1  # ANSI colours kept, safely

    # --- filter ----------------------------------------------------------------------
    page.select_option("#tree-filter", "all")
    page.wait_for_selector("#n-e00000f1")
    assert page.locator("#n-e0000012").count() == 1
    page.select_option("#tree-filter", "user-only")
    page.wait_for_selector("#n-e000000b", state="detached")
    assert page.locator("#n-e000000d").count() == 1
    page.select_option("#tree-filter", "default")
    page.wait_for_selector("#n-e000000b")

    # --- search highlights -------------------------------------------------------------
    page.fill("#tree-search", "approach")
    page.wait_for_selector("#tree-panel .tn.match mark")
    assert page.locator("#tree-panel .tn.match").count() >= 4
    page.fill("#tree-search", "")
    page.wait_for_selector("#tree-panel .tn.match", state="detached")

    # --- fold / unfold a branch (click and keyboard) ---------------------------------
    assert page.is_visible("#n-e000000b")
    page.click("#n-e000000a .chev")
    assert not page.is_visible("#n-e000000b")
    page.click("#n-e000000a .chev")
    assert page.is_visible("#n-e000000b")
    page.click("#n-e000000a .preview")
    page.keyboard.press("f")
    assert not page.is_visible("#n-e000000b")
    page.keyboard.press("f")
    assert page.is_visible("#n-e000000b")

    # --- label -------------------------------------------------------------------------
    page.click("#n-e0000011 .preview")
    page.wait_for_selector('#entry-pane [data-entry="e0000011"]')
    page.fill("#entry-pane input[name=label]", "B works")
    page.click("#entry-pane .act-label button[name=save]")
    page.wait_for_selector("#n-e0000011 .label-chip")
    assert page.inner_text("#n-e0000011 .label-chip") == "B works"
    session = Session.objects.get(pi_id=sid)
    assert Entry.objects.get(session=session, pi_id="e0000011").label == "B works"

    # --- continue here on a user message: leaf = its parent, text back in the input ----
    page.click("#n-e000000d .preview")
    page.wait_for_selector('#entry-pane [data-entry="e000000d"]')
    page.click("#entry-pane .act-navigate button")
    page.wait_for_selector("#entry-status .notice-ok")
    page.wait_for_selector("#n-e000000c.session-leaf")
    session.refresh_from_db()
    assert session.leaf.pi_id == "e000000c"
    if page.locator("#chat-input").count():
        assert page.input_value("#chat-input") == "A looks wrong"
    # double-click from a second "tab": idempotent
    page.click("#entry-pane .act-navigate button")
    expect(page.locator("#entry-status")).to_contain_text("Already here")
    # The answer also refreshes the tree, which scrolls its selection into view: wait for
    # that before clicking another row, or the click may land on a row that moved.
    page.wait_for_function("() => !document.querySelector('#tree-panel.htmx-request')")

    # --- context inspector at a node -------------------------------------------------------
    page.click("#n-e0000014 .preview")
    page.wait_for_selector('#entry-pane [data-entry="e0000014"]')
    page.click("#entry-pane button:has-text('Inspect context here')")
    page.wait_for_selector("#inspector-pane .inspector .ctx-threshold")
    inspector = page.inner_text("#inspector-pane")
    assert "hidden behind the compaction summary" in inspector
    assert page.locator("#inspector-pane .ctx-msg").count() == 6  # summary + 5 kept/after
    page.click("#n-e00000c1 .preview")  # the compaction node opens with its summary and files
    page.wait_for_selector('#entry-pane [data-entry="e00000c1"]')
    page.click("#entry-pane button:has-text('Inspect context here')")
    page.wait_for_selector('#inspector-pane .inspector[data-leaf="e00000c1"]')
    page.screenshot(path=str(artifact_dir / "session_page.png"), full_page=False)
    page.click("#inspector-pane .inspector-close")
    expect(page.locator("#inspector-pane .inspector")).to_have_count(0)
    page.click("#entry-pane .entry-link input")  # selects the whole link, ready to copy
    assert page.evaluate(
        "() => { const i = document.querySelector('#entry-pane .entry-link input');"
        " return i.value.length > 0 && i.selectionStart === 0"
        " && i.selectionEnd === i.value.length; }"
    )

    # --- fork with each scope ------------------------------------------------------------
    for scope in ("path", "path_and_siblings", "up_to_depth"):
        page.goto(f"/s/{sid}/?target=e000000d")
        page.wait_for_selector('#entry-pane [data-entry="e000000d"]')
        page.select_option("#entry-pane select[name=scope]", scope)
        with page.expect_navigation():
            page.click("#entry-pane .act-fork button")
        page.wait_for_selector("#tree-panel .tree")
        new_id = page.url.rstrip("/").split("/s/")[1].split("/")[0]
        fork = Session.objects.get(pi_id=new_id)
        assert fork.parent_id == session.pk and fork.source == "fork"
        ids = set(fork.entries.exclude(type="label").values_list("pi_id", flat=True))
        assert "e000000d" in ids and ("e0000010" in ids) == (scope != "path")
        assert page.locator("#n-e000000d").count() == 1
    assert not errors, errors


def test_continue_with_summary_runs_on_the_worker(
    page_for, make_user, workspace, worker, llm, artifact_dir
):
    owner = make_user("tree-summary")
    session = import_branched(owner, str(workspace), session_id=str(uuid.uuid4()))
    llm.push(
        text(
            "## Goal\nFinish approach B.\n\n## Progress\n- [x] B works\n\n## Next Steps\n1. Ship it"
        )
    )
    page = page_for(owner)
    failures = []
    page.on(
        "response", lambda r: failures.append(f"{r.status} {r.url}") if r.status >= 400 else None
    )
    page.goto(f"/s/{session.pi_id}/?target=e0000016")
    page.wait_for_selector('#entry-pane [data-entry="e0000016"]')
    page.click("#entry-pane .act-summary summary")
    page.fill("#entry-pane .act-summary textarea[name=focus]", "focus on the tests")
    page.click("#entry-pane .act-summary button[type=submit]")
    page.wait_for_selector("#entry-status .notice")
    # a second identical request (another tab) is deduplicated by the jobs service
    token = next(c["value"] for c in page.context.cookies() if c["name"] == "csrftoken")
    again = page.request.post(
        f"/s/{session.pi_id}/e/e0000016/navigate/",
        form={"summary": "1", "focus": "focus on the tests", "old_leaf": "e0000014"},
        headers={"X-CSRFToken": token, "HX-Request": "true"},
    )
    assert again.ok
    job = wait_db(
        lambda: Job.objects.filter(session=session, kind="branch_summary", status="done").first(),
        60,
        "the branch summary job",
    )
    assert Job.objects.filter(session=session, kind="branch_summary").count() == 1
    summary = job.result_entry
    assert summary.type == "branch_summary" and summary.parent.pi_id == "e0000016"
    assert "Finish approach B" in summary.payload["summary"]
    assert "focus on the tests" in str(llm.requests[-1])
    session.refresh_from_db()
    assert session.leaf_id == summary.pk
    # the page follows live (job_progress / entry_appended over the websocket)
    page.wait_for_selector(f"#n-{summary.pi_id}.k-branch_summary.session-leaf", timeout=20000)
    page.click(f"#n-{summary.pi_id} .preview")
    page.wait_for_selector(f'#entry-pane [data-entry="{summary.pi_id}"]')
    assert "Finish approach B" in page.inner_text("#entry-pane")
    page.screenshot(path=str(artifact_dir / "session_page_summary.png"))

    # --- compact now, with a focus: queued from the jobs panel, written by the worker --
    from sessions_app.services.jobs import update_compaction_settings

    # keep almost nothing, so this small session has something to compact
    update_compaction_settings(
        session, actor=owner, enabled=True, reserve_tokens=16384, keep_recent_tokens=1
    )
    llm.push(text("## Goal\nShip B.\n\n## Progress\n### Done\n- [x] B"), text("## Turn\nprefix"))
    page.fill("#jobs-focus", "keep the test results")
    page.click("#jobs-compact-button")
    expect(page.locator("#jobs")).to_contain_text("Compaction queued.")
    job = wait_db(
        lambda: Job.objects.filter(session=session, kind="compaction", status="done").first(),
        60,
        "the compaction job",
    )
    assert job.result_entry.type == "compaction"
    assert "keep the test results" in str(llm.requests)
    page.wait_for_selector(f"#n-{job.result_entry.pi_id}.k-compaction", timeout=20000)
    assert not failures, failures


def test_the_content_security_policy_stops_injected_handlers(page_for, make_user, workspace):
    """Were markup with a handler ever to reach a page, the browser would not run it."""
    owner = make_user("tree-csp")
    session = import_branched(owner, str(workspace), session_id=str(uuid.uuid4()))
    page = page_for(owner)
    page.goto(f"/s/{session.pi_id}/")
    page.wait_for_selector("#tree-panel .tree")
    page.evaluate(
        "() => document.body.insertAdjacentHTML('beforeend',"
        ' \'<img src="data:," onerror="window.__pwned = 1">'
        '<button id=csp-probe onclick="window.__pwned = 2">x</button>\')'
    )
    page.click("#csp-probe")
    page.wait_for_function("() => document.querySelector('img[onerror]').complete")
    assert page.evaluate("() => window.__pwned") is None
    expect_violation = [t for t in page.csp_violations if "inline event handler" in t]
    assert expect_violation, page.csp_violations
    page.csp_violations.clear()  # provoked on purpose
    # Django's admin runs under the same policy (the fixture fails on any violation).
    owner.is_staff = owner.is_superuser = True
    owner.save()
    entry = Entry.objects.get(session=session, pi_id="e0000014")
    for url in (
        "/admin/sessions_app/entry/?type__exact=message",
        f"/admin/sessions_app/entry/{entry.pk}/change/",
        f"/admin/sessions_app/session/{session.pk}/change/",
    ):
        page.goto(url)
        page.wait_for_selector("#content")
        page.wait_for_load_state("load")
    assert page.csp_violations == []


def test_a_refused_action_shows_the_error_notice(page_for, make_user, workspace, artifact_dir):
    """htmx is configured to swap 4xx responses: an action the server refuses keeps its
    real status and the person sees the error notice where the action's result goes."""
    owner = make_user("tree-refused")
    session = import_branched(owner, str(workspace), session_id=str(uuid.uuid4()))
    leaf = session.leaf_id
    page = page_for(owner)
    statuses = []
    page.on("response", lambda r: statuses.append(r.status) if "/navigate/" in r.url else None)
    page.goto(f"/s/{session.pi_id}/?target=e0000016")
    page.wait_for_selector('#entry-pane [data-entry="e0000016"]')
    # The page was drawn before the leaf moved (another tab): its form names an old leaf.
    page.evaluate("document.querySelector('#entry-pane input[name=old_leaf]').value = 'e000000e'")
    page.click("#entry-pane .act-summary summary")
    page.click("#entry-pane .act-summary button[type=submit]")
    expect(page.locator("#entry-status .notice-error")).to_contain_text(
        "moved on since this page was drawn"
    )
    assert statuses == [409]
    assert Session.objects.get(pk=session.pk).leaf_id == leaf
    assert not Job.objects.filter(session=session).exists()


# --- pi 1.x entries: usage, context_edit, system messages, an unknown type ----------------


def open_entry(page, entry_id):
    page.click(f"#n-{entry_id} .preview")
    page.wait_for_selector(f'#entry-pane [data-entry="{entry_id}"]')
    return page.locator("#entry-pane")


def test_usage_context_edit_system_and_unknown_entries_render(page_for, make_user):
    owner = make_user("pi1-browser")
    session = import_pi1_session(owner)
    page = page_for(owner)
    errors = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(f"/s/{session.pi_id}/?filter=all")  # the default filter hides usage and edits
    page.wait_for_selector("#n-b0000004.session-leaf")

    # The tree: each type has its own icon and names itself.
    for entry_id, kind, icon, prefix in (
        ("b00000u1", "usage", "¢", "usage"),
        ("b00000e3", "context_edit", "✎", "context edit"),
        ("b00000s1", "system", "S", "system"),
        ("b00000x1", "hologram", "?", "hologram"),
    ):
        row = page.locator(f"#n-{entry_id}.k-{kind}")
        assert row.count() == 1, entry_id
        assert row.locator(".icon").inner_text() == icon
        assert row.locator(".preview b").inner_text() == prefix
    assert "drops b0000001" in page.inner_text("#n-b00000e2 .preview")

    # Usage: the figures in a table, the note, nothing about the context.
    pane = open_entry(page, "b00000u1")
    table = pane.locator(".usage-table")
    assert table.locator("td").all_inner_texts() == ["1200", "300", "0", "0", "1500", "$0.0081"]
    assert USAGE_NOTE in pane.inner_text()
    assert "anthropic/claude-haiku-4-5" in pane.inner_text()

    # A replacing edit links to its target and shows the new content; a dropping one says so.
    pane = open_entry(page, "b00000e3")
    box = pane.locator(".edit-box.edit-replaced")
    assert "replaces the content of b0000003" in box.inner_text()
    assert REPLACEMENT in box.locator(".edit-replacement").inner_text()
    pane.locator('.edit-box a.goto[data-id="b0000003"]').click()
    pane = open_entry(page, "b00000e2")
    assert "drops b0000001 from the model's context" in pane.locator(".edit-dropped").inner_text()

    # A system message: the prompt text, its sections (escaped), the tool changes.
    pane = open_entry(page, "b00000s1")
    box = pane.locator(".system-box")
    assert "You may now lint files." in box.inner_text()
    assert (
        "<rules>Always run the quokka linter</rules>" in box.locator(".system-section").inner_text()
    )
    assert box.locator(".tools-added").inner_text().count("+lint") == 1
    assert "-grep" in box.locator(".tools-removed").inner_text()

    # An entry type newer than piweb: its type and its JSON.
    pane = open_entry(page, "b00000x1")
    assert "hologram" in pane.locator("strong").first.inner_text()
    assert '"beam": "violet-octopus"' in pane.locator(".json-view").inner_text()

    # The inspector at the leaf: the edits and the system changes.
    open_entry(page, "b0000004")
    page.click("#entry-pane button:has-text('Inspect context here')")
    page.wait_for_selector("#inspector-pane .ctx-edits")
    edits = page.inner_text("#inspector-pane .ctx-edits")
    assert "3 context edits on this path" in edits and "overridden by a later edit" in edits
    changes = page.inner_text("#inspector-pane .ctx-system-changes")
    assert "+lint" in changes and "-grep" in changes and "section rules" in changes
    assert errors == []
