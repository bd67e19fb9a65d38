"""The chat box in a real browser (static/piweb/composer.js): the slash commands' completion
list, each command's effect, and images pasted, attached, dropped, removed and sent."""

import base64
import re
import struct

import pytest
from playwright.sync_api import expect

from sessions_app.models import Entry, Session
from sessions_app.selectors import paths
from sessions_app.selectors.panels.composer import SLASH_COMMANDS
from sessions_app.services import sessions
from tests.support.agent_runs import new_session, wait_run
from tests.support.images import png
from tests.support.job_sessions import SMALL, make_session, wait_for_job
from tests.support.scripted_llm import text
from tests.support.waiting import wait_until
from tests.support.workspaces import place_workspace

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]


def open_page(page_for, user, session):
    page = page_for(user)
    page.goto(f"/s/{session.pi_id}/")
    page.wait_for_function("() => document.body.dataset.ws === 'open'", timeout=30000)
    return page


def path_of(session):
    session.refresh_from_db()
    return paths.load_path(session)


def run_command(page, command):
    page.fill("#chat-input", command)
    page.press("#chat-input", "Escape")  # close the completion list: Enter runs the text
    page.press("#chat-input", "Enter")


def options(page):
    return page.locator("#composer-complete .composer-option code").all_inner_texts()


def turns_session(owner, workspace, turns=3):
    cwd = place_workspace(owner, workspace)
    return make_session(owner, turns=turns, compaction=SMALL, cwd=str(cwd))


def test_the_completion_list_filters_moves_accepts_and_closes(page_for, make_user, workspace):
    owner = make_user()
    session = turns_session(owner, workspace, turns=1)
    page = open_page(page_for, owner, session)
    popup = page.locator("#composer-complete")
    expect(popup).to_be_hidden()
    page.type("#chat-input", "/")
    expect(popup).to_be_visible()
    assert options(page) == [f"/{c.name}" for c in SLASH_COMMANDS]
    page.type("#chat-input", "co")
    expect(popup.locator(".composer-option")).to_have_count(2)
    assert options(page) == ["/compact", "/copy"]
    expect(popup.locator(".composer-option.active")).to_contain_text("/compact")
    page.press("#chat-input", "ArrowDown")
    expect(popup.locator(".composer-option.active")).to_contain_text("/copy")
    page.press("#chat-input", "Tab")
    expect(page.locator("#chat-input")).to_have_value("/copy")
    # Esc closes the list and leaves the text.
    page.fill("#chat-input", "")
    page.type("#chat-input", "/ex")
    expect(popup).to_be_visible()
    page.press("#chat-input", "Escape")
    expect(popup).to_be_hidden()
    expect(page.locator("#chat-input")).to_have_value("/ex")
    # Arguments: /model lists the picker's models, filtered as one types; /thinking the
    # levels of the model (a model without reasoning has only "off"); /export the formats.
    page.fill("#chat-input", "")
    page.type("#chat-input", "/model ")
    listed = options(page)
    picker = page.eval_on_selector_all(
        "#chat-model-select option", "els => els.filter(e => e.value).map(e => e.value)"
    )
    assert listed == picker and "openai-compatible/scripted-vision-model" in listed
    page.type("#chat-input", "vision")
    assert options(page) == ["openai-compatible/scripted-vision-model"]
    expect(page.locator("#composer-complete")).to_contain_text("takes images")
    page.fill("#chat-input", "")
    page.type("#chat-input", "/thinking ")
    assert options(page) == ["off"]
    page.fill("#chat-input", "")
    page.type("#chat-input", "/export ")
    assert options(page) == ["html", "md", "jsonl"]
    assert page.csp_violations == []


