"""manage.py models, run as a user runs it: where each key comes from, never the key."""

import json

import pytest
from django.core.management.base import CommandError

from sessions_app.services import provider_keys
from tests.support.commands import empty_agent_dir, run

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("tasks_stay_in_process"),
]


@pytest.fixture
def agent(tmp_path, settings, monkeypatch):
    return empty_agent_dir(tmp_path, settings, monkeypatch)


def test_models_lists_key_sources_and_never_a_key(agent, make_user, monkeypatch):
    user = make_user()
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env-openai-secret")
    provider_keys.set_key(user, "anthropic", "sk-ant-user-secret-99")
    rows = json.loads(run("models", "--json", "--user", user.username))
    by_ref = {f"{r['provider']}/{r['id']}": r for r in rows}
    haiku = by_ref["anthropic/claude-haiku-4-5"]
    assert haiku["keySource"] == "user-key"
    assert (haiku["contextWindow"], haiku["maxTokens"], haiku["reasoning"]) == (200000, 64000, True)
    assert (haiku["inputPerM"], haiku["outputPerM"]) == (1, 5)
    assert by_ref["openai/gpt-4o"]["keySource"] == "env"
    assert by_ref["openai-compatible/scripted-model"]["keySource"] == "env"
    # Without --user only the server's keys count.
    assert not any(r["provider"] == "anthropic" for r in json.loads(run("models", "--json")))
    table = run("models", "--user", user.username)
    assert "anthropic/claude-haiku-4-5" in table and "your key" in table
    assert "OPENAI_API_KEY" in table
    for output in (table, json.dumps(rows)):
        assert "sk-env-openai-secret" not in output and "sk-ant-user-secret-99" not in output
    with pytest.raises(CommandError):
        run("models", "--user", "nobody-by-that-name")
