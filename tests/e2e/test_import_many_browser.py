"""In headless Chromium: several session files, or a whole folder, imported at once from
the sessions list (dropped on the page, or chosen with the multiple-file and folder
pickers). Each .jsonl file is its own upload and job with its own row; the others are
listed as skipped; a malformed file, or one that is not a pi session, fails its row with
the importer's reason and never stops the rest."""

from __future__ import annotations

import json
import uuid

import pytest
from playwright.sync_api import expect

from sessions_app.models import Session
from tests.support.browser import collect_errors
from tests.support.pi_files import header, jsonl_text, message

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

IMPORT_WAIT = 60_000  # the worker imports them one after the other on a busy machine


def good_session(text: str) -> tuple[str, str]:
    sid = str(uuid.uuid4())
    return sid, jsonl_text(header(sid), [message("u1", None, text=text)])


def row(page, path: str):
    return page.locator(".import-row", has=page.locator(".import-name", has_text=path))


def watch_uploads(page) -> list[str]:
    posts: list[str] = []
    page.on(
        "request",
        lambda r: posts.append(r.url) if r.method == "POST" and r.url.endswith("/import/") else 0,
    )
    return posts


def drop(page, files: list[dict]) -> None:
    """A drop of `files` (name, text) on the page, as the browser delivers one."""
    transfer = page.evaluate_handle(
        """(files) => {
            const dt = new DataTransfer();
            for (const f of files) dt.items.add(new File([f.text], f.name));
            return dt;
        }""",
        files,
    )
    page.dispatch_event("#import-drop", "drop", {"dataTransfer": transfer})


def test_dropped_files_each_get_a_row_and_one_bad_file_stops_nothing(page_for, worker, make_user):
    owner = make_user("drop-importer")
    page = page_for(owner)
    errors = collect_errors(page)
    posts = watch_uploads(page)
    page.goto("/")
    sid, good = good_session("hello from a dropped file")
    not_pi = json.dumps({"type": "message", "id": "m1", "parentId": None}) + "\n"
    drop(
        page,
        [
            {"name": "broken.jsonl", "text": "this is not json\n{nor this\n"},
            {"name": "notes.txt", "text": "just notes"},
            {"name": "good.jsonl", "text": good},
            {"name": "not-pi.jsonl", "text": not_pi},
        ],
    )
    expect(page.locator("#import-card")).to_have_attribute("open", "")
    expect(page.locator(".import-row")).to_have_count(4)
    expect(row(page, "notes.txt")).to_have_attribute("data-state", "skipped")
    expect(row(page, "notes.txt")).to_contain_text("not a .jsonl file")

    expect(row(page, "good.jsonl")).to_have_attribute("data-state", "done", timeout=IMPORT_WAIT)
    expect(row(page, "good.jsonl")).to_contain_text("created")
    expect(row(page, "good.jsonl").locator(f'a[href="/s/{sid}/"]')).to_have_count(1)
    expect(row(page, "broken.jsonl")).to_have_attribute("data-state", "failed", timeout=IMPORT_WAIT)
    expect(row(page, "broken.jsonl")).to_contain_text("malformed")
    expect(row(page, "not-pi.jsonl")).to_have_attribute("data-state", "failed", timeout=IMPORT_WAIT)
    expect(row(page, "not-pi.jsonl")).to_contain_text("line 1 is not a pi session header")

    # the live list shows the imported session; one upload per .jsonl file
    page.wait_for_selector(f'#sessions-live a[href="/s/{sid}/"]', timeout=IMPORT_WAIT)
    assert Session.objects.get(pi_id=sid).owner_id == owner.pk
    assert len(posts) == 3
    assert errors == []


def test_a_folder_and_several_files_from_the_pickers(page_for, worker, make_user, tmp_path):
    owner = make_user("folder-importer")
    folder = tmp_path / "proj"
    (folder / "nested" / "deeper").mkdir(parents=True)
    sid_a, text_a = good_session("top of the folder")
    sid_b, text_b = good_session("deep in the folder")
    (folder / "a.jsonl").write_text(text_a)
    (folder / "nested" / "deeper" / "b.jsonl").write_text(text_b)
    (folder / "nested" / "readme.md").write_text("# not a session")
    (folder / "nested" / "bad.jsonl").write_text("{oops\n")

    page = page_for(owner)
    errors = collect_errors(page)
    posts = watch_uploads(page)
    page.goto("/")
    # A first run: the folder picker is one of its three ways in.
    with page.expect_file_chooser() as chooser:
        page.click('#first-run [data-pick-files="import-folder"]')
    chooser.value.set_files(folder)
    expect(page.locator(".import-row")).to_have_count(4)
    expect(row(page, "proj/nested/readme.md")).to_have_attribute("data-state", "skipped")
    for path, sid in (("proj/a.jsonl", sid_a), ("proj/nested/deeper/b.jsonl", sid_b)):
        expect(row(page, path)).to_have_attribute("data-state", "done", timeout=IMPORT_WAIT)
        expect(row(page, path).locator(f'a[href="/s/{sid}/"]')).to_have_count(1)
    expect(row(page, "proj/nested/bad.jsonl")).to_have_attribute(
        "data-state", "failed", timeout=IMPORT_WAIT
    )
    assert len(posts) == 3

    # the multiple-file picker: two more files, added below the folder's rows
    sid_c, text_c = good_session("picked one")
    page.set_input_files(
        "#import-files",
        files=[
            {"name": "c.jsonl", "mimeType": "application/jsonl", "buffer": text_c.encode()},
            {"name": "picture.png", "mimeType": "image/png", "buffer": b"\x89PNG"},
        ],
    )
    expect(page.locator(".import-row")).to_have_count(6)
    expect(row(page, "picture.png")).to_have_attribute("data-state", "skipped")
    expect(row(page, "c.jsonl")).to_have_attribute("data-state", "done", timeout=IMPORT_WAIT)
    assert set(Session.objects.filter(owner=owner).values_list("pi_id", flat=True)) == {
        sid_a,
        sid_b,
        sid_c,
    }
    assert errors == []


