"""The chat views (sessions_app/views/chat.py): who may send, queue, cancel, stop, compact
and switch the model, who may read the transcript and the run state, what a stop says when
Redis is away, and the HX-Trigger events the chat box's htmx answers carry."""

import pytest
from django.urls import reverse

from sessions_app.models import Job, QueuedMessage
from sessions_app.services import sessions
from tests.support.access import Call, each, login_redirects, post, statuses
from tests.support.web import client_for
from tests.support.workspaces import area_of

pytestmark = [pytest.mark.django_db]

READS = [
    Call("chat_transcript"),
    Call("chat_state"),
    Call("chat_queued"),
    Call("chat_model_notice"),
]
CHANGES = [
    post("chat_send", {"text": "hello"}),
    post("chat_stop"),
    post("chat_queue", {"text": "steer", "mode": "steer"}),
    post("chat_unqueue", {"item": "1"}),
    post("chat_model", {"profile": "scripted"}),
    post("chat_compact", {"focus": "the parser"}),
]


def test_it_requires_login(shared):
    assert login_redirects(READS + CHANGES, shared.session) == each(READS + CHANGES, "/login/")


def test_it_requires_a_share_of_the_session(shared):
    strangers = statuses(client_for(shared.stranger), READS + CHANGES, shared.session)
    assert strangers == each(READS + CHANGES, 404)
    assert statuses(client_for(shared.viewer), READS, shared.session) == each(READS, 200)


def test_it_requires_editor_rights_to_send_queue_stop_or_switch_the_model(shared):
    assert statuses(client_for(shared.viewer), CHANGES, shared.session) == each(CHANGES, 403)
    assert not Job.objects.filter(session=shared.session).exists()
    assert not QueuedMessage.objects.filter(session=shared.session).exists()
    assert not shared.session.jobs.filter(kind=Job.Kind.COMPACTION).exists()
    shared.session.refresh_from_db()
    assert shared.session.model_profile == "scripted"


def test_a_stop_with_redis_unreachable_is_a_clear_503(make_user, settings):
    owner = make_user()
    session = sessions.create_session(owner=owner, cwd=str(area_of(settings, owner)))
    Job.objects.create(
        session=session, kind=Job.Kind.AGENT_RUN, status=Job.Status.RUNNING, params={}
    )
    settings.REDIS_URL = "redis://127.0.0.1:1/0"  # nothing listens there
    response = client_for(owner).post(reverse("sessions_app:chat_stop", args=[session.pi_id]))
    assert response.status_code == 503
    assert "Could not reach Redis" in response.content.decode()


def test_only_editors_queue_and_cancel_and_viewers_see_the_queue_without_cancel(shared):
    session = shared.session
    Job.objects.create(session=session, kind=Job.Kind.AGENT_RUN, status=Job.Status.RUNNING)
    url = reverse("sessions_app:chat_queue", args=[session.pi_id])
    response = client_for(shared.editor).post(url, {"text": "look here", "mode": "follow_up"})
    assert response.status_code == 200 and "follow-up" in response.content.decode()
    item = QueuedMessage.objects.get(session=session)
    assert (item.mode, item.text, item.created_by) == ("follow_up", "look here", shared.editor)
    unqueue = reverse("sessions_app:chat_unqueue", args=[session.pi_id])
    assert client_for(shared.viewer).post(unqueue, {"item": item.pk}).status_code == 403
    listing = reverse("sessions_app:chat_queued", args=[session.pi_id])
    seen = client_for(shared.viewer).get(listing).content.decode()
    assert "look here" in seen and "queued-cancel" not in seen
    assert "queued-cancel" in client_for(shared.editor).get(listing).content.decode()
    assert client_for(shared.editor).post(unqueue, {"item": item.pk}).status_code == 200
    assert not QueuedMessage.objects.filter(session=session).exists()
    again = client_for(shared.editor).post(unqueue, {"item": item.pk})
    assert again.status_code == 409 and "already delivered or cancelled" in again.content.decode()
    garbled = client_for(shared.editor).post(unqueue, {"item": "two"})
    assert (
        garbled.status_code == 400 and "item: expected a whole number" in garbled.content.decode()
    )


def test_the_model_notice_says_when_the_model_cannot_run_and_goes_once_it_can(make_user, settings):
    owner = make_user()
    cwd = str(area_of(settings, owner))
    broken = sessions.create_session(owner=owner, cwd=cwd, model_profile="nothing-configured")
    working = sessions.create_session(owner=owner, cwd=cwd, model_profile="scripted")
    client = client_for(owner)
    answer = client.get(reverse("sessions_app:chat_model_notice", args=[broken.pi_id]))
    assert answer.status_code == 200 and 'id="chat-nomodel"' in answer.content.decode()
    answer = client.get(reverse("sessions_app:chat_model_notice", args=[working.pi_id]))
    assert answer.status_code == 200 and answer.content.decode().strip() == ""


