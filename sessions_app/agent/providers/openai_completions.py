"""OpenAI chat-completions (``openai-completions``) through the ``openai`` SDK.

The request is shaped as pi-ai 0.80.2 shapes it: ``stream: true``,
``stream_options.include_usage``, ``store: false`` and tools with ``strict: false`` where
the endpoint takes them (``compat`` of models.json, else detected from the provider and
base URL, as pi detects them); the system prompt as the first message (``developer``
for reasoning models on endpoints that know that role); no max-tokens field unless the
caller gives one (summaries), then ``max_completion_tokens`` or, by compat,
``max_tokens``; the thinking level in the endpoint's own format. The body is posted as
built (key order included) through the SDK's client.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import openai
from openai.types.chat import ChatCompletion, ChatCompletionChunk

from .base import DeltaSink, ModelRequest, ResolvedModel
from .conversion import clean, content_list, transform_messages, user_blocks
from .openai_errors import from_sdk
from .streaming import StreamAssembly, api_stream, usage_of
from .thinking import base_max_tokens, clamp_level, reasoning_level
from .transport import cache_retention, endpoint_client, post_stream, request_headers, require_key

API = "openai-completions"


@dataclass(frozen=True)
class _Endpoint:
    """A family of endpoints pi's detectCompat knows, by provider name or by a piece of
    the base URL, and what sets it apart from OpenAI's own API."""

    providers: tuple[str, ...]
    urls: tuple[str, ...]
    quirks: frozenset[str]

    def matches(self, provider: str, url: str) -> bool:
        return provider in self.providers or any(piece in url for piece in self.urls)


# The quirks: no ``store`` and no developer role (NON_STANDARD), ``max_tokens`` instead of
# ``max_completion_tokens``, no reasoning effort, no strict tools, no long cache retention,
# the reasoning content sent back on assistant messages, and the thinking format.
NON_STANDARD, MAX_TOKENS, NO_EFFORT, NO_STRICT, NO_LONG_CACHE, REASONING_BACK = (
    "non-standard",
    "max-tokens",
    "no-effort",
    "no-strict",
    "no-long-cache",
    "reasoning-back",
)
_SHORT_OF_OPENAI = frozenset({NON_STANDARD, MAX_TOKENS, NO_EFFORT, NO_STRICT, NO_LONG_CACHE})
ENDPOINTS: dict[str, _Endpoint] = {
    "zai": _Endpoint(("zai", "zai-coding-cn"), ("api.z.ai", "open.bigmodel.cn"),
                     frozenset({NON_STANDARD, NO_EFFORT})),
    "together": _Endpoint(("together",), ("api.together.ai", "api.together.xyz"), _SHORT_OF_OPENAI),
    "moonshot": _Endpoint(("moonshotai", "moonshotai-cn"), ("api.moonshot.",),
                          frozenset({NON_STANDARD, MAX_TOKENS, NO_EFFORT, NO_STRICT})),
    "openrouter": _Endpoint(("openrouter",), ("openrouter.ai",), frozenset()),
    "cloudflare-workers": _Endpoint(("cloudflare-workers-ai",), ("api.cloudflare.com",),
                                    frozenset({NON_STANDARD, NO_LONG_CACHE})),
    "cloudflare-gateway": _Endpoint(("cloudflare-ai-gateway",), ("gateway.ai.cloudflare.com",),
                                    _SHORT_OF_OPENAI),
    "nvidia": _Endpoint(("nvidia",), ("integrate.api.nvidia.com",), _SHORT_OF_OPENAI),
    "ant-ling": _Endpoint(("ant-ling",), ("api.ant-ling.com",),
                          frozenset({NON_STANDARD, MAX_TOKENS, NO_EFFORT, NO_LONG_CACHE})),
    "xai": _Endpoint(("xai",), ("api.x.ai",), frozenset({NON_STANDARD, NO_EFFORT})),
    "deepseek": _Endpoint(("deepseek",), ("deepseek.com",), frozenset({REASONING_BACK})),
    # pi counts DeepSeek as non-standard by its URL only, not by the provider's name.
    "deepseek-url": _Endpoint((), ("deepseek.com",), frozenset({NON_STANDARD})),
    "cerebras": _Endpoint(("cerebras",), ("cerebras.ai",), frozenset({NON_STANDARD})),
    "chutes": _Endpoint((), ("chutes.ai",), frozenset({NON_STANDARD, MAX_TOKENS})),
    "opencode": _Endpoint(("opencode",), ("opencode.ai",), frozenset({NON_STANDARD})),
}  # fmt: skip
# The thinking format is that of the first of these families that matches (its name), else
# "openai".
_THINKING_FAMILIES = ("deepseek", "zai", "together", "ant-ling", "openrouter")


