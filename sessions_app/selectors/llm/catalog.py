"""Every model piweb knows and where it came from (see the package's doc): pi's built-in
list, the ``models.json`` of pi's agent folder (re-read when it changes), the endpoints an
admin added on the Models page (``ModelEndpoint``, built as models.json's custom
providers are), the environment profiles (``PIWEB_LLM_*``, ``PIWEB_MODEL_PROFILES``); pi's ``settings.json`` and
``auth.json`` read from the same folder; a message priced from the catalog; the user's
default model and thinking level.
"""

from __future__ import annotations

import functools
import json
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.conf import settings

from sessions_app.agent.providers import APIS
from sessions_app.agent.providers.base import ResolvedModel
from sessions_app.core import pi_config
from sessions_app.core.costs import calculate_cost
from sessions_app.core.pi_config import (
    THINKING_LEVELS,
    MergedModels,
    PiSettings,
    ProjectSettings,
    WatchedJson,
)
from sessions_app.core.shipped import read_shipped
from sessions_app.models import ModelEndpoint, ModelPreference

DEFAULT_PROFILE = "default"


CATALOG_FILE = "sessions_app/data/pi_models.json"


# APIs piweb can call: those the providers package speaks.
CALLABLE_APIS = APIS


HOW_TO_CONFIGURE = (
    "No model is configured. Add your API key on the Models page (/models/), or give the "
    "server one: pi's ~/.pi/agent (PIWEB_PI_AGENT_DIR), a provider variable such as "
    "ANTHROPIC_API_KEY or OPENAI_API_KEY, or PIWEB_LLM_BASE_URL + PIWEB_LLM_MODEL for an "
    "OpenAI-compatible endpoint (Ollama: http://127.0.0.1:11434/v1). Until then `!cmd`, the "
    "tree, import, fork and offline summaries all work."
)


@dataclass(frozen=True)
class ModelProfile:
    name: str
    base_url: str
    model: str
    api_key: str = field(repr=False)
    context_window: int
    max_output: int
    timeout: float
    provider: str
    tools: tuple[str, ...] = ()  # the agent's tools ("": pi's default set)
    # The profile's JSON spec: ``api`` (default openai-completions) and pi Model fields
    # (reasoning, input, cost, headers, compat, thinkingLevelMap, name) as they are.
    spec: dict = field(default_factory=dict, repr=False, compare=False)

    @property
    def label(self) -> str:
        return f"{self.name}: {self.model}"

    @property
    def api(self) -> str:
        return self.spec.get("api") or "openai-completions"

    def as_model(self) -> dict[str, Any]:
        """This profile as a catalog entry, in pi's Model shape."""
        cost = self.spec.get("cost") or {}
        model = {
            "id": self.model,
            "name": self.spec.get("name") or self.name,
            "api": self.api,
            "provider": self.provider,
            "baseUrl": self.base_url,
            "reasoning": bool(self.spec.get("reasoning", False)),
            "input": list(self.spec.get("input") or ["text"]),
            "cost": {**pi_config.ZERO_COST, **cost},
            "contextWindow": self.context_window,
            "maxTokens": self.max_output,
        }
        for key in _PASSED_MODEL_FIELDS:
            if key in self.spec:
                model[key] = self.spec[key]
        return model

    def resolved(self) -> ResolvedModel:
        """This profile as the model the provider modules call, with its own key."""
        # A local OpenAI-compatible server often wants no key at all; the other APIs
        # get none, so that the request fails with an auth error naming the provider.
        key = self.api_key or ("not-needed" if self.api == "openai-completions" else "")
        return ResolvedModel(
            model=self.as_model(),
            api_key=key,
            key_source="env" if self.api_key else "none",
            timeout=self.timeout,
        )


def _profile(name: str, spec: dict) -> ModelProfile:
    """A profile from its JSON spec; what it leaves out comes from the PIWEB_LLM_* settings."""
    return ModelProfile(
        name=name,
        base_url=spec["base_url"],
        model=spec["model"],
        api_key=spec.get("api_key", ""),
        context_window=int(spec.get("context_window") or settings.PIWEB_LLM_CONTEXT_WINDOW),
        max_output=int(spec.get("max_output", settings.PIWEB_LLM_MAX_OUTPUT)),
        timeout=float(spec.get("timeout", settings.PIWEB_LLM_TIMEOUT)),
        provider=spec.get("provider", "openai-compatible"),
        tools=_tool_names(spec.get("tools")),
        spec=spec,
    )


