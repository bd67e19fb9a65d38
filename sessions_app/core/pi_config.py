"""pi's agent folder (``~/.pi/agent``): ``models.json``, ``auth.json``, ``settings.json``.

Pure (no Django): reading the three files, resolving their config values and merging
custom models into the built-in catalog the way pi 0.80.2 does. The rules, from pi's
documented formats (docs/models.md, docs/settings.md, docs/providers.md):

Config values (``apiKey`` and ``headers`` of models.json, ``key`` of an auth.json
``api_key`` entry):
- ``!command`` runs the rest in a shell and uses its trimmed stdout (no output, a
  non-zero exit or a 10 s timeout: unresolved);
- otherwise a template: ``$NAME`` and ``${NAME}`` are environment variables (a missing
  one makes the whole value unresolved), ``$$`` is a literal ``$`` and ``$!`` a literal
  ``!``; anything else is literal text (``MY_KEY`` is a literal, not a variable).

models.json (``{"providers": {name: {...}}}``):
- a built-in provider's ``baseUrl`` and ``compat`` apply to all its built-in models
  (``compat`` merged, the nested routing/kwargs objects merged one level deeper);
- ``modelOverrides`` patch built-in models by id (``cost`` field by field,
  ``thinkingLevelMap`` merged, ``compat`` merged); unknown ids are ignored;
- ``models`` are upserted by (provider, id) after that: the same id replaces the
  built-in entry. A custom model takes ``api``/``baseUrl`` from itself, its provider,
  else the built-in provider's first model; defaults: name = id, reasoning false, input
  text, contextWindow 128000, maxTokens 16384, cost all zeros;
- provider ``apiKey``, ``headers`` and ``authHeader`` (and a model's ``headers``) are
  applied when a request is made, not stored in the model;
- a file that does not parse or validate leaves only the built-in models, with the
  error reported.

Files are re-read when their mtime or size changes (:class:`WatchedJson`), so an edit
takes effect without a restart.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

COMMAND_TIMEOUT = 10.0
DEFAULT_CONTEXT_WINDOW = 128000
DEFAULT_MAX_TOKENS = 16384
ZERO_COST = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}
THINKING_LEVELS = ("off", "minimal", "low", "medium", "high", "xhigh", "max")

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_FULL_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


# ----------------------------------------------------------------------------- values


def _template(value: str) -> list[tuple[str, str]]:
    """A non-command value as parts: ("lit", text) and ("env", NAME)."""
    parts: list[tuple[str, str]] = []

    def lit(text: str) -> None:
        if not text:
            return
        if parts and parts[-1][0] == "lit":
            parts[-1] = ("lit", parts[-1][1] + text)
        else:
            parts.append(("lit", text))

    i = 0
    while i < len(value):
        dollar = value.find("$", i)
        if dollar < 0:
            lit(value[i:])
            break
        lit(value[i:dollar])
        nxt = value[dollar + 1 : dollar + 2]
        if nxt in ("$", "!"):
            lit(nxt)
            i = dollar + 2
            continue
        if nxt == "{":
            end = value.find("}", dollar + 2)
            if end < 0:
                lit("$")
                i = dollar + 1
                continue
            name = value[dollar + 2 : end]
            if _FULL_NAME.match(name):
                parts.append(("env", name))
            else:
                lit(value[dollar : end + 1])
            i = end + 1
            continue
        match = _NAME.match(value, dollar + 1)
        if match:
            parts.append(("env", match.group(0)))
            i = match.end()
            continue
        lit("$")
        i = dollar + 1
    return parts


def is_command(value: str) -> bool:
    return value.startswith("!")


def env_names(value: str) -> list[str]:
    """The environment variables a value reads (none for a command)."""
    if is_command(value):
        return []
    names: list[str] = []
    for kind, text in _template(value):
        if kind == "env" and text not in names:
            names.append(text)
    return names


def is_configured(value: str, env: Mapping[str, str]) -> bool:
    """Whether a value can resolve without running anything: every variable it names is
    set (a command counts as configured; pi does not run it to check)."""
    return all(env.get(name) for name in env_names(value))


def run_command(command: str) -> str | None:
    """A ``!command`` value's output: the command's trimmed stdout, None on failure."""
    try:
        done = subprocess.run(
            command,
            shell=True,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            timeout=COMMAND_TIMEOUT,
            text=True,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0:
        return None
    return done.stdout.strip() or None


def resolve_value(value: str, env: Mapping[str, str]) -> str | None:
    """A config value resolved (None: unresolved)."""
    if is_command(value):
        return run_command(value[1:])
    out = []
    for kind, text in _template(value):
        if kind == "lit":
            out.append(text)
        else:
            got = env.get(text)
            if not got:
                return None
            out.append(got)
    return "".join(out)


def describe_unresolved(value: str, what: str, env: Mapping[str, str]) -> str:
    """Why a value did not resolve, naming the variables, never a value (nor the command
    itself, which may hold a secret)."""
    if is_command(value):
        return f"Failed to resolve {what} from its shell command (it failed or printed nothing)"
    missing = [name for name in env_names(value) if not env.get(name)]
    if len(missing) == 1:
        return f"Failed to resolve {what} from environment variable: {missing[0]}"
    if missing:
        return f"Failed to resolve {what} from environment variables: {', '.join(missing)}"
    return f"Failed to resolve {what}"


# ----------------------------------------------------------------------------- files


def strip_json_comments(text: str) -> str:
    """``//`` and ``/* */`` comments removed outside strings (pi accepts them in its files)."""
    out: list[str] = []
    i, n = 0, len(text)
    in_string = False
    while i < n:
        c = text[i]
        if in_string:
            out.append(c)
            if c == "\\" and i + 1 < n:
                out.append(text[i + 1])
                i += 2
                continue
            if c == '"':
                in_string = False
            i += 1
            continue
        if c == '"':
            in_string = True
            out.append(c)
            i += 1
        elif text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = n if end < 0 else end + 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


