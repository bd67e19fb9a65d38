"""Model profiles: which OpenAI-compatible endpoint a session talks to.

The default profile comes from PIWEB_LLM_* settings; more come as JSON in
PIWEB_MODEL_PROFILES. A session names its profile in `Session.model_profile` ("" =
the default). No model configured is a normal state: `resolve_profile` returns None.
API keys never leave this module in logs or pages (`ModelProfile.__repr__` hides it).
"""

import json
from dataclasses import dataclass, field, fields

from django.conf import settings

from sessions_app.agent.loop import LLMConfig
from sessions_app.agent.providers.base import ResolvedModel
from sessions_app.agent.retry import RetryPolicy

DEFAULT_PROFILE = "default"


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
    api: str = "openai-completions"
    # pi Model fields a profile may carry as they are: reasoning, input, cost, headers,
    # compat, thinkingLevelMap (the catalog will supply them; see resolved()).
    model_fields: dict = field(default_factory=dict, repr=False, hash=False, compare=False)

    @property
    def label(self) -> str:
        return f"{self.name}: {self.model}"

    def llm_config(self) -> LLMConfig:
        """What the agent loop needs of this profile (the fields both share)."""
        return LLMConfig(**{f.name: getattr(self, f.name) for f in fields(LLMConfig)})

    def resolved(self) -> ResolvedModel:
        """This profile as the model the provider modules call (``api`` from the profile's
        spec, default openai-completions; window and max tokens from the profile)."""
        model = {
            "id": self.model,
            "name": self.model,
            "api": self.api,
            "provider": self.provider,
            "baseUrl": self.base_url,
            "reasoning": False,
            "input": ["text", "image"],
            "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
            "contextWindow": self.context_window,
            "maxTokens": self.max_output,
            **self.model_fields,
        }
        # A local OpenAI-compatible server often wants no key at all; the other APIs
        # get none, so that the request fails with an auth error naming the provider.
        key = self.api_key or ("not-needed" if self.api == "openai-completions" else "")
        return ResolvedModel(
            model=model,
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


def context_window(profile: ModelProfile | None) -> int:
    """The model's context window: its profile's, else PIWEB_LLM_CONTEXT_WINDOW. The one
    reading of that setting (the agent run, the inspector, compaction, the context chart)."""
    return profile.context_window if profile is not None else settings.PIWEB_LLM_CONTEXT_WINDOW


def _profile(name: str, spec: dict) -> ModelProfile:
    """A profile from its JSON spec; what it leaves out comes from the PIWEB_LLM_* settings."""
    return ModelProfile(
        name=name,
        base_url=spec["base_url"],
        model=spec["model"],
        api_key=spec.get("api_key", ""),
        context_window=int(spec.get("context_window") or context_window(None)),
        max_output=int(spec.get("max_output", settings.PIWEB_LLM_MAX_OUTPUT)),
        timeout=float(spec.get("timeout", settings.PIWEB_LLM_TIMEOUT)),
        provider=spec.get("provider", "openai-compatible"),
        tools=_tool_names(spec.get("tools")),
        api=spec.get("api") or "openai-completions",
        model_fields={k: spec[k] for k in _MODEL_FIELDS if k in spec},
    )


_MODEL_FIELDS = ("reasoning", "input", "cost", "headers", "compat", "thinkingLevelMap")


def _tool_names(value) -> tuple[str, ...]:
    """A profile's ``tools``: a list of names or a comma-separated string (pi's --tools)."""
    if isinstance(value, str):
        value = value.split(",")
    return tuple(str(v).strip() for v in value or () if str(v).strip())


def model_profiles() -> dict[str, ModelProfile]:
    """Every configured profile by name, read at call time (settings may change in tests):
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
    """The profile a session uses, or None when no model is configured for it."""
    profiles = model_profiles()
    return profiles.get(name or DEFAULT_PROFILE)


HOW_TO_CONFIGURE = (
    "No model is configured. Set PIWEB_LLM_BASE_URL (an OpenAI-compatible endpoint such as "
    "https://api.openai.com/v1 or http://127.0.0.1:11434/v1 for Ollama), PIWEB_LLM_MODEL and "
    "PIWEB_LLM_API_KEY, then restart piweb. Until then `!cmd`, the tree, import, fork and "
    "offline summaries all work."
)