def test_a_tool_call_is_one_card_with_status_duration_and_its_result_under_it(
    make_user, client_for, workspace
):
    """Issue 34: the transcript shows the bash call as `$ make test` with a success mark
    and how long it ran (the result came 1 s after the call), the result's first line
    under the call in the same card, and the call id only inside the folded call."""
    import re

    from tests.support.tree_data import import_branched

    owner = make_user("cards-owner")
    session = import_branched(owner, str(workspace))
    html = client_for(owner).get(reverse("sessions_app:chat_transcript", args=[session.pi_id]))
    html = html.content.decode()
    cards = re.findall(r'<div class="tool-card st-ok">.*?</details></div>', html, re.S)
    (card,) = [c for c in cards if "$ make test" in c]
    head = re.search(r"<summary class=\"tool-call-head\">.*?</summary>", card, re.S).group(0)
    assert '<code class="tool-headline">$ make test</code>' in head
    assert '<span class="tool-duration" title="How long the call ran">1.0 s</span>' in head
    assert 'aria-label="succeeded"' in head
    assert "call_b1" not in head and "call_b1" in card  # the id only in the details
    result = card[card.index('<details class="tool-result') :]
    assert '<code class="result-preview">ok &lt;img' in result  # escaped, first line
    # The result's own entry no longer repeats it as a separate message.
    assert 'data-entry-id="e0000013"' not in html


def test_the_cannot_run_notice_offers_an_editor_one_click_to_a_runnable_model(make_user, settings):
    """A session whose model nothing configures: the notice names a model that can run,
    as a button that posts the switch; a viewer sees the notice without the button."""
    from tests.support.web import share

    owner, viewer = make_user(), make_user()
    cwd = str(area_of(settings, owner))
    session = sessions.create_session(owner=owner, cwd=cwd, model_profile="nothing-configured")
    share(session, viewer, "viewer")
    url = reverse("sessions_app:chat_model_notice", args=[session.pi_id])
    html = client_for(owner).get(url).content.decode()
    assert 'id="chat-nomodel"' in html
    assert 'id="chat-nomodel-fix"' in html
    switch = reverse("sessions_app:chat_model", args=[session.pi_id])
    assert f'hx-post="{switch}"' in html
    assert "Use openai-compatible/scripted" in html
    seen = client_for(viewer).get(url).content.decode()
    assert 'id="chat-nomodel"' in seen and 'id="chat-nomodel-fix"' not in seen


def test_the_box_s_answers_say_what_changed_for_the_page(make_user, settings):
    """/compact is answered in the chat's notice (not the jobs panel's list) and says the
    job is queued; the model, thinking and /name answers carry the HX-Trigger events the
    page's header follows."""
    import json

    from sessions_app.selectors.paths import load_path

    owner = make_user()
    cwd = str(area_of(settings, owner))
    session = sessions.create_session(owner=owner, cwd=cwd, model_profile="scripted")
    sessions.append_entry(
        session,
        {"type": "message", "message": {"role": "user", "content": "hi", "timestamp": 1}},
        actor=owner,
    )
    client = client_for(owner)
    htmx = {"HTTP_HX_REQUEST": "true"}

    def url(name):
        return reverse(f"sessions_app:{name}", args=[session.pi_id])

    answer = client.post(url("chat_compact"), {"focus": "the parser"}, **htmx)
    html = answer.content.decode()
    assert answer.status_code == 200 and 'data-code="compaction_queued"' in html
    assert "Compaction queued, focused on: the parser" in html
    job = session.jobs.get(kind=Job.Kind.COMPACTION)
    assert json.loads(answer["HX-Trigger"]) == {
        "piweb:job-queued": {"job_id": str(job.pk), "kind": job.kind}
    }
    answer = client.post(url("chat_model"), {"profile": "scripted"}, **htmx)
    assert json.loads(answer["HX-Trigger"]) == {"piweb:model-switched": {"profile": "scripted"}}
    answer = client.post(url("chat_thinking"), {"level": "off"}, **htmx)
    assert json.loads(answer["HX-Trigger"]) == {"piweb:thinking-set": {"level": "off"}}
    answer = client.post(url("session_rename"), {"name": "  Parser hunt "}, **htmx)
    assert answer.status_code == 200 and "Renamed: Parser hunt" in answer.content.decode()
    assert json.loads(answer["HX-Trigger"]) == {"piweb:session-renamed": {"name": "Parser hunt"}}
    session.refresh_from_db()
    assert [e["type"] for e in load_path(session)][-1] == "session_info"
    # The header's plain form still goes back to the page.
    plain = client.post(url("session_rename"), {"name": "Again"})
    assert plain.status_code == 302
