"""selectors/llm/keys.py with a real pi agent folder on disk: the key resolution order (the
user's own key, auth.json, models.json, the environment), $VAR and !command values, OAuth
entries through `pi auth print-api-key`, the server's keys kept to staff."""

import stat

import pytest

from sessions_app.selectors.llm.catalog import (
    catalog,
)
from sessions_app.selectors.llm.keys import ModelUnavailable, key_status
from sessions_app.selectors.llm.resolution import resolve_model
from sessions_app.services import provider_keys
from tests.support.pi_agent_dir import empty_agent_dir, write

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def agent(tmp_path, settings, monkeypatch):
    return empty_agent_dir(tmp_path, settings, monkeypatch)


def key_of(user, provider="anthropic", model="claude-haiku-4-5"):
    resolved = resolve_model(user, provider, model)
    return resolved.api_key, resolved.key_source


def test_key_resolution_order(agent, make_user, monkeypatch):
    user = make_user()
    with pytest.raises(ModelUnavailable, match="No API key for anthropic"):
        key_of(user)
    assert key_status(user, "anthropic").source == "none"

    monkeypatch.setenv("ANTHROPIC_API_KEY", "from-env")
    assert key_of(user) == ("from-env", "env")
    assert key_status(user, "anthropic").label == "server environment (ANTHROPIC_API_KEY)"
    # pi reads ANTHROPIC_OAUTH_TOKEN before ANTHROPIC_API_KEY.
    monkeypatch.setenv("ANTHROPIC_OAUTH_TOKEN", "from-oauth-env")
    assert key_of(user) == ("from-oauth-env", "env")

    # pi refuses a provider entry with only an apiKey (it needs baseUrl, headers, compat,
    # modelOverrides or models): the file is then ignored, with an error.
    write(agent / "models.json", {"providers": {"anthropic": {"apiKey": "from-models-json"}}})
    assert key_of(user) == ("from-oauth-env", "env")
    assert "must specify" in catalog().error
    write(
        agent / "models.json",
        {
            "providers": {
                "anthropic": {"apiKey": "from-models-json", "baseUrl": "https://api.anthropic.com"}
            }
        },
    )
    assert key_of(user) == ("from-models-json", "models.json")

    write(agent / "auth.json", {"anthropic": {"type": "api_key", "key": "from-auth-json"}})
    assert key_of(user) == ("from-auth-json", "pi-auth")

    provider_keys.set_key(user, "anthropic", "sk-ant-own-key-0001")
    assert key_of(user) == ("sk-ant-own-key-0001", "user-key")
    # Another user still gets the server's key.
    assert key_of(make_user()) == ("from-auth-json", "pi-auth")
    provider_keys.remove_key(user, "anthropic")
    assert key_of(user) == ("from-auth-json", "pi-auth")


def test_auth_json_values_variables_and_commands(agent, make_user, monkeypatch):
    user = make_user()
    monkeypatch.setenv("MY_ANTHROPIC", "via-variable")
    write(agent / "auth.json", {"anthropic": {"type": "api_key", "key": "${MY_ANTHROPIC}"}})
    assert key_of(user) == ("via-variable", "pi-auth")
    write(agent / "auth.json", {"anthropic": {"type": "api_key", "key": "!echo via-command"}})
    assert key_of(user) == ("via-command", "pi-auth")
    write(agent / "auth.json", {"anthropic": {"type": "api_key", "key": "literal-key"}})
    assert key_of(user) == ("literal-key", "pi-auth")


def test_models_json_unresolved_key_names_the_variable_not_a_value(agent, make_user):
    write(
        agent / "models.json",
        {
            "providers": {
                "anthropic": {"apiKey": "$NOT_SET_ANYWHERE", "baseUrl": "https://x.example"}
            }
        },
    )
    with pytest.raises(ModelUnavailable) as caught:
        key_of(make_user())
    assert "NOT_SET_ANYWHERE" in str(caught.value)


def test_oauth_without_pi_is_unavailable_with_reason(agent, make_user, monkeypatch, tmp_path):
    empty = tmp_path / "emptybin"
    empty.mkdir()
    monkeypatch.setenv("PATH", f"{empty}:/usr/bin:/bin")
    write(
        agent / "auth.json",
        {"anthropic": {"type": "oauth", "access": "a", "refresh": "r", "expires": 1}},
    )
    status = key_status(make_user(), "anthropic")
    assert status.source == "none" and "pi auth print-api-key" in status.detail
    with pytest.raises(ModelUnavailable, match="OAuth"):
        key_of(make_user())


def test_oauth_through_pi_auth_print_api_key(agent, make_user, monkeypatch, tmp_path):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    pi = bindir / "pi"
    pi.write_text(
        "#!/bin/sh\n"
        'if [ "$2" = "--help" ]; then echo "pi auth print-api-key [--provider <p>]"; exit 0; fi\n'
        'if [ "$2" = "print-api-key" ] && [ "$4" = "anthropic" ]; then echo "oauth-access-$PI_CODING_AGENT_DIR"; exit 0; fi\n'
        "exit 1\n"
    )
    pi.chmod(pi.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bindir}:/usr/bin:/bin")
    write(
        agent / "auth.json",
        {"anthropic": {"type": "oauth", "access": "a", "refresh": "r", "expires": 1}},
    )
    assert key_status(make_user(), "anthropic").source == "pi-auth"
    assert key_of(make_user()) == (f"oauth-access-{agent}", "pi-auth")


def test_server_keys_for_staff_only(agent, make_user, monkeypatch, settings):
    settings.PIWEB_SERVER_KEYS = "staff"
    monkeypatch.setenv("ANTHROPIC_API_KEY", "server-key")
    with pytest.raises(ModelUnavailable, match="Models page"):
        key_of(make_user())
    assert key_of(make_user(is_staff=True)) == ("server-key", "env")
    someone = make_user()
    provider_keys.set_key(someone, "anthropic", "sk-their-own-key-1")
    assert key_of(someone) == ("sk-their-own-key-1", "user-key")
