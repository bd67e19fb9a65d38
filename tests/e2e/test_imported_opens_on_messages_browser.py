"""An imported session opens on its messages (issue 34), in headless Chromium: at
1280x800 its last message is in view and the conversation keeps nearly half the chat.s
height, though its folder is not usable here and its model cannot run. The folder choice
sits compact above the composer; "This model cannot run" is an inline notice there whose
one button switches to a model that can, and the notice then goes without a reload."""

from __future__ import annotations

import io
import json
import uuid

import pytest
from playwright.sync_api import expect

from sessions_app.services.importer import import_jsonl_stream
from tests.support.browser import collect_errors

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]

ELSEWHERE = "/Users/someone/code/pi-mono"


def imported_long_session(owner):
    """A pi session from another machine: its folder elsewhere, its model one with no key
    here, and 40 messages (more than one screen)."""
    stamp = "2026-11-30T10:00:{:02d}.000Z"
    lines = [
        {"type": "session", "version": 3, "id": str(uuid.uuid4()),
         "timestamp": stamp.format(0), "cwd": ELSEWHERE},
        {"type": "model_change", "id": "m0000000", "parentId": None,
         "timestamp": stamp.format(0), "provider": "anthropic", "modelId": "claude-sonnet-4-5"},
    ]  # fmt: skip
    parent = "m0000000"
    for i in range(40):
        eid = f"e{i:07d}"
        role = "user" if i % 2 == 0 else "assistant"
        text = f"message number {i}" if i < 39 else "the very last words"
        message = {"role": role, "content": [{"type": "text", "text": text}], "timestamp": i}
        if role == "assistant":
            message.update(provider="anthropic", model="claude-sonnet-4-5", stopReason="stop")
        lines.append(
            {"type": "message", "id": eid, "parentId": parent,
             "timestamp": stamp.format(i % 60), "message": message}
        )  # fmt: skip
        parent = eid
    data = "".join(json.dumps(line) + "\n" for line in lines).encode()
    return import_jsonl_stream(io.BytesIO(data), owner, filename="pi.jsonl").session


def test_an_imported_session_opens_on_its_messages_with_a_one_click_model_fix(page_for, make_user):
    owner = make_user("imported-opens")
    session = imported_long_session(owner)
    page = page_for(owner)
    errors = collect_errors(page)
    page.set_viewport_size({"width": 1280, "height": 800})
    page.goto(f"/s/{session.pi_id}/")
    page.wait_for_function("() => document.body.dataset.ws === 'open'", timeout=30000)
    # The last message is on screen, and the conversation holds most of the chat.
    last = page.locator("#chat-transcript .chat-msg", has_text="the very last words")
    expect(last).to_be_in_viewport()
    transcript = page.locator("#chat-transcript").bounding_box()
    chat = page.locator("#chat-panel").bounding_box()
    # (it was a third before issue 34: a tall folder form and a two-line picker row)
    assert transcript["height"] >= 0.45 * chat["height"], (transcript, chat)
    # The folder choice is there, compact, next to the composer (once you start to write).
    page.click("#chat-input")
    box = page.locator("#workspace-box").bounding_box()
    composer = page.locator("#chat-input").bounding_box()
    assert box["height"] <= 200, box
    assert 0 <= composer["y"] - (box["y"] + box["height"]) <= 120
    expect(page.locator("#workspace-problem")).to_contain_text(ELSEWHERE)
    # The model cannot run: said inline, with one button that fixes it.
    notice = page.locator("#chat-nomodel")
    expect(notice).to_contain_text("This model cannot run")
    expect(notice).to_be_in_viewport()
    fix = notice.locator("#chat-nomodel-fix")
    expect(fix).to_contain_text("Use openai-compatible/scripted")  # a model with a key here
    ref = fix.inner_text().strip().removeprefix("Use ")
    fix.click()
    expect(page.locator("#chat-notice")).to_contain_text(f"Model: {ref}")
    expect(page.locator("#chat-nomodel")).to_have_count(0, timeout=15000)
    assert errors == []