def detect_compat(model: dict[str, Any]) -> dict[str, Any]:
    """pi's detectCompat: what an endpoint takes, from its provider name and URL
    (:data:`ENDPOINTS`)."""
    provider = model.get("provider", "")
    url = model.get("baseUrl", "") or ""
    model_id = model.get("id", "")
    matched = {name for name, endpoint in ENDPOINTS.items() if endpoint.matches(provider, url)}
    quirks = frozenset().union(*(ENDPOINTS[name].quirks for name in matched))
    openrouter = "openrouter" in matched
    # OpenRouter passes the developer role on to the Anthropic and OpenAI models it serves.
    developer_ok = openrouter and model_id.startswith(("anthropic/", "openai/"))
    anthropic_cache = provider == "openrouter" and model_id.startswith("anthropic/")
    return {
        "supportsStore": NON_STANDARD not in quirks,
        "supportsDeveloperRole": developer_ok or not (NON_STANDARD in quirks or openrouter),
        "supportsReasoningEffort": NO_EFFORT not in quirks,
        "supportsUsageInStreaming": True,
        "maxTokensField": "max_tokens" if MAX_TOKENS in quirks else "max_completion_tokens",
        "requiresToolResultName": False,
        "requiresAssistantAfterToolResult": False,
        "requiresThinkingAsText": False,
        "requiresReasoningContentOnAssistantMessages": REASONING_BACK in quirks,
        "thinkingFormat": next((f for f in _THINKING_FAMILIES if f in matched), "openai"),
        "openRouterRouting": {},
        "vercelGatewayRouting": {},
        "chatTemplateKwargs": {},
        "zaiToolStream": False,
        "supportsStrictMode": NO_STRICT not in quirks,
        "cacheControlFormat": "anthropic" if anthropic_cache else None,
        "sendSessionAffinityHeaders": False,
        "supportsLongCacheRetention": NO_LONG_CACHE not in quirks,
    }


def get_compat(model: dict[str, Any]) -> dict[str, Any]:
    """Detected values, each overridden by the model's ``compat`` where it sets one."""
    compat = detect_compat(model)
    given = model.get("compat") or {}
    for key, value in given.items():
        if value is not None:
            compat[key] = value
    if "openRouterRouting" not in given:
        compat["openRouterRouting"] = {}
    return compat


def _normalize_id(model: dict[str, Any]) -> Callable[[str, dict[str, Any]], str]:
    def normalize(call_id: str, _source: dict[str, Any]) -> str:
        if "|" in call_id:
            head = call_id.split("|")[0]
            return "".join(c if c.isalnum() or c in "_-" else "_" for c in head)[:40]
        if model.get("provider") == "openai":
            return call_id[:40]
        return call_id

    return normalize


PROCESSED_TEXT = "I have processed the tool results."


def convert_messages(
    model: dict[str, Any],
    system_prompt: str,
    messages: list[dict[str, Any]],
    compat: dict[str, Any],
) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    transformed = transform_messages(messages, model, _normalize_id(model))
    if system_prompt:
        system_role = (
            "developer" if model.get("reasoning") and compat["supportsDeveloperRole"] else "system"
        )
        out.append({"role": system_role, "content": clean(system_prompt)})
    last_role = None
    i = 0
    while i < len(transformed):
        msg = transformed[i]
        role = msg.get("role")
        if (
            compat["requiresAssistantAfterToolResult"]
            and last_role == "toolResult"
            and role == "user"
        ):
            out.append({"role": "assistant", "content": PROCESSED_TEXT})
        if role == "toolResult":
            i, last_role = _tool_results(model, transformed, i, compat, out)
            continue
        converted = None
        if role == "user":
            converted = _user_message(msg)
        elif role == "assistant":
            converted = _assistant_message(model, msg, compat)
            if converted is None:  # nothing to send: the turn before it stays the last
                i += 1
                continue
        if converted is not None:
            out.append(converted)
        last_role = role
        i += 1
    return out


def _image_url(block: dict[str, Any]) -> dict[str, Any]:
    url = f"data:{block.get('mimeType')};base64,{block.get('data')}"
    return {"type": "image_url", "image_url": {"url": url}}


