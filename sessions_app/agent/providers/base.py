"""The one interface between piweb and a model API (no Django).

The agent loop and the summarizers build a :class:`ModelRequest` and call
``stream(resolved, request, ...)`` of the module that speaks ``resolved.model["api"]``
(``openai-completions``, ``openai-responses``, ``anthropic-messages``,
``google-generative-ai``). Each module shapes the request as pi 0.80.2 shapes it for its
API, streams the reply through the API's official SDK and returns one assistant message
in pi's shape. Which model and which key a request uses is decided in the service layer
(``selectors/llm/``), which hands over a :class:`ResolvedModel`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol


@dataclass(frozen=True)
class ResolvedModel:
    """A model ready to call: its catalog entry and the credentials that go with it.

    ``model`` is a catalog entry in pi's ``Model`` shape (``id``, ``name``, ``api``,
    ``provider``, ``baseUrl``, ``reasoning``, ``input``, ``cost`` with optional
    ``tiers``, ``contextWindow``, ``maxTokens``, and where set ``headers``, ``compat``,
    ``thinkingLevelMap``). ``key_source`` says where the key came from (``env``,
    ``pi-auth``, ``user-key``, ``models.json`` or ``none``) and is safe to show; the key
    and the resolved headers never are.
    """

    model: dict[str, Any]
    api_key: str = field(default="", repr=False)
    key_source: str = "none"
    headers: dict[str, str] = field(default_factory=dict, repr=False)
    timeout: float = 120.0

    @property
    def api(self) -> str:
        api: str = self.model["api"]
        return api

    @property
    def provider(self) -> str:
        provider: str = self.model["provider"]
        return provider

    @property
    def model_id(self) -> str:
        model_id: str = self.model["id"]
        return model_id

    @property
    def context_window(self) -> int:
        return int(self.model.get("contextWindow") or 0)

    @property
    def max_tokens(self) -> int:
        return int(self.model.get("maxTokens") or 0)

    @property
    def label(self) -> str:
        return f"{self.provider}/{self.model_id}"


@dataclass
class ModelRequest:
    """What to send, in pi's terms; each API module turns it into its wire shape.

    ``messages`` are LLM messages as ``convert_to_llm`` gives them; ``tools`` are
    ``{"name", "description", "parameters"}`` with a JSON schema. ``max_tokens`` None
    means what pi sends for an agent turn on that API; summaries pass their budget.
    ``session_id`` feeds the cache keys and session headers pi derives from it.
    """

    system_prompt: str
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] = field(default_factory=list)
    thinking_level: str = "off"
    max_tokens: int | None = None
    session_id: str | None = None


class ProviderError(Exception):
    """A model call failed. ``str(exc)`` is safe to show (it names the provider, never
    the key). ``kind``: ``overflow`` (context too long: compact and retry), ``auth``,
    ``retryable`` (429, 5xx, timeouts, dropped connections) or ``other``."""

    def __init__(
        self,
        message: str,
        *,
        kind: str = "other",
        status: int | None = None,
        retry_after: float | None = None,
        partial: dict[str, Any] | None = None,
        received: bool = False,
    ):
        super().__init__(message)
        self.kind = kind
        self.status = status
        self.retry_after = retry_after
        # The assistant message as far as it streamed (stopReason "error"), and whether
        # anything arrived before the failure (then the call is not retried).
        self.partial = partial
        self.received = received


# on_delta(kind, text): kind is "text" or "thinking"; called as deltas arrive.
DeltaSink = Callable[[str, str], None]


class Provider(Protocol):
    """What each API module of this package is (``providers.provider_for(api)`` gives
    the module): its API's name, the request body it would send, and the one way to
    call it. Every module builds ``stream`` with ``streaming.api_stream`` from its own event
    reader (a ``streaming.StreamAssembly``), the opener of its SDK's stream and its error
    classifier, so that deltas, tool-call arguments, usage and the outcome are assembled
    the same way for every API."""

    API: str

    def build_params(self, resolved: ResolvedModel, request: ModelRequest) -> dict[str, Any]:
        """The request body, as pi-ai 0.80.2 would send it, key order included."""
        ...

    def stream(
        self,
        resolved: ResolvedModel,
        request: ModelRequest,
        *,
        abort: Any | None = None,
        on_delta: DeltaSink | None = None,
        on_idle: Callable[[], None] | None = None,
    ) -> dict[str, Any]:
        """One assistant message in pi's shape, or ProviderError (``.partial``)."""
        ...