_PASSED_MODEL_FIELDS = ("headers", "compat", "thinkingLevelMap")


def _tool_names(value) -> tuple[str, ...]:
    """A profile's ``tools``: a list of names or a comma-separated string (pi's --tools)."""
    if isinstance(value, str):
        value = value.split(",")
    return tuple(str(v).strip() for v in value or () if str(v).strip())


def model_profiles() -> dict[str, ModelProfile]:
    """Every environment profile by name, read at call time (settings may change in tests):
    the default one from the PIWEB_LLM_* settings, then those of PIWEB_MODEL_PROFILES."""
    specs: dict[str, dict] = {}
    if settings.PIWEB_LLM_BASE_URL and settings.PIWEB_LLM_MODEL:
        specs[DEFAULT_PROFILE] = {
            "base_url": settings.PIWEB_LLM_BASE_URL,
            "model": settings.PIWEB_LLM_MODEL,
            "api_key": settings.PIWEB_LLM_API_KEY,
        }
    specs.update(json.loads(settings.PIWEB_MODEL_PROFILES_JSON or "{}"))
    return {name: _profile(name, spec) for name, spec in specs.items()}


def resolve_profile(name: str | None) -> ModelProfile | None:
    """The environment profile a session names, or None."""
    return model_profiles().get(name or DEFAULT_PROFILE)


@functools.cache
def builtin_catalog() -> tuple[tuple[dict[str, Any], ...], dict[str, tuple[str, ...]]]:
    """pi's built-in models and, per provider, the variables pi reads its key from."""
    data = json.loads(read_shipped(CATALOG_FILE).decode("utf-8"))
    models: list[dict] = []
    env_keys: dict[str, tuple[str, ...]] = {}
    for provider, entry in data["providers"].items():
        models.extend(entry["models"])
        if entry.get("envKeys"):
            env_keys[provider] = tuple(entry["envKeys"])
    return tuple(models), env_keys


class _AgentDir:
    """pi's agent folder: its three files, each re-read when it changes."""

    def __init__(self, path: str):
        self.path = Path(path).expanduser() if path else None
        base = self.path or Path("/nonexistent-piweb-agent-dir")
        self.models = WatchedJson(base / "models.json", comments=True)
        self.auth = WatchedJson(base / "auth.json")
        self.settings = WatchedJson(base / "settings.json", comments=True)
        self._merge_lock = threading.Lock()
        self._merged_for: tuple | None = None
        self._merged: MergedModels | None = None

    def merged(self) -> MergedModels:
        data, error = self.models.read()
        key = (id(data), error)
        with self._merge_lock:
            if self._merged is None or self._merged_for != key:
                self._merged = pi_config.merge_models(list(builtin_catalog()[0]), data, error)
                self._merged_for = key
            return self._merged


_agent_dirs: dict[str, _AgentDir] = {}


_agent_dirs_lock = threading.Lock()


def agent_dir() -> _AgentDir:
    path = settings.PIWEB_PI_AGENT_DIR or ""
    with _agent_dirs_lock:
        if path not in _agent_dirs:
            _agent_dirs[path] = _AgentDir(path)
        return _agent_dirs[path]


def pi_settings() -> PiSettings:
    data, error = agent_dir().settings.read()
    return PiSettings.parse(data, error)


def auth_entries() -> dict[str, pi_config.AuthEntry]:
    data, _error = agent_dir().auth.read()
    return pi_config.parse_auth(data)


@dataclass
class Catalog:
    """Every model piweb knows, with where each came from."""

    merged: MergedModels
    env_profiles: dict[tuple[str, str], ModelProfile]
    # Providers added on the Models page: whether each has a key stored.
    endpoints: dict[str, bool] = field(default_factory=dict)

    @property
    def models(self) -> list[dict[str, Any]]:
        return self.merged.models

    @property
    def error(self) -> str | None:
        return self.merged.error

    def find(self, provider: str | None, model_id: str | None) -> dict[str, Any] | None:
        if not provider or not model_id:
            return None
        return self.merged.find(provider, model_id)

    def source(self, model: dict[str, Any]) -> str:
        key = (model["provider"], model["id"])
        if key in self.env_profiles:
            return "env"
        if model["provider"] in self.endpoints:
            return "endpoint"
        return "models.json" if key in self.merged.custom else "pi"