def _user_message(msg: dict[str, Any]) -> dict[str, Any] | None:
    content = msg.get("content")
    if isinstance(content, str):
        return {"role": "user", "content": clean(content)}
    parts = user_blocks(content, lambda text: {"type": "text", "text": text}, _image_url)
    return {"role": "user", "content": parts} if parts else None


def _assistant_message(
    model: dict[str, Any], msg: dict[str, Any], compat: dict[str, Any]
) -> dict[str, Any] | None:
    """The assistant turn in chat-completions form (None: nothing to send)."""
    item: dict[str, Any] = {
        "role": "assistant",
        "content": "" if compat["requiresAssistantAfterToolResult"] else None,
    }
    blocks = msg.get("content") or []
    _assistant_text(model, item, blocks, compat)
    calls = [b for b in blocks if b.get("type") == "toolCall"]
    if calls:
        _assistant_calls(item, calls)
    if (
        compat["requiresReasoningContentOnAssistantMessages"]
        and model.get("reasoning")
        and "reasoning_content" not in item
    ):
        item["reasoning_content"] = ""
    if not item["content"] and "tool_calls" not in item:
        return None
    return item


def _assistant_text(
    model: dict[str, Any],
    item: dict[str, Any],
    blocks: list[dict[str, Any]],
    compat: dict[str, Any],
) -> None:
    """Text, and thinking as text or in the field it came in (its signature)."""
    texts = [
        {"type": "text", "text": clean(b.get("text", ""))}
        for b in blocks
        if b.get("type") == "text" and (b.get("text") or "").strip()
    ]
    joined = "".join(t["text"] for t in texts)
    thinking = [
        b for b in blocks if b.get("type") == "thinking" and (b.get("thinking") or "").strip()
    ]
    if thinking and compat["requiresThinkingAsText"]:
        text = "\n\n".join(clean(b["thinking"]) for b in thinking)
        item["content"] = [{"type": "text", "text": text}, *texts]
        return
    if joined:
        item["content"] = joined
    if thinking:
        signature = thinking[0].get("thinkingSignature")
        if model.get("provider") == "opencode-go" and signature == "reasoning":
            signature = "reasoning_content"
        if signature:
            item[signature] = "\n".join(b["thinking"] for b in thinking)


def _assistant_calls(item: dict[str, Any], calls: list[dict[str, Any]]) -> None:
    item["tool_calls"] = [
        {
            "id": c.get("id"),
            "type": "function",
            "function": {
                "name": c.get("name"),
                "arguments": json.dumps(
                    c.get("arguments") or {}, separators=(",", ":"), ensure_ascii=False
                ),
            },
        }
        for c in calls
    ]
    details = []
    for c in calls:
        if c.get("thoughtSignature"):
            try:
                details.append(json.loads(c["thoughtSignature"]))
            except (TypeError, ValueError):
                pass
    details = [d for d in details if d]
    if details:
        item["reasoning_details"] = details


def _tool_results(
    model: dict[str, Any],
    transformed: list[dict[str, Any]],
    start: int,
    compat: dict[str, Any],
    out: list[dict[str, Any]],
) -> tuple[int, str]:
    """Consecutive tool results as ``tool`` messages, their images (if the model takes
    images) in a user message after them; the index after them and the role sent last."""
    vision = "image" in (model.get("input") or ["text"])
    images: list[dict[str, Any]] = []
    end = start
    while end < len(transformed) and transformed[end].get("role") == "toolResult":
        result = transformed[end]
        blocks = content_list(result.get("content"))
        text = "\n".join(b.get("text", "") for b in blocks if b.get("type") == "text")
        tool_msg: dict[str, Any] = {
            "role": "tool",
            "content": clean(text if text else "(see attached image)"),
            "tool_call_id": result.get("toolCallId"),
        }
        if compat["requiresToolResultName"] and result.get("toolName"):
            tool_msg["name"] = result["toolName"]
        out.append(tool_msg)
        if vision:
            images.extend(_image_url(b) for b in blocks if b.get("type") == "image")
        end += 1
    if not images:
        return end, "toolResult"
    if compat["requiresAssistantAfterToolResult"]:
        out.append({"role": "assistant", "content": PROCESSED_TEXT})
    out.append(
        {
            "role": "user",
            "content": [{"type": "text", "text": "Attached image(s) from tool result:"}, *images],
        }
    )
    return end, "user"


