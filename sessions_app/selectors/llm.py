"""Which model a request uses, with which key: the catalog, pi's config, users' keys.

**The catalog** is pi's built-in model list (``sessions_app/data/pi_models.json``,
written by ``bin/generate-model-catalog``), merged with the ``models.json`` of pi's agent
folder as pi merges it (``context.pi_config.merge_models``), then with piweb's own
environment models: the ``PIWEB_LLM_*`` default profile and the profiles of
``PIWEB_MODEL_PROFILES`` become ``openai-completions`` models (the profile's provider,
default ``openai-compatible``), replacing a catalog entry with the same provider and id.
Each entry is a dict in pi's ``Model`` shape.

**Keys** of a provider, first found wins (pi's order, with the user's own key first):

1. ``user-key``: the key the person sending the message stored on the Models page;
2. ``pi-auth``: pi's ``auth.json`` entry: an ``api_key`` entry's value resolved
   (``$VAR``, ``${VAR}``, ``!command``, literal), or for an ``oauth`` entry the output
   of ``pi auth print-api-key --provider P`` when a pi that has that command is on the
   PATH (else the provider is unavailable, with the reason);
3. ``models.json``: the provider's ``apiKey`` there, resolved the same way;
4. ``env``: the environment variables pi reads for that provider (``ANTHROPIC_API_KEY``,
   ``OPENAI_API_KEY``, ``GEMINI_API_KEY``, ``OPENROUTER_API_KEY``, ... as the catalog
   lists them), or an environment profile's ``api_key``.

Sources 2-4 are the server's; PIWEB_SERVER_KEYS=staff keeps them to staff users.

**A session's model** at a leaf: the one its path records (its last ``model_change`` or
assistant message, as the core's ``build_session_context`` says) when that model is in
the catalog and this user has a key for it; else the session's environment profile
(``Session.model_profile``); a recorded model without a key and no profile refuses the
run (pick another model or add a key); with nothing recorded: the user's default (Models page), else pi's
``settings.json`` ``defaultProvider``/``defaultModel``, else the ``PIWEB_LLM_*``
default. The **window** at a leaf is the recorded model's catalog window, so an imported
Claude session keeps its 200k window even where piweb cannot call Claude.

No model configured is a normal state: ``resolve_model`` returns None.
Keys never leave this module in logs or pages (``ModelProfile``/``ResolvedModel`` hide
them in ``repr``; errors name the provider and the variable or command, never a value).
"""

from __future__ import annotations

import functools
import json
import logging
import shutil
import subprocess
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.conf import settings

from sessions_app.agent.providers.base import THINKING_LEVELS, ResolvedModel
from sessions_app.agent.retry import RetryPolicy
from sessions_app.core import pi_config
from sessions_app.core.compaction import CompactionSettings
from sessions_app.core.costs import calculate_cost, price_per_million
from sessions_app.core.errors import ServiceError
from sessions_app.core.pi_config import (
    MergedModels,
    PiSettings,
    WatchedJson,
    clamp_thinking_level,
    supported_thinking_levels,
)

log = logging.getLogger(__name__)

DEFAULT_PROFILE = "default"
CATALOG_FILE = Path(__file__).resolve().parent.parent / "data" / "pi_models.json"
KEY_SOURCES = ("user-key", "pi-auth", "models.json", "env", "none")
KEY_SOURCE_LABELS = {
    "user-key": "your key",
    "pi-auth": "pi auth.json",
    "models.json": "pi models.json",
    "env": "server environment",
    "none": "no key",
}
# APIs piweb can call (the four of pi's that the providers package speaks).
CALLABLE_APIS = (
    "openai-completions",
    "openai-responses",
    "anthropic-messages",
    "google-generative-ai",
)


# ----------------------------------------------------------------------------- env profiles


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