class WatchedJson:
    """A JSON file re-read when its (mtime_ns, size) changes. ``read()`` gives
    ``(data, error)``: ``(None, None)`` when the file does not exist."""

    def __init__(self, path: Path | str, *, comments: bool = False):
        self.path = Path(path)
        self.comments = comments
        self._stamp: tuple[int, int] | None = None
        self._value: tuple[Any, str | None] = (None, None)
        self._lock = threading.Lock()

    def read(self) -> tuple[Any, str | None]:
        try:
            st = os.stat(self.path)
        except OSError:
            return None, None
        stamp = (st.st_mtime_ns, st.st_size)
        with self._lock:
            if stamp != self._stamp:
                self._value = self._load()
                self._stamp = stamp
            return self._value

    def _load(self) -> tuple[Any, str | None]:
        try:
            text = self.path.read_text(encoding="utf-8")
            if self.comments:
                text = strip_json_comments(text)
            return json.loads(text), None
        except (OSError, UnicodeDecodeError) as exc:
            return None, f"Could not read {self.path.name}: {exc.__class__.__name__}"
        except json.JSONDecodeError as exc:
            return None, f"Failed to parse {self.path.name}: {exc.msg} (line {exc.lineno})"


# ----------------------------------------------------------------------------- settings


@dataclass(frozen=True)
class PiSettings:
    """The settings.json keys piweb uses (None: not set)."""

    default_provider: str | None = None
    default_model: str | None = None
    default_thinking_level: str | None = None
    enabled_models: tuple[str, ...] | None = None
    compaction: dict[str, Any] = field(default_factory=dict)
    branch_summary: dict[str, Any] = field(default_factory=dict)
    error: str | None = None

    @classmethod
    def parse(cls, data: Any, error: str | None = None) -> PiSettings:
        if not isinstance(data, dict):
            return cls(error=error or (None if data is None else "settings.json is not an object"))

        def text(key: str) -> str | None:
            value = data.get(key)
            return value if isinstance(value, str) and value else None

        level = text("defaultThinkingLevel")
        if level not in THINKING_LEVELS:
            level = None
        enabled = data.get("enabledModels")
        enabled_models = (
            tuple(p for p in enabled if isinstance(p, str)) if isinstance(enabled, list) else None
        )
        compaction = {}
        raw = data.get("compaction")
        if isinstance(raw, dict):
            if isinstance(raw.get("enabled"), bool):
                compaction["enabled"] = raw["enabled"]
            for key in ("reserveTokens", "keepRecentTokens"):
                if _positive_int(raw.get(key)):
                    compaction[key] = int(raw[key])
        branch = {}
        raw = data.get("branchSummary")
        if isinstance(raw, dict) and _positive_int(raw.get("reserveTokens")):
            branch["reserveTokens"] = int(raw["reserveTokens"])
        return cls(
            default_provider=text("defaultProvider"),
            default_model=text("defaultModel"),
            default_thinking_level=level,
            enabled_models=enabled_models,
            compaction=compaction,
            branch_summary=branch,
            error=error,
        )


