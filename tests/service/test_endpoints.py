"""services/endpoints.py with the catalog and the key resolution it feeds: an endpoint an
admin adds is in everyone's catalog (built as models.json's custom providers), its key is
stored encrypted and used for everyone after a user's own key, and only admins change
endpoints."""

import pytest

from sessions_app.core.errors import Forbidden
from sessions_app.models import ModelEndpoint
from sessions_app.selectors.llm.catalog import catalog, find_model
from sessions_app.selectors.llm.keys import ModelUnavailable, key_status
from sessions_app.selectors.llm.resolution import all_models, available_models, resolve_model
from sessions_app.services import endpoints, provider_keys
from tests.support.pi_agent_dir import empty_agent_dir, write

pytestmark = pytest.mark.django_db(transaction=True)

KEY = "sk-endpoint-service-9876"


@pytest.fixture
def agent(tmp_path, settings, monkeypatch):
    return empty_agent_dir(tmp_path, settings, monkeypatch)


@pytest.fixture
def admin(make_user):
    return make_user("endpoints-admin", is_staff=True)


def _save(admin, provider="office", api="openai-completions", key=KEY, models=None):
    return endpoints.save_endpoint(
        admin,
        provider,
        api,
        "http://127.0.0.1:11434/v1/",
        models or "office-model, 64k, 2048, 1, 2\noffice-small",
        key,
    )


def test_an_endpoint_is_in_everyones_catalog_with_its_window_and_price(agent, admin, make_user):
    _save(admin)
    model = find_model("office", "office-model")
    assert model == {
        "id": "office-model",
        "name": "office-model",
        "api": "openai-completions",
        "provider": "office",
        "baseUrl": "http://127.0.0.1:11434/v1",
        "reasoning": False,
        "input": ["text"],
        "cost": {"input": 1.0, "output": 2.0, "cacheRead": 0, "cacheWrite": 0},
        "contextWindow": 64_000,
        "maxTokens": 2048,
    }
    # What models.json gives a model it leaves a number out of.
    assert find_model("office", "office-small")["contextWindow"] == 128_000
    user = make_user()
    choices = {c.ref: c for c in available_models(user)}
    assert choices["office/office-model"].source == "endpoint"
    assert choices["office/office-model"].key.label == "the endpoint's key"
    assert choices["office/office-model"].label == "office-model · 64k · $1 in / $2 out per M"


def test_the_key_is_stored_encrypted_used_for_everyone_after_a_users_own(
    agent, admin, make_user, settings
):
    row = _save(admin)
    assert KEY.encode() not in bytes(row.encrypted_key) and row.hint == "9876"
    settings.PIWEB_SERVER_KEYS = "staff"  # the server's keys are staff-only; this one is not
    user = make_user()
    resolved = resolve_model(user, "office", "office-model")
    assert (resolved.api_key, resolved.key_source) == (KEY, "endpoint")
    provider_keys.set_key(user, "office", "sk-users-own-office-key")
    resolved = resolve_model(user, "office", "office-model")
    assert (resolved.api_key, resolved.key_source) == ("sk-users-own-office-key", "user-key")
    # Saved again with no key: the stored one stays; with one: replaced.
    _save(admin, key="", models="office-model")
    assert resolve_model(make_user(), "office", "office-model").api_key == KEY
    assert find_model("office", "office-small") is None
    _save(admin, key="sk-a-second-endpoint-key")
    assert resolve_model(make_user(), "office", "office-model").api_key == (
        "sk-a-second-endpoint-key"
    )


def test_an_endpoint_without_a_key(agent, admin, make_user):
    _save(admin, key="")
    user = make_user()
    assert key_status(user, "office").label == "the endpoint's key (none needed)"
    resolved = resolve_model(user, "office", "office-model")
    assert (resolved.api_key, resolved.key_source) == ("not-needed", "endpoint")
    _save(admin, provider="claude-proxy", api="anthropic-messages", key="")
    with pytest.raises(ModelUnavailable, match="The claude-proxy endpoint has no key"):
        resolve_model(user, "claude-proxy", "office-model")


def test_an_unreadable_key_is_refused_not_sent(agent, admin, make_user):
    _save(admin)
    ModelEndpoint.objects.filter(provider="office").update(encrypted_key=b"not a fernet token")
    with pytest.raises(ModelUnavailable, match="cannot be read"):
        resolve_model(make_user(), "office", "office-model")


def test_google_and_anthropic_endpoints_speak_their_api(agent, admin):
    _save(admin, provider="gemini-proxy", api="google-generative-ai")
    _save(admin, provider="claude-proxy", api="anthropic-messages")
    assert find_model("gemini-proxy", "office-model")["api"] == "google-generative-ai"
    assert find_model("claude-proxy", "office-model")["api"] == "anthropic-messages"


def test_removed_endpoints_leave_the_catalog(agent, admin, make_user):
    _save(admin)
    assert endpoints.delete_endpoint(admin, "office")
    assert find_model("office", "office-model") is None
    assert not endpoints.delete_endpoint(admin, "office")
    assert not any(c.provider == "office" for c in all_models(make_user()))


@pytest.mark.parametrize(
    ("provider", "api", "base_url", "says"),
    [
        ("Bad Name!", "openai-completions", "http://x/v1", "Choose a provider"),
        ("anthropic", "anthropic-messages", "http://x/v1", "already a provider"),
        ("scripted-cloud", "openai-completions", "http://x/v1", "already a provider"),
        ("mine", "openai-responses", "http://x/v1", "Choose the API"),
        ("mine", "openai-completions", "file:///etc/passwd", "http:// or https://"),
        ("mine", "openai-completions", "javascript:alert(1)", "http:// or https://"),
    ],
)
def test_refusals(agent, admin, provider, api, base_url, says):
    with pytest.raises(endpoints.EndpointError, match=says):
        endpoints.save_endpoint(admin, provider, api, base_url, "m", "")
    assert not ModelEndpoint.objects.exists()


def test_a_models_json_provider_name_is_taken(agent, admin):
    write(
        agent / "models.json",
        {
            "providers": {
                "ollama": {
                    "baseUrl": "http://127.0.0.1:11434/v1",
                    "api": "openai-completions",
                    "models": [{"id": "llama"}],
                }
            }
        },
    )
    assert catalog().source(find_model("ollama", "llama")) == "models.json"
    with pytest.raises(endpoints.EndpointError, match="already a provider"):
        _save(admin, provider="ollama")


def test_only_admins_change_endpoints(agent, admin, make_user, settings):
    user = make_user()
    with pytest.raises(Forbidden):
        _save(user)
    _save(admin)
    with pytest.raises(Forbidden):
        endpoints.delete_endpoint(user, "office")
    assert ModelEndpoint.objects.count() == 1
    # In single-user mode the user is the admin.
    settings.PIWEB_WORKSPACE_MODE = "single-user"
    assert endpoints.delete_endpoint(user, "office")