def test_model_and_thinking_commands_use_the_pickers_endpoints(page_for, make_user, workspace):
    owner = make_user()
    session = turns_session(owner, workspace, turns=1)
    page = open_page(page_for, owner, session)
    attach = page.locator("#composer-attach")
    expect(attach).to_be_disabled()
    # Enter on an argument in the list runs the command.
    page.type("#chat-input", "/model vision")
    page.press("#chat-input", "Enter")
    expect(page.locator("#chat-notice")).to_contain_text(
        "Model: openai-compatible/scripted-vision-model"
    )
    expect(page.locator("#chat-model")).to_have_text("openai-compatible/scripted-vision-model")
    expect(attach).to_be_enabled()  # this model takes images
    changes = [e for e in path_of(session) if e["type"] == "model_change"]
    assert changes[-1]["modelId"] == "scripted-vision-model"
    run_command(page, "/model scripted-cloud/scripted-priced")
    expect(page.locator("#chat-notice")).to_contain_text("Model: scripted-cloud/scripted-priced")
    expect(attach).to_be_disabled()
    page.fill("#chat-input", "")
    page.type("#chat-input", "/thinking ")
    assert "high" in options(page) and "off" in options(page)
    run_command(page, "/thinking high")
    expect(page.locator("#chat-notice")).to_contain_text("Thinking: high")
    levels = [e for e in path_of(session) if e["type"] == "thinking_level_change"]
    assert levels[-1]["thinkingLevel"] == "high"
    run_command(page, "/thinking ludicrous")
    expect(page.locator("#chat-notice")).to_contain_text("not one this model takes")
    run_command(page, "/model nobody/nothing")
    expect(page.locator("#chat-notice")).to_contain_text("No model nobody/nothing")


@pytest.mark.worker
def test_compact_passes_its_instructions_to_the_summary(
    worker, page_for, make_user, llm, workspace
):
    owner = make_user()
    session = turns_session(owner, workspace)
    page = open_page(page_for, owner, session)
    llm.push(text("## Goal\nSummary from the command."))
    run_command(page, "/compact the parser bug in module_2")
    expect(page.locator("#chat-notice")).to_contain_text(
        "Compaction queued, focused on: the parser bug in module_2"
    )
    job = wait_for_job(session.jobs.get(kind="compaction"))
    assert job.status == "done"
    prompt = llm.requests[0]["messages"][-1]["content"]
    prompt = prompt if isinstance(prompt, str) else "".join(p.get("text", "") for p in prompt)
    assert "Additional focus: the parser bug in module_2" in prompt
    assert Entry.objects.filter(session=session, type="compaction").exists()


def test_name_fork_tree_export_share_copy_and_new(page_for, make_user, workspace):
    owner = make_user()
    session = turns_session(owner, workspace, turns=2)
    page = open_page(page_for, owner, session)
    # /name writes a session_info entry, as the rename form does.
    run_command(page, "/name")
    expect(page.locator("#chat-notice")).to_contain_text("/name needs <name>")
    run_command(page, "/name Parser hunt")
    expect(page.locator("#chat-notice")).to_contain_text("Renamed: Parser hunt")
    expect(page.locator(".session-head h1")).to_have_text("Parser hunt")
    session.refresh_from_db()
    assert session.name == "Parser hunt"
    info = [e for e in path_of(session) if e["type"] == "session_info"]
    assert info[-1]["name"] == "Parser hunt"
    # /tree opens the tree panel if it is closed and puts the focus in it.
    page.click("#toggle-tree")
    expect(page.locator(".session-page")).to_have_class(re.compile(r"\btree-closed\b"))
    run_command(page, "/tree")
    expect(page.locator(".session-page")).not_to_have_class(re.compile(r"\btree-closed\b"))
    # (the focus moves once the opened panel is shown: wait for it, not for a clock)
    page.wait_for_function(
        "() => document.activeElement && document.activeElement.matches('#tree-panel .tree')",
        timeout=10_000,
    )
    # /export downloads the branch: HTML by default, or the format given.
    page.locator("#chat-input").focus()
    with page.expect_download() as download:
        run_command(page, "/export")
    assert download.value.suggested_filename.endswith(".html")
    with page.expect_download() as download:
        run_command(page, "/export md")
    assert download.value.suggested_filename.endswith(".md")
    run_command(page, "/export pdf")
    expect(page.locator("#chat-notice")).to_contain_text("Unknown export format pdf")
    # /copy copies the text of the last answer.
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    run_command(page, "/copy")
    expect(page.locator("#chat-notice")).to_contain_text("Copied the last answer")
    assert page.evaluate("navigator.clipboard.readText()") == "Done with turn 2."
    # /share opens the sharing page for the branch's leaf.
    run_command(page, "/share")
    page.wait_for_url(re.compile(rf"/s/{session.pi_id}/sharing/\?leaf="))
    assert f"leaf={session.leaf_pi_id}" in page.url
    # /fork makes a copy of the branch and opens it.
    page.goto(f"/s/{session.pi_id}/")
    page.wait_for_function("() => document.body.dataset.ws === 'open'", timeout=30000)
    run_command(page, "/fork")
    fork = wait_for(lambda: Session.objects.filter(parent=session).first())
    page.wait_for_url(re.compile(rf"/s/{fork.pi_id}/$"))
    texts = [e["message"]["content"] for e in path_of(fork) if e["type"] == "message"]
    assert texts == [e["message"]["content"] for e in path_of(session) if e["type"] == "message"]
    # /new starts an empty session in the same workspace and opens it.
    before = set(Session.objects.filter(owner=owner).values_list("pk", flat=True))
    run_command(page, "/new")
    new = wait_for(lambda: Session.objects.filter(owner=owner).exclude(pk__in=before).first())
    page.wait_for_url(re.compile(rf"/s/{new.pi_id}/$"))
    assert new.cwd == session.cwd and new.leaf_id is None