def merge_settings(base: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    """pi's merge of a project's settings.json over the agent folder's: a key the project
    sets wins; where both hold an object (not a list), the project's keys are laid over
    the base's, one level deep."""
    merged = dict(base)
    for key, value in overrides.items():
        below = base.get(key)
        if isinstance(value, dict) and isinstance(below, dict):
            merged[key] = {**below, **value}
        else:  # (JSON has no undefined: a null the project writes wins too)
            merged[key] = value
    return merged


@dataclass(frozen=True)
class ProjectSettings:
    """The settings in effect in a project: the agent folder's settings.json with the
    project's ``.pi/settings.json`` merged over it, and the keys the project sets (its
    defaults win over a user's own choice, as a project's settings override pi's global
    ones, where /model writes)."""

    merged: PiSettings
    keys: frozenset[str]

    def sets(self, *keys: str) -> bool:
        return any(key in self.keys for key in keys)


def _positive_int(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and value > 0


def model_matches(pattern: str, provider: str, model_id: str) -> bool:
    """An ``enabledModels`` pattern against a model: ``provider/id`` or ``id``, with ``*``
    and ``?`` globs, case-insensitive; a pattern may end with ``:level`` (a thinking
    level), which is ignored for matching."""
    head, _, tail = pattern.rpartition(":")
    if head and tail in THINKING_LEVELS:
        pattern = head
    rx = re.compile(
        "^"
        + "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern)
        + "$",
        re.IGNORECASE,
    )
    return bool(rx.match(f"{provider}/{model_id}") or rx.match(model_id))


# ----------------------------------------------------------------------------- auth.json


@dataclass(frozen=True)
class AuthEntry:
    """One provider's auth.json entry: ``api_key`` (``key`` is a config value) or
    ``oauth`` (tokens piweb never reads itself)."""

    provider: str
    type: str
    key: str = field(default="", repr=False)
    env: dict[str, str] = field(default_factory=dict, repr=False)


def parse_auth(data: Any) -> dict[str, AuthEntry]:
    if not isinstance(data, dict):
        return {}
    out = {}
    for provider, raw in data.items():
        if not isinstance(raw, dict):
            continue
        kind = raw.get("type")
        if kind == "api_key" and isinstance(raw.get("key"), str) and raw["key"]:
            env = raw.get("env")
            if not isinstance(env, dict):
                env = {}
            out[provider] = AuthEntry(
                provider, "api_key", raw["key"], {k: str(v) for k, v in env.items()}
            )
        elif kind == "oauth":
            out[provider] = AuthEntry(provider, "oauth")
    return out


# ----------------------------------------------------------------------------- models.json


@dataclass(frozen=True)
class ProviderRequestConfig:
    """What models.json adds to a provider's requests (values unresolved)."""

    api_key: str | None = field(default=None, repr=False)
    headers: dict[str, str] = field(default_factory=dict, repr=False)
    auth_header: bool = False


@dataclass
class MergedModels:
    models: list[dict[str, Any]]
    requests: dict[str, ProviderRequestConfig] = field(default_factory=dict)
    model_headers: dict[tuple[str, str], dict[str, str]] = field(default_factory=dict)
    error: str | None = None
    custom: set[tuple[str, str]] = field(default_factory=set)  # (provider, id) from models.json

    def find(self, provider: str, model_id: str) -> dict[str, Any] | None:
        for model in self.models:
            if model["provider"] == provider and model["id"] == model_id:
                return model
        return None


_COMPAT_NESTED = ("openRouterRouting", "vercelGatewayRouting", "chatTemplateKwargs")
_OVERRIDE_FIELDS = ("name", "reasoning", "input", "contextWindow", "maxTokens")


def merge_compat(
    base: dict[str, Any] | None, override: dict[str, Any] | None
) -> dict[str, Any] | None:
    if not override:
        return base
    merged = {**(base or {}), **override}
    for key in _COMPAT_NESTED:
        if (base or {}).get(key) or override.get(key):
            merged[key] = {**((base or {}).get(key) or {}), **(override.get(key) or {})}
    return merged


def apply_override(model: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    out = dict(model)
    for key in _OVERRIDE_FIELDS:
        if key in override:
            out[key] = override[key]
    if "thinkingLevelMap" in override:
        out["thinkingLevelMap"] = {
            **(model.get("thinkingLevelMap") or {}),
            **(override["thinkingLevelMap"] or {}),
        }
    if override.get("cost"):
        cost = dict(model.get("cost") or ZERO_COST)
        for key in ("input", "output", "cacheRead", "cacheWrite"):
            if override["cost"].get(key) is not None:
                cost[key] = override["cost"][key]
        out["cost"] = cost
    compat = merge_compat(model.get("compat"), override.get("compat"))
    if compat is not None:
        out["compat"] = compat
    return out


def _validate(config: Any, builtin_providers: set[str]) -> str | None:
    """pi's schema and consistency checks, as one message (None: valid)."""
    if not isinstance(config, dict) or not isinstance(config.get("providers"), dict):
        return "providers: expected an object"
    for name, provider in config["providers"].items():
        error = _validate_provider(name, provider, name in builtin_providers)
        if error:
            return error
    return None


def _validate_provider(name: str, provider: Any, builtin: bool) -> str | None:
    if not isinstance(provider, dict):
        return f"providers.{name}: expected an object"
    for key in ("baseUrl", "apiKey", "api", "name"):
        if key in provider and not (isinstance(provider[key], str) and provider[key]):
            return f"providers.{name}.{key}: expected a non-empty string"
    for key in ("headers", "compat", "modelOverrides"):
        if key in provider and not isinstance(provider[key], dict):
            return f"providers.{name}.{key}: expected an object"
    models = provider.get("models", [])
    if not isinstance(models, list):
        return f"providers.{name}.models: expected an array"
    if not models:
        if not any(provider.get(k) for k in ("baseUrl", "headers", "compat", "modelOverrides")):
            return (
                f'Provider {name}: must specify "baseUrl", "headers", "compat", '
                '"modelOverrides", or "models".'
            )
    elif not builtin and not provider.get("baseUrl"):
        return f'Provider {name}: "baseUrl" is required when defining custom models.'
    for i, model in enumerate(models):
        error = _validate_model(name, provider, i, model, builtin)
        if error:
            return error
    return None


def _validate_model(
    name: str, provider: dict[str, Any], i: int, model: Any, builtin: bool
) -> str | None:
    if not isinstance(model, dict) or not isinstance(model.get("id"), str) or not model["id"]:
        return f"providers.{name}.models.{i}.id: expected a non-empty string"
    if not provider.get("api") and not model.get("api") and not builtin:
        return f'Provider {name}, model {model["id"]}: no "api" specified.'
    for key in ("contextWindow", "maxTokens"):
        if key in model and not (_positive_int(model[key])):
            return f"Provider {name}, model {model['id']}: invalid {key}"
    return None


def merge_models(
    builtins: list[dict[str, Any]], config: Any, config_error: str | None = None
) -> MergedModels:
    """The built-in models with a parsed models.json applied (see the module doc)."""
    if config_error:
        return MergedModels([dict(m) for m in builtins], error=config_error)
    if config is None:
        return MergedModels([dict(m) for m in builtins])
    builtin_providers = {m["provider"] for m in builtins}
    error = _validate(config, builtin_providers)
    if error:
        return MergedModels([dict(m) for m in builtins], error=f"Invalid models.json: {error}")
    providers: dict[str, dict[str, Any]] = config["providers"]
    result = MergedModels([])
    for name, provider in providers.items():
        _add_request_config(result, name, provider)
    first_of: dict[str, dict[str, Any]] = {}
    for builtin in builtins:
        first_of.setdefault(builtin["provider"], builtin)
        result.models.append(_configured_builtin(builtin, providers.get(builtin["provider"]) or {}))
    index = {(m["provider"], m["id"]): i for i, m in enumerate(result.models)}
    for name, provider in providers.items():
        for spec in provider.get("models") or []:
            model = _custom_model(name, provider, spec, first_of.get(name) or {})
            if model is None:
                continue
            if spec.get("headers"):
                result.model_headers[(name, spec["id"])] = dict(spec["headers"])
            else:
                result.model_headers.pop((name, spec["id"]), None)
            key = (name, spec["id"])
            result.custom.add(key)
            if key in index:
                result.models[index[key]] = model
            else:
                index[key] = len(result.models)
                result.models.append(model)
    return result


def _add_request_config(result: MergedModels, name: str, provider: dict[str, Any]) -> None:
    """What a provider's requests carry: its key, headers, and per-model headers."""
    if provider.get("apiKey") or provider.get("headers") or provider.get("authHeader"):
        result.requests[name] = ProviderRequestConfig(
            api_key=provider.get("apiKey"),
            headers=dict(provider.get("headers") or {}),
            auth_header=bool(provider.get("authHeader")),
        )
    for model_id, override in (provider.get("modelOverrides") or {}).items():
        if isinstance(override, dict) and override.get("headers"):
            result.model_headers[(name, model_id)] = dict(override["headers"])


def _configured_builtin(model: dict[str, Any], provider: dict[str, Any]) -> dict[str, Any]:
    """A built-in model with its provider's base URL, compat and override applied."""
    out = dict(model)
    if provider.get("baseUrl") or provider.get("compat"):
        out["baseUrl"] = provider.get("baseUrl") or model["baseUrl"]
        compat = merge_compat(model.get("compat"), provider.get("compat"))
        if compat is not None:
            out["compat"] = compat
    override = (provider.get("modelOverrides") or {}).get(model["id"])
    if isinstance(override, dict):
        out = apply_override(out, override)
    return out


def _custom_model(
    name: str, provider: dict[str, Any], spec: dict[str, Any], fallback: dict[str, Any]
) -> dict[str, Any] | None:
    """A model models.json defines (None: no API or base URL to reach it by);
    ``fallback`` is the provider's first built-in model."""
    api = spec.get("api") or provider.get("api") or fallback.get("api")
    base_url = spec.get("baseUrl") or provider.get("baseUrl") or fallback.get("baseUrl")
    if not api or not base_url:
        return None
    model = {
        "id": spec["id"],
        "name": spec.get("name") or spec["id"],
        "api": api,
        "provider": name,
        "baseUrl": base_url,
        "reasoning": bool(spec.get("reasoning", False)),
        "input": list(spec.get("input") or ["text"]),
        "cost": dict(spec.get("cost") or ZERO_COST),
        "contextWindow": int(spec.get("contextWindow") or DEFAULT_CONTEXT_WINDOW),
        "maxTokens": int(spec.get("maxTokens") or DEFAULT_MAX_TOKENS),
    }
    if spec.get("thinkingLevelMap"):
        model["thinkingLevelMap"] = dict(spec["thinkingLevelMap"])
    compat = merge_compat(provider.get("compat"), spec.get("compat"))
    if compat is not None:
        model["compat"] = compat
    return model


def endpoint_provider(api: str, base_url: str, models: list[dict[str, Any]]) -> dict[str, Any]:
    """An endpoint added on the Models page as the models.json provider it stands for."""
    return {"api": api, "baseUrl": base_url, "models": models}


def check_endpoint(name: str, provider: dict[str, Any]) -> str | None:
    """models.json's checks of one custom provider (None: valid)."""
    return _validate_provider(name, provider, builtin=False)


def endpoint_models(name: str, provider: dict[str, Any]) -> list[dict[str, Any]]:
    """The models of an endpoint, built as models.json builds its custom models."""
    out = []
    for spec in provider.get("models") or []:
        model = _custom_model(name, provider, spec, {})
        if model is not None:
            out.append(model)
    return out


def supported_thinking_levels(model: dict[str, Any]) -> list[str]:
    """pi's getSupportedThinkingLevels: "off" only for a non-reasoning model; otherwise
    every level the model's thinkingLevelMap does not set to null, xhigh and max only
    when the map names them."""
    if not model.get("reasoning"):
        return ["off"]
    mapping = model.get("thinkingLevelMap") or {}
    levels = []
    for level in THINKING_LEVELS:
        if level in mapping and mapping[level] is None:
            continue
        if level in ("xhigh", "max") and level not in mapping:
            continue
        levels.append(level)
    return levels


def clamp_thinking_level(model: dict[str, Any], level: str) -> str:
    """pi's clampThinkingLevel: the level itself when supported, else the next higher
    supported one, else the next lower."""
    available = supported_thinking_levels(model)
    if level in available:
        return level
    if level not in THINKING_LEVELS:
        return available[0] if available else "off"
    i = THINKING_LEVELS.index(level)
    for candidate in THINKING_LEVELS[i:]:
        if candidate in available:
            return candidate
    for candidate in reversed(THINKING_LEVELS[:i]):
        if candidate in available:
            return candidate
    return available[0] if available else "off"
