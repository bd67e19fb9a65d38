"""selectors/provider_keys.py: users' keys and endpoints' keys decrypted for the one caller
that makes a request; a key the secret no longer opens is absent, never an error."""

import pytest

from sessions_app.models import ModelEndpoint, ProviderKey
from sessions_app.selectors.provider_keys import endpoint_key, user_key, user_providers
from sessions_app.services import endpoints, provider_keys

pytestmark = pytest.mark.django_db


def test_a_users_key(make_user):
    user, other = make_user(), make_user()
    provider_keys.set_key(user, "openai", "sk-selector-test-key-0007")
    assert user_key(user, "openai") == "sk-selector-test-key-0007"
    assert user_key(other, "openai") is None and user_key(None, "openai") is None
    assert user_providers(user) == {"openai": "0007"}
    ProviderKey.objects.filter(user=user).update(encrypted_key=b"garbage")
    assert user_key(user, "openai") is None


def test_an_endpoints_key(make_user):
    admin = make_user(is_staff=True)
    endpoints.save_endpoint(
        admin, "office", "openai-completions", "http://127.0.0.1:9/v1", "m", "sk-endpoint-77"
    )
    endpoints.save_endpoint(admin, "keyless", "openai-completions", "http://127.0.0.1:9/v1", "m")
    assert endpoint_key("office") == "sk-endpoint-77"
    assert endpoint_key("keyless") is None and endpoint_key("nothing") is None
    ModelEndpoint.objects.filter(provider="office").update(encrypted_key=b"garbage")
    assert endpoint_key("office") is None