def endpoint(provider: str) -> ModelEndpoint | None:
    """The endpoint added on the Models page for `provider`, or None."""
    return ModelEndpoint.objects.filter(provider=provider).first()


def endpoint_rows() -> list[dict[str, Any]]:
    """The endpoints added on the Models page, by provider (never their key)."""
    rows = ModelEndpoint.objects.order_by("provider").values(
        "pk", "provider", "api", "base_url", "model_list", "hint", "encrypted_key"
    )
    out: list[dict[str, Any]] = []
    for row in rows:
        plain: dict[str, Any] = dict(row)
        plain["has_key"] = bool(plain.pop("encrypted_key"))
        out.append(plain)
    return out


def _add(merged: MergedModels, index: dict, model: dict[str, Any]) -> tuple[str, str]:
    key = (model["provider"], model["id"])
    if key in index:
        merged.models[index[key]] = model
    else:
        index[key] = len(merged.models)
        merged.models.append(model)
    return key


def catalog() -> Catalog:
    """The merged catalog: pi's models, models.json, the Models page's endpoints, then the
    environment profiles."""
    base = agent_dir().merged()
    profiles = model_profiles()
    rows = endpoint_rows()
    if not profiles and not rows:
        return Catalog(base, {})
    merged = MergedModels(
        list(base.models),
        requests=base.requests,
        model_headers=base.model_headers,
        error=base.error,
        custom=set(base.custom),
    )
    index = {(m["provider"], m["id"]): i for i, m in enumerate(merged.models)}
    endpoints: dict[str, bool] = {}
    for row in rows:
        provider = pi_config.endpoint_provider(row["api"], row["base_url"], row["model_list"])
        for model in pi_config.endpoint_models(row["provider"], provider):
            _add(merged, index, model)
        endpoints[row["provider"]] = row["has_key"]
    env: dict[tuple[str, str], ModelProfile] = {}
    for profile in profiles.values():
        env[_add(merged, index, profile.as_model())] = profile
    return Catalog(merged, env, endpoints)


def find_model(provider: str | None, model_id: str | None) -> dict[str, Any] | None:
    return catalog().find(provider, model_id)


def price_message(message: dict[str, Any]) -> dict[str, Any]:
    """Fill an assistant message's ``usage.cost`` from the catalog price of the model it
    names (pi's calculateCost); a model the catalog does not know keeps its cost."""
    usage = message.get("usage")
    if message.get("role") != "assistant" or not isinstance(usage, dict):
        return message
    model = find_model(message.get("provider"), message.get("model"))
    if model is not None:
        calculate_cost(model, usage)
    return message


def _pref(user):
    if user is None or not getattr(user, "pk", None):
        return None
    return ModelPreference.objects.filter(user=user).first()


def default_model_ref(user, project: ProjectSettings | None = None) -> tuple[str, str] | None:
    """The user's default model: the one a project's own settings name (`project`: see
    `project_settings`), else their choice on the Models page, else pi's settings.json,
    else the PIWEB_LLM_* default profile."""
    if project is not None and project.sets("defaultProvider", "defaultModel"):
        merged = project.merged
        if merged.default_provider and merged.default_model:
            return merged.default_provider, merged.default_model
    pref = _pref(user)
    if pref is not None and pref.provider and pref.model_id:
        return pref.provider, pref.model_id
    ps = pi_settings()
    if ps.default_provider and ps.default_model:
        return ps.default_provider, ps.default_model
    profile = model_profiles().get(DEFAULT_PROFILE)
    if profile is not None:
        return profile.provider, profile.model
    return None


def default_thinking_level(user, project: ProjectSettings | None = None) -> str:
    level = project.merged.default_thinking_level if project is not None else None
    if level is not None and project is not None and project.sets("defaultThinkingLevel"):
        return level
    pref = _pref(user)
    if pref is not None and pref.thinking_level in THINKING_LEVELS:
        return pref.thinking_level
    return pi_settings().default_thinking_level or "off"
