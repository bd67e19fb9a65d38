"""In headless Chromium: an upload becomes an import job whose outcome replaces the
progress bar (the error of a malformed file, or the report and the session in the live
list), and a root with thousands of children opens with a paged list of them."""

from __future__ import annotations

import io
import json
import uuid

import pytest

from sessions_app.models import Job, Session
from sessions_app.services.importer import import_jsonl_stream
from tests.support.browser import collect_errors
from tests.support.pi_files import an_earlier_session, header, message
from tests.support.web import SERVER_UPLOAD_LIMIT

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def upload(page, name: str, data: bytes | None = None, path=None) -> None:
    page.goto("/")
    page.locator("summary", has_text="Import pi session").click()
    files = path or [{"name": name, "mimeType": "application/jsonl", "buffer": data}]
    page.set_input_files("#import-form input[name=file]", files=files)
    page.click("#import-form button[type=submit]")


def test_an_upload_is_imported_by_the_worker_and_its_outcome_shown(
    page_for, worker, make_user, tmp_path
):
    owner = make_user("browser-importer")
    # One session already: the list shows its import form (a first run shows the
    # three-way empty state instead, tested in test_import_many_browser.py).
    an_earlier_session(owner)
    page = page_for(owner)
    errors = collect_errors(page)
    upload(page, "broken.jsonl", b"this is not json\n{nor this\n")
    page.wait_for_selector("#import-result .error", timeout=30_000)
    assert "Import failed" in page.inner_text("#import-result")
    assert "broken.jsonl" in page.inner_text("#import-result")

    sid = str(uuid.uuid4())
    lines = [header(sid), message("u1", None, text="hello from the upload")]
    upload(page, "good.jsonl", "".join(json.dumps(x) + "\n" for x in lines).encode())
    page.wait_for_selector("#import-result .ok", timeout=30_000)
    assert "created" in page.inner_text("#import-result")
    page.wait_for_selector(f'a[href="/s/{sid}/"]', timeout=15_000)  # the list shows it
    assert Session.objects.get(pi_id=sid).owner_id == owner.pk

    # over the server's limit: refused in the page, nothing sent
    jobs_before = Job.objects.count()
    huge = tmp_path / "huge.jsonl"
    with huge.open("wb") as fh:
        fh.truncate(SERVER_UPLOAD_LIMIT + 1)
    upload(page, "huge.jsonl", path=huge)
    page.wait_for_selector("#import-result .error >> text=larger than the import limit")
    assert "(32 MB): not sent" in page.inner_text("#import-result")  # the page refused it
    assert Job.objects.count() == jobs_before
    assert errors == []


def test_a_root_with_thousands_of_children_opens_and_pages_them(page_for, make_user):
    owner = make_user("browser-wide")
    sid = str(uuid.uuid4())
    lines = [header(sid), message("root", None, text="the root")]
    lines += [message(f"c{i}", "root", role="assistant", text=f"child {i}") for i in range(3000)]
    data = "".join(json.dumps(x) + "\n" for x in lines).encode()
    import_jsonl_stream(io.BytesIO(data), owner, filename="wide.jsonl", after_commit="off")
    page = page_for(owner)
    errors = collect_errors(page)
    page.goto(f"/s/{sid}/")
    more = page.locator(".tn.children")
    assert "2,950 more branches from here" in more.inner_text()
    before = page.locator("#tree-panel .tn.node").count()
    more.click()
    page.wait_for_selector(".tn.children >> text=2,850 more branches")
    assert page.locator("#tree-panel .tn.node").count() == before + 100
    page.locator("#tree-panel .tn.node").nth(before + 5).locator(".preview").click()
    page.wait_for_selector("#entry-pane [data-entry]")
    assert errors == []