def wait_for(find, timeout=20.0):
    found = wait_until(find, timeout)
    assert found, "not there in time"
    return found


@pytest.mark.worker
def test_an_unknown_command_is_sent_as_text_only_when_confirmed(
    worker, page_for, make_user, llm, workspace
):
    owner = make_user()
    session = new_session(owner, workspace)
    sessions.rename_session(session, "unknown command", actor=owner)
    page = open_page(page_for, owner, session)
    run_command(page, "/frobnicate the widget")
    expect(page.locator("#chat-notice")).to_contain_text("/frobnicate is not a command")
    expect(page.locator("#chat-input")).to_have_value("/frobnicate the widget")
    assert not session.jobs.exists()
    llm.push(text("Sent as a prompt, as pi does."))
    page.press("#chat-input", "Enter")
    expect(page.locator("#chat-transcript")).to_contain_text("Sent as a prompt", timeout=30000)
    assert wait_run(session).status == "done"
    users = [e for e in path_of(session) if e.get("message", {}).get("role") == "user"]
    assert users[-1]["message"]["content"] == [{"type": "text", "text": "/frobnicate the widget"}]


PASTE = """([b64, name, target, kind]) => {
  const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
  const data = new DataTransfer();
  data.items.add(new File([bytes], name, { type: "image/png" }));
  const init = { bubbles: true, cancelable: true };
  const event = kind === "paste"
    ? new ClipboardEvent("paste", { ...init, clipboardData: data })
    : new DragEvent("drop", { ...init, dataTransfer: data });
  document.querySelector(target).dispatchEvent(event);
}"""


@pytest.mark.worker
def test_images_pasted_attached_dropped_removed_and_sent(
    worker, page_for, make_user, llm, workspace
):
    owner = make_user()
    session = new_session(owner, workspace, profile="scripted-vision")
    sessions.rename_session(session, "images", actor=owner)
    page = open_page(page_for, owner, session)
    thumbs = page.locator("#composer-images .composer-thumb img")
    expect(page.locator("#composer-attach")).to_be_enabled()
    red, green, blue = png(rgb=(220, 0, 0)), png(rgb=(0, 200, 0)), png(6, 6, rgb=(0, 0, 220))
    # Attach (the file button's input), paste, drop: three thumbnails.
    page.set_input_files(
        "#composer-file", files=[{"name": "red.png", "mimeType": "image/png", "buffer": red}]
    )
    expect(thumbs).to_have_count(1)
    page.evaluate(PASTE, [base64.b64encode(green).decode(), "green.png", "#chat-input", "paste"])
    expect(thumbs).to_have_count(2)
    page.evaluate(PASTE, [base64.b64encode(blue).decode(), "blue.png", "#chat-form", "drop"])
    expect(thumbs).to_have_count(3)
    assert thumbs.nth(0).evaluate("img => img.naturalWidth") == 4  # the image itself, decoded
    # Remove the pasted one.
    page.click('#composer-images button[aria-label="Remove green.png"]')
    expect(thumbs).to_have_count(2)
    assert [t.get_attribute("alt") for t in thumbs.all()] == ["red.png", "blue.png"]
    llm.push(text("A red one and a blue one."))
    page.fill("#chat-input", "what colours?")
    page.press("#chat-input", "Enter")
    expect(page.locator("#chat-notice")).to_contain_text("Sent")
    expect(thumbs).to_have_count(0)
    expect(page.locator("#chat-transcript")).to_contain_text(
        "A red one and a blue one", timeout=30000
    )
    assert wait_run(session).status == "done"
    user_message = next(
        e["message"] for e in path_of(session) if e.get("message", {}).get("role") == "user"
    )
    assert user_message["content"] == [
        {"type": "text", "text": "what colours?"},
        {"type": "image", "data": base64.b64encode(red).decode(), "mimeType": "image/png"},
        {"type": "image", "data": base64.b64encode(blue).decode(), "mimeType": "image/png"},
    ]
    # On the wire: image_url parts after the text.
    sent = llm.requests[-1]["messages"]
    parts = next(m for m in sent if m["role"] == "user")["content"]
    assert [p["type"] for p in parts] == ["text", "image_url", "image_url"]
    assert parts[1]["image_url"]["url"] == "data:image/png;base64," + base64.b64encode(red).decode()
    # The chat shows the images of the message.
    expect(page.locator("#chat-transcript .r-user img.entry-image")).to_have_count(2)
    # An image wider than 2000 px is scaled down before it is sent, as pi does.
    page.set_input_files(
        "#composer-file",
        files=[{"name": "wide.png", "mimeType": "image/png", "buffer": png(2600, 40)}],
    )
    expect(thumbs).to_have_count(1)
    llm.push(text("A wide one."))
    # The page knows the first run ended (else Enter would queue a steer for it).
    expect(page.locator("#chat")).to_have_attribute("data-running", "false")
    page.fill("#chat-input", "and this one?")
    page.press("#chat-input", "Enter")
    expect(thumbs).to_have_count(0)
    assert wait_run(session).status == "done"
    last_user = [e for e in path_of(session) if e.get("message", {}).get("role") == "user"][-1]
    scaled = base64.b64decode(last_user["message"]["content"][1]["data"])
    assert struct.unpack(">II", scaled[16:24]) == (2000, 31)
    assert page.csp_violations == []


