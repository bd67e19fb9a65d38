"""Where a provider's key comes from for a user, in pi's order with the user's own key first
(see the package's doc), and the request headers that go with it. Keys never leave this
module in logs or pages: errors name the provider and the variable or command, never a
value.
"""

from __future__ import annotations

import functools
import logging
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings

from sessions_app.core import pi_config
from sessions_app.core.errors import ServiceError
from sessions_app.selectors import provider_keys

from .catalog import Catalog, auth_entries, builtin_catalog, catalog

log = logging.getLogger(__name__)

KEY_SOURCES = ("user-key", "endpoint", "pi-auth", "models.json", "env", "none")


KEY_SOURCE_LABELS = {
    "user-key": "your key",
    "endpoint": "the endpoint's key",
    "pi-auth": "pi auth.json",
    "models.json": "pi models.json",
    "env": "server environment",
    "none": "no key",
}


@dataclass(frozen=True)
class KeyStatus:
    """Whether a provider has a key for a user, from where; never the key."""

    source: str  # one of KEY_SOURCES
    detail: str = ""  # e.g. the variable's name, or why it is unavailable

    @property
    def available(self) -> bool:
        return self.source != "none"

    @property
    def label(self) -> str:
        text = KEY_SOURCE_LABELS[self.source]
        return f"{text} ({self.detail})" if self.detail else text


def may_use_server_keys(user) -> bool:
    if settings.PIWEB_SERVER_KEYS == "all":
        return True
    return bool(user is not None and getattr(user, "is_staff", False))


def _environ() -> dict[str, str]:
    return dict(os.environ)


def pi_binary() -> str | None:
    """A pi on the PATH whose ``auth`` command has ``print-api-key``, else None."""
    found = shutil.which("pi")
    return found if found and _has_print_api_key(found) else None


@functools.lru_cache(maxsize=4)
def _has_print_api_key(binary: str) -> bool:
    try:
        out = subprocess.run([binary, "auth", "--help"], capture_output=True, text=True, timeout=15)
    except (OSError, subprocess.SubprocessError):
        return False
    return "print-api-key" in (out.stdout + out.stderr)