# Chromium gives a DataTransfer built by a script no file-system entries (its items'
# webkitGetAsEntry() is null), so the folder below is a stand-in with the browser's entry
# interface (FileSystemDirectoryEntry: a reader that answers in batches, then an empty
# one) around real File objects, on the items of a real drop event.
DROP_FOLDER = """([sessionText]) => {
    const file = (path, text) => ({
        isFile: true, isDirectory: false, fullPath: path,
        file: (ok) => ok(new File([text], path.split("/").pop())),
    });
    const folder = (path, batches) => ({
        isFile: false, isDirectory: true, fullPath: path,
        createReader: () => ({ readEntries: (ok) => ok(batches.shift() || []) }),
    });
    const refused = (path) => ({  // what the browser gives for a file it may not read
        isFile: true, isDirectory: false, fullPath: path,
        file: (ok, fail) => fail(new DOMException("no access", "NotReadableError")),
    });
    const locked = (path) => ({
        isFile: false, isDirectory: true, fullPath: path,
        createReader: () => ({
            readEntries: (ok, fail) => fail(new DOMException("no access", "SecurityError")),
        }),
    });
    const deeper = folder("/logs/2026/deeper", [[file("/logs/2026/deeper/s.jsonl", sessionText)]]);
    const year = folder("/logs/2026", [
        [file("/logs/2026/bad.jsonl", "{oops\\n"), deeper],
        [file("/logs/2026/notes.md", "# notes"), refused("/logs/2026/locked.jsonl")],
        [locked("/logs/2026/private")],
    ]);
    const root = folder("/logs", [[year]]);
    const dt = new DataTransfer();
    Object.defineProperty(dt, "items", {
        value: [{ kind: "file", webkitGetAsEntry: () => root, getAsFile: () => null }],
    });
    return dt;
}"""


def test_a_dropped_folder_is_walked_to_its_nested_files(page_for, worker, make_user):
    owner = make_user("folder-dropper")
    page = page_for(owner)
    errors = collect_errors(page)
    page.goto("/")
    sid, good = good_session("found in a subfolder")
    transfer = page.evaluate_handle(DROP_FOLDER, [good])
    page.dispatch_event("#sessions-live", "drop", {"dataTransfer": transfer})
    expect(page.locator(".import-row .import-name")).to_have_text(
        [
            "logs/2026/bad.jsonl",
            "logs/2026/deeper/s.jsonl",
            "logs/2026/locked.jsonl",
            "logs/2026/notes.md",
            "logs/2026/private/",
        ]
    )
    # What the browser could not read is named, with its reason, and never sent.
    expect(row(page, "logs/2026/locked.jsonl")).to_contain_text("NotReadableError")
    expect(row(page, "logs/2026/private/")).to_contain_text("SecurityError")
    expect(row(page, "logs/2026/private/")).to_have_attribute("data-state", "failed")
    expect(row(page, "logs/2026/notes.md")).to_have_attribute("data-state", "skipped")
    expect(row(page, "logs/2026/deeper/s.jsonl")).to_have_attribute(
        "data-state", "done", timeout=IMPORT_WAIT
    )
    expect(row(page, "logs/2026/bad.jsonl")).to_have_attribute(
        "data-state", "failed", timeout=IMPORT_WAIT
    )
    assert Session.objects.get(pi_id=sid).owner_id == owner.pk
    assert errors == []


def test_the_first_run_imports_through_its_own_button_then_shows_the_list(
    page_for, worker, make_user
):
    owner = make_user("first-run")
    page = page_for(owner)
    errors = collect_errors(page)
    page.goto("/")
    # No session yet: three ways in, no empty table, no filter bar.
    expect(page.locator("#first-run .first-run-action")).to_have_count(3)
    expect(page.locator("#sessions-table")).to_have_count(0)
    expect(page.locator("#session-filters")).to_have_count(0)
    expect(page.locator("#import-card")).to_be_hidden()
    # "New session…" opens the form, the cursor in its first field (a visible focus).
    page.click("#first-run-new button")
    expect(page.locator("#new-session-name")).to_be_focused()
    expect(page.locator("#new-session-folder")).to_have_value("")  # a fresh folder
    # "Choose session files…" opens the picker of the import card.
    sid, good = good_session("hello from the first run")
    with page.expect_file_chooser() as chooser:
        page.click("#first-run-import button.primary")
    chooser.value.set_files(
        {"name": "first.jsonl", "mimeType": "application/jsonl", "buffer": good.encode()}
    )
    expect(row(page, "first.jsonl")).to_have_attribute("data-state", "done", timeout=IMPORT_WAIT)
    # The list refreshes itself: the session replaces the first-run state, no reload.
    page.wait_for_selector(f'#sessions-live a[href="/s/{sid}/"]', timeout=IMPORT_WAIT)
    expect(page.locator("#first-run")).to_have_count(0)
    assert Session.objects.get(pi_id=sid).owner_id == owner.pk
    assert errors == []
