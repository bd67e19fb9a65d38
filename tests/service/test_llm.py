"""services/llm.py: a user's default model and thinking level, and the Models page's test
request against the scripted OpenAI-compatible server through the real SDK."""

import pytest

from sessions_app.models import ModelPreference
from sessions_app.services import llm
from tests.support.scripted_llm import error, text

pytestmark = pytest.mark.django_db

SCRIPTED = "openai-compatible/scripted-model"


@pytest.fixture
def scripted(llm_server):
    """The scripted model server, emptied for this test (the module name `llm` is ours)."""
    llm_server.reset()
    yield llm_server
    llm_server.reset()


def test_a_default_is_stored_changed_and_cleared(make_user):
    user = make_user()
    llm.set_default(user, SCRIPTED, "high")
    stored = ModelPreference.objects.get(user=user)
    assert (stored.provider, stored.model_id, stored.thinking_level) == (
        "openai-compatible",
        "scripted-model",
        "high",
    )
    llm.set_default(user, "", "")
    stored.refresh_from_db()
    assert (stored.provider, stored.model_id, stored.thinking_level) == ("", "", "")
    assert ModelPreference.objects.filter(user=user).count() == 1


@pytest.mark.parametrize(
    ("ref", "level", "said"),
    [
        ("nobody/none", "", "Unknown model: nobody/none."),
        ("openai-compatible", "", "Unknown model: openai-compatible."),
        (SCRIPTED, "extreme", "Unknown thinking level: extreme."),
    ],
)
def test_an_unknown_model_or_level_is_refused_and_nothing_is_stored(make_user, ref, level, said):
    user = make_user()
    with pytest.raises(llm.ChoiceError) as refused:
        llm.set_default(user, ref, level)
    assert str(refused.value) == said and refused.value.status == 400
    assert not ModelPreference.objects.filter(user=user).exists()


def test_a_test_request_names_the_model_and_key_source_never_the_key(make_user, scripted):
    staff = make_user(is_staff=True)  # the server's keys serve staff only
    scripted.push(text("ok"))
    ok, message = llm.try_model(staff, SCRIPTED)
    assert ok and message.startswith(f"{SCRIPTED} answered 'ok' in ")
    assert "server environment" in message and "test-key-not-secret" not in message
    sent = scripted.requests[-1]
    assert sent["model"] == "scripted-model"
    assert sent["messages"][-1]["content"][0]["text"] == llm.TEST_PROMPT


def test_a_test_reply_on_several_lines_reads_as_one_line(make_user, scripted):
    """The reply is shown in words, never as a Python repr with a literal backslash-n."""
    scripted.push(text("ok\n\n  fine\n"))
    ok, message = llm.try_model(make_user(is_staff=True), SCRIPTED)
    assert ok and message.startswith(f"{SCRIPTED} answered 'ok fine' in ")
    assert "\\n" not in message


def test_a_failing_test_request_says_why_without_the_key(make_user, scripted):
    staff = make_user(is_staff=True)
    scripted.push(error(401, "bad key test-key-not-secret"))
    ok, message = llm.try_model(staff, SCRIPTED)
    assert not ok and message.startswith(f"{SCRIPTED} (server environment): ")
    assert "test-key-not-secret" not in message and "***" in message


def test_a_model_nobody_can_call_is_a_failed_test(make_user):
    ok, message = llm.try_model(make_user(), "nobody/none")
    assert not ok and message