def _oauth_key(provider: str) -> str | None:
    binary = pi_binary()
    if binary is None:
        return None
    env = _environ()
    if settings.PIWEB_PI_AGENT_DIR:
        env["PI_CODING_AGENT_DIR"] = str(Path(settings.PIWEB_PI_AGENT_DIR).expanduser())
    try:
        done = subprocess.run(
            [binary, "auth", "print-api-key", "--provider", provider],
            capture_output=True,
            text=True,
            timeout=30,
            env=env,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0:
        return None
    return done.stdout.strip() or None


def key_status(user, provider: str, *, cat: Catalog | None = None, user_keys=None) -> KeyStatus:
    """Where a provider's key would come from for this user (runs no command)."""
    keys = provider_keys.user_providers(user) if user_keys is None else user_keys
    if provider in keys:
        return KeyStatus("user-key")
    cat = cat or catalog()
    if provider in cat.endpoints:
        # An admin's endpoint is for everyone, with its key or none (a local server).
        return KeyStatus("endpoint", "" if cat.endpoints[provider] else "none needed")
    if not may_use_server_keys(user):
        return KeyStatus("none", "the server's keys are for staff only: add your own key")
    env = _environ()
    entry = auth_entries().get(provider)
    if entry is not None and entry.type == "api_key":
        return KeyStatus("pi-auth")
    oauth_reason = ""
    if entry is not None and entry.type == "oauth":
        if pi_binary() is not None:
            return KeyStatus("pi-auth", "OAuth via pi auth print-api-key")
        oauth_reason = (
            "pi auth.json has an OAuth login, but no pi with `pi auth print-api-key` is on the PATH"
        )
    request = cat.merged.requests.get(provider)
    if request is not None and request.api_key:
        if pi_config.is_configured(request.api_key, env):
            return KeyStatus("models.json")
    for name in builtin_catalog()[1].get(provider, ()):
        if env.get(name):
            return KeyStatus("env", name)
    if any(key[0] == provider for key in cat.env_profiles):
        return KeyStatus("env", "PIWEB_LLM / PIWEB_MODEL_PROFILES")
    return KeyStatus("none", oauth_reason)


class ModelUnavailable(ServiceError):
    """A model cannot be called; ``str(exc)`` is safe to show (names no key)."""

    status = 503
    code = "model_unavailable"


def resolve_key(user, model: dict[str, Any], cat: Catalog) -> tuple[str, str]:
    """(key, source) for a model's provider; raises ModelUnavailable."""
    provider = model["provider"]
    own = provider_keys.user_key(user, provider)
    if own:
        return own, "user-key"
    if provider in cat.endpoints:
        return _endpoint_key(model, cat.endpoints[provider])
    if not may_use_server_keys(user):
        raise ModelUnavailable(
            f"No API key for {provider}: add your own key on the Models page "
            "(the server's keys are for staff only)."
        )
    env = _environ()
    entry = auth_entries().get(provider)
    if entry is not None and entry.type == "api_key":
        value = pi_config.resolve_value(entry.key, {**env, **entry.env})
        if value:
            return value, "pi-auth"
        log.warning("pi auth.json: the key of %s did not resolve", provider)
    elif entry is not None and entry.type == "oauth":
        value = _oauth_key(provider)
        if value:
            return value, "pi-auth"
    request = cat.merged.requests.get(provider)
    if request is not None and request.api_key:
        value = pi_config.resolve_value(request.api_key, env)
        if value:
            return value, "models.json"
        raise ModelUnavailable(
            pi_config.describe_unresolved(
                request.api_key, f'API key for provider "{provider}"', env
            )
        )
    for name in builtin_catalog()[1].get(provider, ()):
        if env.get(name):
            return env[name], "env"
    profile = cat.env_profiles.get((provider, model["id"]))
    if profile is not None:
        return profile.api_key, "env"
    if entry is not None and entry.type == "oauth":
        raise ModelUnavailable(
            f"{provider}: pi's auth.json has an OAuth login, and no pi with "
            "`pi auth print-api-key` is on the PATH to turn it into a key."
        )
    raise ModelUnavailable(
        f"No API key for {provider}: add one on the Models page, or give the server one."
    )


def _endpoint_key(model: dict[str, Any], has_key: bool) -> tuple[str, str]:
    """The key of an endpoint added on the Models page. One stored with none is a local
    server: an OpenAI-compatible one gets a placeholder (its clients want a string), as an
    environment profile does; the other APIs need one."""
    provider = model["provider"]
    key = provider_keys.endpoint_key(provider) if has_key else None
    if key:
        return key, "endpoint"
    if has_key:
        raise ModelUnavailable(
            f"The key of the {provider} endpoint cannot be read (the server's secret "
            "changed?): an admin enters it again on the Models page."
        )
    if model["api"] == "openai-completions":
        return "not-needed", "endpoint"
    raise ModelUnavailable(
        f"The {provider} endpoint has no key: an admin adds one on the Models page, "
        "or add your own key for it."
    )


def request_headers(model: dict[str, Any], key: str, cat: Catalog) -> dict[str, str]:
    """pi's request headers: the model's, the provider's models.json headers, the
    model's models.json headers, then ``Authorization`` when ``authHeader`` is set."""
    env = _environ()
    provider = model["provider"]
    request = cat.merged.requests.get(provider)

    def resolved(headers: dict[str, str] | None, what: str) -> dict[str, str]:
        out = {}
        for name, value in (headers or {}).items():
            got = pi_config.resolve_value(value, env)
            if got is None:
                raise ModelUnavailable(
                    pi_config.describe_unresolved(value, f'{what} header "{name}"', env)
                )
            out[name] = got
        return out

    headers = {
        **(model.get("headers") or {}),
        **resolved(request.headers if request else None, f'provider "{provider}"'),
        **resolved(
            cat.merged.model_headers.get((provider, model["id"])),
            f'model "{provider}/{model["id"]}"',
        ),
    }
    if request is not None and request.auth_header:
        if not key:
            raise ModelUnavailable(f'No API key found for "{provider}"')
        headers["Authorization"] = f"Bearer {key}"
    return headers
