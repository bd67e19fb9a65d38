"""The Models page's views (sessions_app/views/models.py): login, methods, and what each
form does and says back (a key saved, replaced or removed, a default refused)."""

import pytest
from django.contrib.messages import get_messages
from django.urls import reverse

from sessions_app.models import ProviderKey
from tests.support.web import client_for

pytestmark = [pytest.mark.django_db]

FORMS = ["models_key", "models_key_remove", "models_test", "models_default"]


def said(response) -> list[str]:
    return [str(message) for message in get_messages(response.wsgi_request)]


def post(client, name, data):
    return client.post(reverse(f"sessions_app:{name}"), data, follow=True)


def test_every_models_route_requires_login(client):
    for name in ["models_page", *FORMS]:
        response = client.get(reverse(f"sessions_app:{name}"))
        assert response.status_code == 302 and response["Location"].startswith("/login/"), name


def test_the_forms_take_only_posts(make_user):
    client = client_for(make_user())
    assert {name: client.get(reverse(f"sessions_app:{name}")).status_code for name in FORMS} == (
        dict.fromkeys(FORMS, 405)
    )


def test_a_key_is_saved_replaced_and_removed_and_never_shown_back(make_user):
    user = make_user()
    client = client_for(user)
    secret = "sk-views-test-0123456789abcd"
    saved = post(client, "models_key", {"provider": " OpenAI ", "key": secret})
    assert said(saved) == ["Saved your key for openai."]
    assert secret not in saved.content.decode() and "abcd" in saved.content.decode()
    row = ProviderKey.objects.get(user=user, provider="openai")
    assert secret.encode() not in bytes(row.encrypted_key)
    post(client, "models_key", {"provider": "openai", "key": secret[:-4] + "wxyz"})
    assert ProviderKey.objects.get(user=user, provider="openai").hint.endswith("wxyz")
    removed = post(client, "models_key_remove", {"provider": "openai"})
    assert said(removed) == ["Removed your key for openai."]
    assert not ProviderKey.objects.filter(user=user).exists()
    again = post(client, "models_key_remove", {"provider": "openai"})
    assert said(again) == ["You have no key for openai."]


def test_a_bad_key_or_provider_is_a_message_and_nothing_is_stored(make_user):
    user = make_user()
    client = client_for(user)
    assert said(post(client, "models_key", {"provider": "openai", "key": "  "})) == [
        "Paste the API key."
    ]
    refused = said(post(client, "models_key", {"provider": "a b/c", "key": "sk-1"}))
    assert refused and refused[0].startswith("Choose a provider")
    assert not ProviderKey.objects.filter(user=user).exists()


def test_an_unknown_default_model_is_refused_and_an_unknown_test_model_fails(make_user):
    client = client_for(make_user())
    refused = said(post(client, "models_default", {"model": "nobody/none", "thinking": "off"}))
    assert len(refused) == 1 and "Saved" not in refused[0]
    failed = said(post(client, "models_test", {"model": "nobody/none"}))
    assert len(failed) == 1 and failed[0].startswith("Test failed: ")


def test_an_admin_saves_and_removes_an_endpoint_and_mistakes_are_said(make_user):
    admin = client_for(make_user(is_staff=True))
    response = post(
        admin,
        "models_endpoint",
        {
            "provider": "office",
            "api": "openai-completions",
            "base_url": "http://127.0.0.1:11434/v1",
            "models": "office-model, 32k",
            "key": "sk-a-view-endpoint-key-1234",
        },
    )
    assert said(response) == ["Saved the endpoint office: 1 model, for everyone."]
    page = response.content.decode()
    assert 'data-endpoint="office"' in page and "sk-a-view-endpoint-key-1234" not in page
    assert "stored (…1234)" in page
    response = post(
        admin, "models_endpoint", {"provider": "office", "api": "x", "base_url": "", "models": ""}
    )
    assert said(response) == ["Choose the API the endpoint speaks."]
    response = post(admin, "models_endpoint_remove", {"provider": "office"})
    assert said(response) == ["Removed the endpoint office."]
    response = post(admin, "models_endpoint_remove", {"provider": "office"})
    assert said(response) == ["There is no endpoint office."]