def test_a_text_only_model_cannot_take_images(page_for, make_user, workspace):
    owner = make_user()
    session = turns_session(owner, workspace, turns=1)
    page = open_page(page_for, owner, session)
    attach = page.locator("#composer-attach")
    expect(attach).to_be_disabled()
    assert "openai-compatible/scripted-model does not take images" in attach.get_attribute("title")
    page.evaluate(PASTE, [base64.b64encode(png()).decode(), "dot.png", "#chat-input", "paste"])
    expect(page.locator("#chat-notice")).to_contain_text("does not take images")
    expect(page.locator("#composer-images .composer-thumb")).to_have_count(0)


@pytest.mark.worker
def test_a_project_template_is_listed_with_its_hint_and_the_expansion_is_sent(
    worker, page_for, make_user, llm, workspace
):
    owner = make_user()
    session = new_session(owner, workspace)
    folder = workspace / ".pi" / "prompts"
    folder.mkdir(parents=True)
    (folder / "review.md").write_text(
        "---\ndescription: Review one file\nargument-hint: <file> [speed]\n---\n"
        "Review $1 ${2:-slowly}.\n"
    )
    (folder / "model.md").write_text("A template piweb's /model keeps its name from.\n")
    skill = workspace / ".pi" / "skills" / "deploy"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: deploy\ndescription: Ship it.\n---\nGo.\n")
    page = open_page(page_for, owner, session)
    page.type("#chat-input", "/")
    listed = options(page)
    assert listed == [f"/{c.name}" for c in SLASH_COMMANDS] + ["/review", "/skill:deploy"]
    popup = page.locator("#composer-complete")
    expect(popup.locator(".composer-option", has_text="/model")).to_contain_text(
        "your template /model is not used"
    )
    page.type("#chat-input", "rev")
    assert options(page) == ["/review"]
    expect(popup.locator(".composer-option.active")).to_contain_text(
        "<file> [speed] \u00b7 Review one file"
    )
    page.press("#chat-input", "Tab")
    expect(page.locator("#chat-input")).to_have_value("/review ")
    llm.push(text("Reviewed."))
    page.type("#chat-input", '"src/app.py" fast')
    page.press("#chat-input", "Enter")
    expect(page.locator("#chat-transcript")).to_contain_text("Reviewed.", timeout=30000)
    assert wait_run(session).status == "done"
    users = [e for e in path_of(session) if e.get("message", {}).get("role") == "user"]
    assert users[-1]["message"]["content"] == [{"type": "text", "text": "Review src/app.py fast."}]
    expect(page.locator("#chat-transcript")).to_contain_text("Review src/app.py fast.")
    assert "Review src/app.py fast." in str(llm.requests[-1]["messages"][-1]["content"])
    assert page.csp_violations == []