def retry_policy() -> RetryPolicy:
    """The one retry policy of model calls (the agent run and the summaries)."""
    return RetryPolicy(
        retries=settings.PIWEB_LLM_RETRIES,
        base_delay=settings.PIWEB_LLM_RETRY_BASE_DELAY,
        max_delay=settings.PIWEB_LLM_RETRY_MAX_DELAY,
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


HOW_TO_CONFIGURE = (
    "No model is configured. Add your API key on the Models page (/models/), or give the "
    "server one: pi's ~/.pi/agent (PIWEB_PI_AGENT_DIR), a provider variable such as "
    "ANTHROPIC_API_KEY or OPENAI_API_KEY, or PIWEB_LLM_BASE_URL + PIWEB_LLM_MODEL for an "
    "OpenAI-compatible endpoint (Ollama: http://127.0.0.1:11434/v1). Until then `!cmd`, the "
    "tree, import, fork and offline summaries all work."
)


# ----------------------------------------------------------------------------- the catalog


@functools.cache
def builtin_catalog() -> tuple[tuple[dict[str, Any], ...], dict[str, tuple[str, ...]]]:
    """pi's built-in models and, per provider, the variables pi reads its key from."""
    data = json.loads(CATALOG_FILE.read_text(encoding="utf-8"))
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
        return "models.json" if key in self.merged.custom else "pi"


def catalog() -> Catalog:
    """The merged catalog: pi's models, models.json, then the environment profiles."""
    base = agent_dir().merged()
    profiles = model_profiles()
    if not profiles:
        return Catalog(base, {})
    merged = MergedModels(
        list(base.models),
        requests=base.requests,
        model_headers=base.model_headers,
        error=base.error,
        custom=set(base.custom),
    )
    index = {(m["provider"], m["id"]): i for i, m in enumerate(merged.models)}
    env: dict[tuple[str, str], ModelProfile] = {}
    for profile in profiles.values():
        model = profile.as_model()
        key = (model["provider"], model["id"])
        env[key] = profile
        if key in index:
            merged.models[index[key]] = model
        else:
            index[key] = len(merged.models)
            merged.models.append(model)
    return Catalog(merged, env)


def find_model(provider: str | None, model_id: str | None) -> dict[str, Any] | None:
    return catalog().find(provider, model_id)


def window_of(provider: str | None, model_id: str | None) -> int | None:
    """The catalog window of a model (by provider and id; by id alone when the provider
    is unknown and the id names one model), None when the catalog does not have it."""
    cat = catalog()
    model = cat.find(provider, model_id)
    if model is None and model_id:
        same = {m["contextWindow"] for m in cat.models if m["id"] == model_id}
        if len(same) == 1:
            return int(same.pop())
    return int(model["contextWindow"]) if model else None


def context_window(model: Any = None) -> int:
    """The context window of a model: a ResolvedModel, a ModelProfile, a catalog dict, a
    ``{"provider", "modelId"}`` reference (as the core's context gives it) or a
    ``provider/id`` string; PIWEB_LLM_CONTEXT_WINDOW when unknown. The one reading of that
    setting (the agent run, the inspector, compaction, the context chart, the header)."""
    window = None
    if isinstance(model, ResolvedModel):
        window = model.context_window or None
    elif isinstance(model, ModelProfile):
        window = model.context_window
    elif isinstance(model, dict) and "contextWindow" in model:
        window = int(model["contextWindow"] or 0) or None
    elif isinstance(model, dict):
        window = window_of(model.get("provider"), model.get("modelId") or model.get("id"))
    elif isinstance(model, str) and model:
        provider, _, model_id = model.partition("/")
        window = window_of(provider, model_id) if model_id else window_of(None, provider)
        if window is None and model_id:
            window = window_of(None, model)
    return window or settings.PIWEB_LLM_CONTEXT_WINDOW


# ----------------------------------------------------------------------------- keys


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
    import os

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
    from sessions_app.selectors import provider_keys

    keys = provider_keys.user_providers(user) if user_keys is None else user_keys
    if provider in keys:
        return KeyStatus("user-key")
    if not may_use_server_keys(user):
        return KeyStatus("none", "the server's keys are for staff only: add your own key")
    cat = cat or catalog()
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


def _resolve_key(user, model: dict[str, Any], cat: Catalog) -> tuple[str, str]:
    """(key, source) for a model's provider; raises ModelUnavailable."""
    from sessions_app.selectors import provider_keys

    provider = model["provider"]
    own = provider_keys.user_key(user, provider)
    if own:
        return own, "user-key"
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


def _headers(model: dict[str, Any], key: str, cat: Catalog) -> dict[str, str]:
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


# ----------------------------------------------------------------------------- choosing


def _pref(user):
    from sessions_app.models import ModelPreference

    if user is None or not getattr(user, "pk", None):
        return None
    return ModelPreference.objects.filter(user=user).first()


def default_model_ref(user) -> tuple[str, str] | None:
    """The user's default model: their choice on the Models page, else pi's
    settings.json, else the PIWEB_LLM_* default profile."""
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


def default_thinking_level(user) -> str:
    pref = _pref(user)
    if pref is not None and pref.thinking_level in THINKING_LEVELS:
        return pref.thinking_level
    return pi_settings().default_thinking_level or "off"


def resolve_model(user, provider: str | None = None, model_id: str | None = None):
    """The model ``provider/model_id`` (default: the user's default) ready to call with the
    key this user's request uses; None when no model is configured. Raises
    ModelUnavailable for a named model that is unknown or has no key."""
    cat = catalog()
    if not provider or not model_id:
        ref = default_model_ref(user)
        if ref is None:
            return None
        provider, model_id = ref
    model = cat.find(provider, model_id)
    if model is None:
        raise ModelUnavailable(f"Unknown model: {provider}/{model_id}.")
    key, source = _resolve_key(user, model, cat)
    profile = cat.env_profiles.get((provider, model_id))
    timeout = profile.timeout if profile is not None else settings.PIWEB_LLM_TIMEOUT
    return ResolvedModel(
        model=dict(model),
        api_key=key,
        key_source=source,
        headers=_headers(model, key, cat),
        timeout=timeout,
    )


def resolve_for_session(session, user, recorded: dict | None = None):
    """The model a run at a leaf uses (see the module doc); ``recorded`` is the
    ``{"provider", "modelId"}`` the path records. None: no model configured."""
    cat = catalog()
    refused = None
    if recorded and cat.find(recorded.get("provider"), recorded.get("modelId")):
        # The model the branch uses, as pi continues a session with its model.
        try:
            return resolve_model(user, recorded["provider"], recorded["modelId"])
        except ModelUnavailable as exc:
            refused = exc
    if session is not None and session.model_profile:
        # The environment profile the session was given in piweb (e.g. an imported
        # session continued on a local model).
        profile = resolve_profile(session.model_profile)
        if profile is not None:
            return resolve_model(user, profile.provider, profile.model)
    if refused is not None:
        # Never moved silently to another model: the user picks one or adds a key.
        raise ModelUnavailable(f"{refused} Or pick another model for this session.")
    return resolve_model(user)


@dataclass(frozen=True)
class ModelChoice:
    """One line of the model lists (the picker, the Models page, ``manage.py models``)."""

    model: dict[str, Any]
    source: str  # pi / models.json / env
    key: KeyStatus
    enabled: bool = True

    provider = property(lambda self: self.model["provider"])
    id = property(lambda self: self.model["id"])
    ref = property(lambda self: f"{self.model['provider']}/{self.model['id']}")
    api = property(lambda self: self.model["api"])
    window = property(lambda self: int(self.model.get("contextWindow") or 0))
    max_tokens = property(lambda self: int(self.model.get("maxTokens") or 0))
    reasoning = property(lambda self: bool(self.model.get("reasoning")))
    callable = property(lambda self: self.model["api"] in CALLABLE_APIS)
    thinking_levels = property(lambda self: supported_thinking_levels(self.model))

    @property
    def prices(self) -> tuple[float, float]:
        return price_per_million(self.model)

    @property
    def window_label(self) -> str:
        return window_label(self.window)

    @property
    def price_label(self) -> str:
        inp, out = self.prices
        return "no price" if not inp and not out else f"${inp:g} in / ${out:g} out per M"

    @property
    def label(self) -> str:
        return f"{self.id} · {self.window_label} · {self.price_label}"

    def as_json(self) -> dict[str, Any]:
        inp, out = self.prices
        return {
            "provider": self.provider,
            "id": self.id,
            "name": self.model.get("name") or self.id,
            "api": self.api,
            "contextWindow": self.window,
            "maxTokens": self.max_tokens,
            "reasoning": self.reasoning,
            "input": list(self.model.get("input") or ["text"]),
            "inputPerM": inp,
            "outputPerM": out,
            "keySource": self.key.source,
            "keyDetail": self.key.detail,
            "source": self.source,
            "callable": self.callable,
            "enabled": self.enabled,
        }


def window_label(tokens: int) -> str:
    if tokens >= 1_000_000:
        return f"{tokens / 1_000_000:g}M"
    return f"{tokens / 1000:g}k" if tokens >= 1000 else str(tokens)


def all_models(user) -> list[ModelChoice]:
    """Every catalog model with this user's key status."""
    from sessions_app.selectors import provider_keys

    cat = catalog()
    keys = provider_keys.user_providers(user)
    enabled = pi_settings().enabled_models
    statuses: dict[str, KeyStatus] = {}
    out = []
    for model in cat.models:
        provider = model["provider"]
        if provider not in statuses:
            statuses[provider] = key_status(user, provider, cat=cat, user_keys=keys)
        on = enabled is None or any(
            pi_config.model_matches(p, provider, model["id"]) for p in enabled
        )
        out.append(ModelChoice(model, cat.source(model), statuses[provider], on))
    return out


def available_models(user) -> list[ModelChoice]:
    """The models this user can call now: a key and an API piweb speaks, sorted by
    provider then id."""
    return sorted(
        (c for c in all_models(user) if c.key.available and c.callable),
        key=lambda c: (c.provider, c.id),
    )


def thinking_for(model: dict[str, Any], level: str | None) -> str:
    """A thinking level clamped to what the model supports (pi's clampThinkingLevel)."""
    return clamp_thinking_level(model, level or "off")


# ----------------------------------------------------------------------------- costs


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


# ----------------------------------------------------------------------------- settings


def compaction_defaults() -> dict[str, Any]:
    """piweb's compaction defaults (PIWEB_COMPACTION_*) with pi's settings.json on top,
    in pi's keys."""
    glob = settings.PIWEB_COMPACTION
    merged = {
        "enabled": glob.get("enabled", True),
        "reserveTokens": glob.get("reserve_tokens", 16384),
        "keepRecentTokens": glob.get("keep_recent_tokens", 20000),
    }
    merged.update(pi_settings().compaction)
    return merged


def compaction_settings(session) -> CompactionSettings:
    """Effective settings: global PIWEB_COMPACTION, pi's settings.json (its
    ``compaction`` object), then the session's overrides.

    ``Session.settings["compaction"]`` uses pi's keys (enabled, reserveTokens,
    keepRecentTokens).
    """
    merged = compaction_defaults()
    own = (session.settings or {}).get("compaction") or {}
    merged.update({k: v for k, v in own.items() if k in merged})
    return CompactionSettings.from_dict(merged)


def branch_summary_reserve(default: int) -> int:
    return int(pi_settings().branch_summary.get("reserveTokens") or default)


def session_window(session, recorded: dict | None = None, user=None) -> int:
    """The context window at a leaf: the catalog window of the model its path records
    (``{"provider", "modelId"}``), else that of the model a run there would use (the
    session's profile, else the owner's default), else PIWEB_LLM_CONTEXT_WINDOW."""
    if recorded:
        window = window_of(recorded.get("provider"), recorded.get("modelId"))
        if window:
            return window
    if session is not None and session.model_profile:
        profile = resolve_profile(session.model_profile)
        if profile is not None:
            return profile.context_window
    ref = default_model_ref(user if user is not None else getattr(session, "owner", None))
    if ref is not None:
        window = window_of(*ref)
        if window:
            return window
    return settings.PIWEB_LLM_CONTEXT_WINDOW


def summary_profile(session, user=None) -> ModelProfile | ResolvedModel | None:
    """The model a summary job of this session calls (compaction, branch summary,
    comparison): the model the session's leaf uses, with the key of `user` (default: the
    owner); the environment profile itself when that is the one. None: the offline
    summarizer (no model or no key)."""
    from sessions_app.selectors.model_input import model_input

    try:
        resolved = model_input(session).resolved(user)
    except ModelUnavailable:
        return None
    if resolved is None:
        return None
    cat = catalog()
    profile = cat.env_profiles.get((resolved.provider, resolved.model_id))
    if profile is not None and resolved.key_source == "env":
        return profile
    if resolved.api != "openai-completions":
        return resolved
    return ModelProfile(
        name=resolved.provider,
        base_url=resolved.model["baseUrl"],
        model=resolved.model_id,
        api_key=resolved.api_key,
        context_window=resolved.context_window,
        max_output=resolved.max_tokens or settings.PIWEB_LLM_MAX_OUTPUT,
        timeout=resolved.timeout,
        provider=resolved.provider,
    )