def _tools(tools: list[dict[str, Any]], compat: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for tool in tools:
        function: dict[str, Any] = {
            "name": tool["name"],
            "description": tool.get("description", ""),
            "parameters": tool.get("parameters") or {},
        }
        if compat["supportsStrictMode"] is not False:
            function["strict"] = False
        out.append({"type": "function", "function": function})
    return out


def _has_tool_history(messages: list[dict[str, Any]]) -> bool:
    for msg in messages:
        if msg.get("role") == "toolResult":
            return True
        if msg.get("role") == "assistant" and any(
            b.get("type") == "toolCall" for b in msg.get("content") or []
        ):
            return True
    return False


def _cache_control(compat: dict[str, Any], retention: str) -> dict[str, Any] | None:
    if compat.get("cacheControlFormat") != "anthropic" or retention == "none":
        return None
    control: dict[str, Any] = {"type": "ephemeral"}
    if retention == "long" and compat["supportsLongCacheRetention"]:
        control["ttl"] = "1h"
    return control


def _mark_text(message: dict[str, Any], control: dict[str, Any]) -> bool:
    content = message.get("content")
    if isinstance(content, str):
        if not content:
            return False
        message["content"] = [{"type": "text", "text": content, "cache_control": control}]
        return True
    if not isinstance(content, list):
        return False
    for part in reversed(content):
        if isinstance(part, dict) and part.get("type") == "text":
            part["cache_control"] = control
            return True
    return False


def _apply_cache_control(
    messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, control: dict[str, Any]
) -> None:
    for message in messages:
        if message.get("role") in ("system", "developer"):
            _mark_text(message, control)
            break
    if tools:
        tools[-1]["cache_control"] = control
    for message in reversed(messages):
        if message.get("role") in ("user", "assistant") and _mark_text(message, control):
            break


def build_params(resolved: ResolvedModel, request: ModelRequest) -> dict[str, Any]:
    """The request body, key for key and in pi's order."""
    model = resolved.model
    compat = get_compat(model)
    retention = cache_retention()
    level = reasoning_level(resolved, request)
    if level is not None:
        level = clamp_level(model, level)
        level = None if level == "off" else level
    messages = convert_messages(model, request.system_prompt, request.messages, compat)
    params: dict[str, Any] = {"model": model["id"], "messages": messages, "stream": True}
    long_ok = retention == "long" and compat["supportsLongCacheRetention"]
    if (("api.openai.com" in (model.get("baseUrl") or "") and retention != "none") or long_ok) and (
        request.session_id
    ):
        params["prompt_cache_key"] = request.session_id[:64]
    if long_ok:
        params["prompt_cache_retention"] = "24h"
    if compat["supportsUsageInStreaming"] is not False:
        params["stream_options"] = {"include_usage": True}
    if compat["supportsStore"]:
        params["store"] = False
    max_tokens = base_max_tokens(request)
    if max_tokens:
        field = (
            "max_tokens" if compat["maxTokensField"] == "max_tokens" else "max_completion_tokens"
        )
        params[field] = max_tokens
    if request.tools:
        params["tools"] = _tools(request.tools, compat)
        if compat.get("zaiToolStream"):
            params["tool_stream"] = True
    elif _has_tool_history(request.messages):
        params["tools"] = []
    control = _cache_control(compat, retention)
    if control:
        _apply_cache_control(messages, params.get("tools"), control)
    _apply_thinking(params, model, compat, level)
    given = model.get("compat") or {}
    if given.get("openRouterRouting") is not None:  # any object, even empty (JS truthiness)
        params["provider"] = given["openRouterRouting"]
    routing = (model.get("compat") or {}).get("vercelGatewayRouting")
    if routing and (routing.get("only") or routing.get("order")):
        gateway = {k: routing[k] for k in ("only", "order") if routing.get(k)}
        params["providerOptions"] = {"gateway": gateway}
    return params


def _apply_thinking(
    params: dict[str, Any], model: dict[str, Any], compat: dict[str, Any], effort: str | None
) -> None:
    """The thinking level in the endpoint's format (compat ``thinkingFormat``)."""
    if not model.get("reasoning"):
        return
    level_map = model.get("thinkingLevelMap") or {}
    mapped = level_map.get(effort, effort) if effort else None
    if mapped is None and effort:
        mapped = effort
    thinking = _Thinking(params, compat, level_map, effort, mapped)
    THINKING_FORMATS.get(compat["thinkingFormat"], _thinking_openai)(thinking)


class _Thinking:
    """What a thinking format writes into the body from."""

    def __init__(
        self,
        params: dict[str, Any],
        compat: dict[str, Any],
        level_map: dict[str, Any],
        effort: str | None,
        mapped: object,  # (the level map's value: a string, or null where pi has one)
    ):
        self.params = params
        self.compat = compat
        self.level_map = level_map
        self.effort = effort
        self.mapped = mapped

    @property
    def may_turn_off(self) -> bool:
        """Off unless the model's level map says off is not sent (``off: null``)."""
        return not ("off" in self.level_map and self.level_map["off"] is None)

    @property
    def sends_effort(self) -> bool:
        return bool(self.effort) and self.compat["supportsReasoningEffort"]


def _thinking_zai(t: _Thinking) -> None:
    t.params["thinking"] = {"type": "enabled" if t.effort else "disabled"}
    if t.sends_effort and isinstance(t.mapped, str):
        t.params["reasoning_effort"] = t.mapped


def _thinking_qwen(t: _Thinking) -> None:
    t.params["enable_thinking"] = bool(t.effort)


def _thinking_qwen_template(t: _Thinking) -> None:
    t.params["chat_template_kwargs"] = {
        "enable_thinking": bool(t.effort),
        "preserve_thinking": True,
    }


def _thinking_deepseek(t: _Thinking) -> None:
    if t.effort:
        t.params["thinking"] = {"type": "enabled"}
    elif t.may_turn_off:
        t.params["thinking"] = {"type": "disabled"}
    if t.sends_effort:
        t.params["reasoning_effort"] = t.mapped


def _thinking_openrouter(t: _Thinking) -> None:
    if t.effort:
        t.params["reasoning"] = {"effort": t.mapped}
    elif t.may_turn_off:
        t.params["reasoning"] = {"effort": t.level_map.get("off") or "none"}


def _thinking_ant_ling(t: _Thinking) -> None:
    if t.effort and isinstance(t.level_map.get(t.effort), str):
        t.params["reasoning"] = {"effort": t.level_map[t.effort]}


def _thinking_together(t: _Thinking) -> None:
    t.params["reasoning"] = {"enabled": bool(t.effort)}
    if t.sends_effort:
        t.params["reasoning_effort"] = t.mapped


def _thinking_string(t: _Thinking) -> None:
    if t.effort:
        t.params["thinking"] = t.mapped
    elif t.may_turn_off:
        t.params["thinking"] = t.level_map.get("off") or "none"


def _thinking_openai(t: _Thinking) -> None:
    if not t.compat["supportsReasoningEffort"]:
        return
    if t.effort:
        t.params["reasoning_effort"] = t.mapped
    elif isinstance(t.level_map.get("off"), str):
        t.params["reasoning_effort"] = t.level_map["off"]


THINKING_FORMATS = {
    "zai": _thinking_zai,
    "qwen": _thinking_qwen,
    "qwen-chat-template": _thinking_qwen_template,
    "deepseek": _thinking_deepseek,
    "openrouter": _thinking_openrouter,
    "ant-ling": _thinking_ant_ling,
    "together": _thinking_together,
    "string-thinking": _thinking_string,
}


def openai_client(api: str, resolved: ResolvedModel, headers: dict[str, str]) -> openai.OpenAI:
    """The openai SDK client for an endpoint (both OpenAI APIs use it); ProviderError
    (auth) when there is no key."""
    key = require_key(resolved, headers)
    client: openai.OpenAI = endpoint_client(
        api,
        resolved,
        key,
        headers,
        lambda: openai.OpenAI(
            base_url=resolved.model.get("baseUrl"),
            api_key=key,
            default_headers=headers or None,
            timeout=resolved.timeout,
            max_retries=0,
        ),
    )
    return client


STOP_REASONS = {
    "stop": ("stop", None),
    "end": ("stop", None),
    "length": ("length", None),
    "function_call": ("toolUse", None),
    "tool_calls": ("toolUse", None),
}


def _opener(resolved: ResolvedModel, request: ModelRequest) -> Callable[[], Iterable[Any]]:
    """What opens the request's stream (raises ProviderError before any is sent)."""
    headers = request_headers(resolved)
    compat = get_compat(resolved.model)
    if request.session_id and compat.get("sendSessionAffinityHeaders"):
        headers = {
            "session_id": request.session_id,
            "x-client-request-id": request.session_id,
            "x-session-affinity": request.session_id,
            **headers,
        }
    client = openai_client(API, resolved, headers)
    params = build_params(resolved, request)
    return post_stream(
        client, "/chat/completions", params, ChatCompletion, openai.Stream[ChatCompletionChunk]
    )


REASONING_FIELDS = ("reasoning_content", "reasoning", "reasoning_text")


class _State(StreamAssembly):
    def __init__(self, message: dict[str, Any], on_delta: DeltaSink | None):
        super().__init__(message, on_delta)
        self.text: dict[str, Any] | None = None
        self.thinking: dict[str, Any] | None = None
        self.calls_by_index: dict[int, dict[str, Any]] = {}
        self.calls_by_id: dict[str, dict[str, Any]] = {}
        self.finished = False

    def incomplete(self) -> str | None:
        return None if self.finished else "Stream ended without finish_reason"

    def feed(self, chunk: Any) -> None:
        choices = chunk.choices or []
        choice = choices[0] if choices else None
        usage = getattr(chunk, "usage", None)
        if usage is None and choice is not None:
            usage = (getattr(choice, "model_extra", None) or {}).get("usage")
        if usage is not None:
            self.message["usage"] = parse_usage(usage)
        if choice is None:
            return
        if choice.finish_reason:
            self._finish_reason(choice.finish_reason)
        delta = choice.delta
        if delta is None:
            return
        if delta.content:
            if self.text is None:
                self.text = self.add_block({"type": "text", "text": ""})
            self.append(self.text, "text", delta.content)
        extra = getattr(delta, "model_extra", None) or {}
        self._reasoning(extra)
        for call in delta.tool_calls or []:
            self._tool_call(call)
        self._encrypted_reasoning(extra.get("reasoning_details") or [])

    def _finish_reason(self, finish_reason: str) -> None:
        reason, error = STOP_REASONS.get(
            finish_reason, ("error", f"Provider finish_reason: {finish_reason}")
        )
        self.message["stopReason"] = reason
        if error:
            self.error = error
        self.finished = True

    def _reasoning(self, extra: dict[str, Any]) -> None:
        """The first reasoning field the endpoint sends (its name is the signature)."""
        for field in REASONING_FIELDS:
            value = extra.get(field)
            if isinstance(value, str) and value:
                if self.thinking is None:
                    self.thinking = self.add_block(
                        {"type": "thinking", "thinking": "", "thinkingSignature": field}
                    )
                self.append(self.thinking, "thinking", value)
                return

    def _tool_call(self, call: Any) -> None:
        block = None
        if call.index is not None:
            block = self.calls_by_index.get(call.index)
        if block is None and call.id:
            block = self.calls_by_id.get(call.id)
        if block is None:
            block = self.add_block(
                {
                    "type": "toolCall",
                    "id": call.id or "",
                    "name": (call.function.name if call.function else None) or "",
                    "arguments": {},
                }
            )
            if call.index is not None:
                self.calls_by_index[call.index] = block
        if call.id:
            if not block["id"]:
                block["id"] = call.id
            self.calls_by_id[call.id] = block
        if call.function is not None:
            if not block["name"] and call.function.name:
                block["name"] = call.function.name
            if call.function.arguments:
                self.add_arguments(block, call.function.arguments)

    def _encrypted_reasoning(self, details: list[Any]) -> None:
        for detail in details:
            if (
                isinstance(detail, dict)
                and detail.get("type") == "reasoning.encrypted"
                and detail.get("id")
                and detail.get("data")
            ):
                block = self.calls_by_id.get(detail["id"])
                if block is not None:
                    block["thoughtSignature"] = json.dumps(detail, separators=(",", ":"))


def parse_usage(raw: Any) -> dict[str, Any]:
    def get(obj: Any, name: str) -> Any:
        if obj is None:
            return None
        return obj.get(name) if isinstance(obj, dict) else getattr(obj, name, None)

    prompt = get(raw, "prompt_tokens") or 0
    details = get(raw, "prompt_tokens_details")
    cached = get(details, "cached_tokens")
    if cached is None:
        cached = get(raw, "prompt_cache_hit_tokens") or 0
    write = get(details, "cache_write_tokens") or 0
    if not write and details is not None and not isinstance(details, dict):
        write = (getattr(details, "model_extra", None) or {}).get("cache_write_tokens") or 0
    output = get(raw, "completion_tokens") or 0
    return usage_of(max(0, prompt - cached - write), output, cached, write)


# What providers.stream_for hands out for this API.
stream = api_stream(_State, _opener, lambda exc, resolved: from_sdk(exc, resolved.provider, openai))
