"""services/provider_keys.py (and its reads, selectors/provider_keys.py): a user's own keys are stored encrypted (never in a database
dump), and a key that no longer decrypts counts as absent."""

import os
import subprocess

import pytest
from django.db import connection

from sessions_app.models import ProviderKey, Session
from sessions_app.selectors.provider_keys import user_key
from sessions_app.services import provider_keys

pytestmark = pytest.mark.django_db(transaction=True)


def test_no_plaintext_key_in_a_database_dump(make_user, tmp_path):
    user = make_user()
    secret = "sk-ant-PLAINTEXT-canary-7f3a9c"
    provider_keys.set_key(user, "anthropic", secret)
    row = ProviderKey.objects.get(user=user)
    assert secret.encode() not in bytes(row.encrypted_key)
    assert user_key(user, "anthropic") == secret
    db = connection.settings_dict
    if db["ENGINE"].endswith("sqlite3"):
        import sqlite3

        dump = "\n".join(sqlite3.connect(db["NAME"]).iterdump())
    else:
        env = dict(os.environ, PGPASSWORD=db.get("PASSWORD") or "")
        dump = subprocess.run(
            [
                "pg_dump",
                "-h", db.get("HOST") or "127.0.0.1",
                "-p", str(db.get("PORT") or 5432),
                *(["-U", db["USER"]] if db.get("USER") else []),
                "--data-only", db["NAME"],
            ],
            check=True, capture_output=True, text=True, env=env,
        ).stdout  # fmt: skip
        assert "sessions_app_providerkey" in dump
    assert secret not in dump
    assert "PLAINTEXT-canary" not in dump
    assert secret not in repr(row) and secret not in str(row)


def test_undecryptable_keys_count_as_absent(make_user, settings):
    user = make_user()
    provider_keys.set_key(user, "openai", "sk-openai-key-123456")
    settings.PIWEB_KEY_ENCRYPTION_KEY = "x" * 43 + "="  # another (valid) Fernet key
    assert user_key(user, "openai") is None
    assert Session.objects.count() >= 0
