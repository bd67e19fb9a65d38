"""Anthropic Messages (``anthropic-messages``) through the ``anthropic`` SDK.

Shaped as pi-ai 0.80.2 shapes it: body keys ``model, messages, max_tokens, stream,
system, tools, thinking``; the system prompt as one text block; ``cache_control``
(``{"type": "ephemeral"}``, ``ttl: 1h`` with ``PI_CACHE_RETENTION=long``) on the system
block, the last tool and the last block of the last message when that message is the
user's; consecutive tool results merged into one user message; thinking blocks sent
back with their signatures (redacted thinking as ``redacted_thinking``); ``max_tokens``
the caller's budget or the model's ``maxTokens``, raised by the thinking budget as pi
raises it; headers ``anthropic-beta: interleaved-thinking-2025-05-14`` (not for
adaptive-thinking models) and the fine-grained tool streaming beta when a model's
compat turns eager input streaming off.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any

import anthropic
from anthropic.types import Message, RawMessageStreamEvent

from .base import DeltaSink, ModelRequest, ResolvedModel
from .conversion import clean, content_list, new_message, transform_messages
from .openai_errors import from_sdk
from .streaming import StreamAssembly, api_stream
from .thinking import adjust_for_thinking, base_max_tokens, reasoning_level, thinking_budgets
from .transport import cache_retention, endpoint_client, post_stream, request_headers, require_key

API = "anthropic-messages"
INTERLEAVED_BETA = "interleaved-thinking-2025-05-14"
FINE_GRAINED_BETA = "fine-grained-tool-streaming-2025-05-14"
REDACTED_TEXT = "[Reasoning redacted]"
# An Anthropic OAuth token (a Claude subscription, as `pi auth` holds it) is accepted only
# from Claude Code: pi then presents itself as Claude Code (facts of that client: its
# version, beta flags, identity block and tool names), and so does piweb.
CLAUDE_CODE_VERSION = "2.1.75"
CLAUDE_CODE_IDENTITY = "You are Claude Code, Anthropic's official CLI for Claude."
CLAUDE_CODE_BETAS = ("claude-code-20250219", "oauth-2025-04-20")
CLAUDE_CODE_TOOLS = {
    name.lower(): name
    for name in (
        "Read", "Write", "Edit", "Bash", "Grep", "Glob", "AskUserQuestion", "EnterPlanMode",
        "ExitPlanMode", "KillShell", "NotebookEdit", "Skill", "Task", "TaskOutput", "TodoWrite",
        "WebFetch", "WebSearch",
    )
}  # fmt: skip


def is_oauth(key: str) -> bool:
    return "sk-ant-oat" in (key or "")


def to_claude_code(name: str) -> str:
    return CLAUDE_CODE_TOOLS.get((name or "").lower(), name)


def from_claude_code(name: str, tools: list[dict[str, Any]]) -> str:
    for tool in tools:
        if tool["name"].lower() == (name or "").lower():
            known: str = tool["name"]
            return known
    return name


ANTHROPIC_VERSION = "2023-06-01"


def get_compat(model: dict[str, Any]) -> dict[str, Any]:
    given = model.get("compat") or {}

    def pick(key: str, default: Any) -> Any:
        value = given.get(key)
        return default if value is None else value

    return {
        "supportsEagerToolInputStreaming": pick("supportsEagerToolInputStreaming", True),
        "supportsLongCacheRetention": pick("supportsLongCacheRetention", True),
        "sendSessionAffinityHeaders": pick("sendSessionAffinityHeaders", False),
        "supportsCacheControlOnTools": pick("supportsCacheControlOnTools", True),
        "allowEmptySignature": pick("allowEmptySignature", False),
        "forceAdaptiveThinking": given.get("forceAdaptiveThinking") is True,
    }


def _cache_control(compat: dict[str, Any]) -> dict[str, Any]:
    control: dict[str, Any] = {"type": "ephemeral"}
    if cache_retention() == "long" and compat["supportsLongCacheRetention"]:
        control["ttl"] = "1h"
    return control


def _normalize_id(call_id: str, _source: dict[str, Any]) -> str:
    return re.sub(r"[^a-zA-Z0-9_-]", "_", call_id)[:64]


def _blocks(content: list[dict[str, Any]]) -> Any:
    """A tool result's content: one string, or blocks when it holds images."""
    if not any(b.get("type") == "image" for b in content):
        return clean("\n".join(b.get("text", "") for b in content))
    out: list[dict[str, Any]] = []
    for block in content:
        if block.get("type") == "text":
            out.append({"type": "text", "text": clean(block.get("text", ""))})
        else:
            out.append(_image(block))
    if not any(b["type"] == "text" for b in out):
        out.insert(0, {"type": "text", "text": "(see attached image)"})
    return out


def _image(block: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "image",
        "source": {
            "type": "base64",
            "media_type": block.get("mimeType"),
            "data": block.get("data"),
        },
    }


def convert_messages(
    model: dict[str, Any],
    messages: list[dict[str, Any]],
    control: dict[str, Any] | None,
    compat: dict[str, Any],
    oauth: bool = False,
) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    transformed = transform_messages(messages, model, _normalize_id)
    i = 0
    while i < len(transformed):
        msg = transformed[i]
        role = msg.get("role")
        converted = None
        if role == "user":
            converted = _user_message(msg)
        elif role == "assistant":
            converted = _assistant_message(msg, compat, oauth)
        elif role == "toolResult":
            converted, i = _tool_results(transformed, i)
            out.append(converted)
            continue
        if converted is not None:
            out.append(converted)
        i += 1
    if control and out and out[-1]["role"] == "user":
        _mark_last_block(out[-1], control)
    return out


def _user_message(msg: dict[str, Any]) -> dict[str, Any] | None:
    content = msg.get("content")
    if isinstance(content, str):
        return {"role": "user", "content": clean(content)} if content.strip() else None
    blocks: list[dict[str, Any]] = []
    for item in content_list(content):
        if item.get("type") == "text":
            if (item.get("text") or "").strip():
                blocks.append({"type": "text", "text": clean(item["text"])})
        else:
            blocks.append(_image(item))
    return {"role": "user", "content": blocks} if blocks else None


def _assistant_message(
    msg: dict[str, Any], compat: dict[str, Any], oauth: bool
) -> dict[str, Any] | None:
    blocks: list[dict[str, Any]] = []
    for block in msg.get("content") or []:
        kind = block.get("type")
        if kind == "text":
            if (block.get("text") or "").strip():
                blocks.append({"type": "text", "text": clean(block["text"])})
        elif kind == "thinking":
            converted = _thinking_block(block, compat)
            if converted is not None:
                blocks.append(converted)
        elif kind == "toolCall":
            blocks.append(
                {
                    "type": "tool_use",
                    "id": block.get("id"),
                    "name": to_claude_code(block.get("name")) if oauth else block.get("name"),
                    "input": block.get("arguments") or {},
                }
            )
    return {"role": "assistant", "content": blocks} if blocks else None


def _thinking_block(block: dict[str, Any], compat: dict[str, Any]) -> dict[str, Any] | None:
    """Redacted thinking as such; signed thinking as thinking; unsigned thinking as
    text unless the endpoint takes an empty signature."""
    if block.get("redacted"):
        return {"type": "redacted_thinking", "data": block.get("thinkingSignature")}
    if not (block.get("thinking") or "").strip():
        return None
    signature = block.get("thinkingSignature") or ""
    if not signature.strip():
        if not compat["allowEmptySignature"]:
            return {"type": "text", "text": clean(block["thinking"])}
        signature = ""
    return {"type": "thinking", "thinking": clean(block["thinking"]), "signature": signature}


def _tool_results(transformed: list[dict[str, Any]], start: int) -> tuple[dict[str, Any], int]:
    """Consecutive tool results as one user message; the index after them."""
    results = []
    end = start
    while end < len(transformed) and transformed[end].get("role") == "toolResult":
        result = transformed[end]
        results.append(
            {
                "type": "tool_result",
                "tool_use_id": result.get("toolCallId"),
                "content": _blocks(content_list(result.get("content"))),
                "is_error": bool(result.get("isError")),
            }
        )
        end += 1
    return {"role": "user", "content": results}, end


def _mark_last_block(last: dict[str, Any], control: dict[str, Any]) -> None:
    """``cache_control`` on the last block of the last (user) message."""
    if isinstance(last["content"], list):
        block = last["content"][-1] if last["content"] else None
        if block and block.get("type") in ("text", "image", "tool_result"):
            block["cache_control"] = control
    elif isinstance(last["content"], str):
        last["content"] = [{"type": "text", "text": last["content"], "cache_control": control}]


def _effort(model: dict[str, Any], level: str) -> str:
    mapped = (model.get("thinkingLevelMap") or {}).get(level)
    if isinstance(mapped, str):
        return mapped
    return {"minimal": "low", "low": "low", "medium": "medium", "high": "high"}.get(level, "high")


def build_params(resolved: ResolvedModel, request: ModelRequest) -> dict[str, Any]:
    model = resolved.model
    oauth = is_oauth(resolved.api_key)
    compat = get_compat(model)
    control = _cache_control(compat)
    level = reasoning_level(resolved, request)
    max_tokens = base_max_tokens(request)
    thinking: dict[str, Any] | None = None
    effort = None
    if level is not None:
        if compat["forceAdaptiveThinking"]:
            effort = _effort(model, level)
        else:
            max_tokens, budget = adjust_for_thinking(
                max_tokens, resolved.max_tokens, level, thinking_budgets(model)
            )
            thinking = {"type": "enabled", "budget_tokens": budget or 1024}
    params: dict[str, Any] = {
        "model": model["id"],
        "messages": convert_messages(model, request.messages, control, compat, oauth),
        "max_tokens": max_tokens if max_tokens is not None else resolved.max_tokens,
        "stream": True,
    }
    if oauth:
        params["system"] = [
            {"type": "text", "text": CLAUDE_CODE_IDENTITY, "cache_control": control}
        ]
        if request.system_prompt:
            params["system"].append(
                {"type": "text", "text": clean(request.system_prompt), "cache_control": control}
            )
    elif request.system_prompt:
        params["system"] = [
            {"type": "text", "text": clean(request.system_prompt), "cache_control": control}
        ]
    if request.tools:
        tools = []
        for n, tool in enumerate(request.tools):
            schema = tool.get("parameters") or {}
            spec: dict[str, Any] = {
                "name": to_claude_code(tool["name"]) if oauth else tool["name"],
                "description": tool.get("description", ""),
            }
            if compat["supportsEagerToolInputStreaming"]:
                spec["eager_input_streaming"] = True
            spec["input_schema"] = {
                "type": "object",
                "properties": schema.get("properties") or {},
                "required": schema.get("required") or [],
            }
            if compat["supportsCacheControlOnTools"] and n == len(request.tools) - 1:
                spec["cache_control"] = control
            tools.append(spec)
        params["tools"] = tools
    if model.get("reasoning"):
        if level is not None:
            if compat["forceAdaptiveThinking"]:
                params["thinking"] = {"type": "adaptive", "display": "summarized"}
                params["output_config"] = {"effort": effort}
            else:
                assert thinking is not None  # (set above for every level without adaptive)
                params["thinking"] = {**thinking, "display": "summarized"}
        elif (model.get("thinkingLevelMap") or {}).get("off", "") is not None:
            params["thinking"] = {"type": "disabled"}
    return params


def _headers(
    resolved: ResolvedModel, request: ModelRequest, compat: dict[str, Any]
) -> dict[str, str]:
    betas = []
    if request.tools and not compat["supportsEagerToolInputStreaming"]:
        betas.append(FINE_GRAINED_BETA)
    if not compat["forceAdaptiveThinking"]:
        betas.append(INTERLEAVED_BETA)
    headers = {
        "accept": "application/json",
        "anthropic-dangerous-direct-browser-access": "true",
        # the version pi's SDK sends (this Python SDK would send a newer one)
        "anthropic-version": ANTHROPIC_VERSION,
    }
    if is_oauth(resolved.api_key):
        headers["anthropic-beta"] = ",".join([*CLAUDE_CODE_BETAS, *betas])
        headers["user-agent"] = f"claude-cli/{CLAUDE_CODE_VERSION}"
        headers["x-app"] = "cli"
        headers["authorization"] = f"Bearer {resolved.api_key}"
        return {**headers, **request_headers(resolved)}
    if betas:
        headers["anthropic-beta"] = ",".join(betas)
    if request.session_id and compat["sendSessionAffinityHeaders"]:
        headers["x-session-affinity"] = request.session_id
    return {**headers, **request_headers(resolved)}


def _opener(resolved: ResolvedModel, request: ModelRequest) -> Callable[[], Iterable[Any]]:
    """What opens the request's stream (raises ProviderError before any is sent)."""
    compat = get_compat(resolved.model)
    headers = _headers(resolved, request, compat)
    key = require_key(resolved, headers, "x-api-key")
    params = build_params(resolved, request)
    client = endpoint_client(
        API, resolved, key, headers, lambda: _make_client(resolved, key, headers)
    )
    return post_stream(
        client, "/v1/messages", params, Message, anthropic.Stream[RawMessageStreamEvent]
    )


def _make_client(resolved: ResolvedModel, key: str, headers: dict[str, str]) -> anthropic.Anthropic:
    """The key goes in ``x-api-key`` as pi's SDK sends it (this Python SDK would send it
    as a Bearer token). The explicit key also keeps the SDK from reading credentials of
    its own from the environment."""
    sent = dict(headers)
    bearer = any(k.lower() == "authorization" for k in sent) and is_oauth(key)
    if key != "unused" and not bearer and not any(k.lower() == "x-api-key" for k in sent):
        sent["x-api-key"] = key
    client = anthropic.Anthropic(
        api_key=key,
        base_url=resolved.model.get("baseUrl"),
        default_headers=sent,
        timeout=resolved.timeout,
        max_retries=0,
    )
    client.api_key = None  # no Authorization header of the SDK's own
    return client


STOP = {
    "end_turn": "stop",
    "max_tokens": "length",
    "tool_use": "toolUse",
    "pause_turn": "stop",
    "stop_sequence": "stop",
}


def _get(obj: Any, name: str, default: Any = None) -> Any:
    if obj is None:
        return default
    if isinstance(obj, dict):
        return obj.get(name, default)
    value = getattr(obj, name, None)
    if value is None:
        value = (getattr(obj, "model_extra", None) or {}).get(name, default)
    return default if value is None else value


class _State(StreamAssembly):
    def __init__(
        self,
        message: dict[str, Any],
        on_delta: DeltaSink | None,
        oauth_tools: list[dict[str, Any]] | None = None,
    ):
        super().__init__(message, on_delta)
        self.oauth_tools = oauth_tools
        self.by_index: dict[int, dict[str, Any]] = {}
        self.started = False
        self.stopped = False

    @classmethod
    def start(
        cls, resolved: ResolvedModel, request: ModelRequest, on_delta: DeltaSink | None
    ) -> _State:
        """With an OAuth token, tool names come back as Claude Code's."""
        oauth_tools = request.tools if is_oauth(resolved.api_key) else None
        return cls(new_message(resolved), on_delta, oauth_tools)

    def incomplete(self) -> str | None:
        if self.started and not self.stopped:
            return "Anthropic stream ended before message_stop"
        return None

    def _usage(self, usage: Any, *, start: bool) -> None:
        u = self.message["usage"]
        fields = (
            ("input", "input_tokens"),
            ("output", "output_tokens"),
            ("cacheRead", "cache_read_input_tokens"),
            ("cacheWrite", "cache_creation_input_tokens"),
        )
        for ours, theirs in fields:
            value = _get(usage, theirs)
            if start:
                u[ours] = value or 0
            elif value is not None:
                u[ours] = value
        u["totalTokens"] = u["input"] + u["output"] + u["cacheRead"] + u["cacheWrite"]

    def feed(self, event: Any) -> None:
        kind = _get(event, "type")
        if kind == "message_start":
            self.started = True
            self._usage(_get(_get(event, "message"), "usage"), start=True)
        elif kind == "content_block_start":
            self._start_block(_get(event, "index"), _get(event, "content_block"))
        elif kind == "content_block_delta":
            block = self.by_index.get(_get(event, "index"))
            if block is not None:
                self._delta(block, _get(event, "delta"))
        elif kind == "content_block_stop":
            block = self.by_index.get(_get(event, "index"))
            if block is not None and block["type"] == "toolCall":
                self.parse_arguments(block)
        elif kind == "message_delta":
            self._stop_reason(_get(event, "delta"))
            usage = _get(event, "usage")
            if usage is not None:
                self._usage(usage, start=False)
        elif kind == "message_stop":
            self.stopped = True

    def _start_block(self, index: int, cb: Any) -> None:
        ctype = _get(cb, "type")
        block: dict[str, Any]
        if ctype == "text":
            block = {"type": "text", "text": ""}
        elif ctype == "thinking":
            block = {"type": "thinking", "thinking": "", "thinkingSignature": ""}
        elif ctype == "redacted_thinking":
            block = {
                "type": "thinking",
                "thinking": REDACTED_TEXT,
                "thinkingSignature": _get(cb, "data", ""),
                "redacted": True,
            }
        elif ctype == "tool_use":
            name = _get(cb, "name", "")
            if self.oauth_tools is not None:
                name = from_claude_code(name, self.oauth_tools)
            block = {
                "type": "toolCall",
                "id": _get(cb, "id", ""),
                "name": name,
                "arguments": _get(cb, "input") or {},
            }
        else:
            return
        self.by_index[index] = self.add_block(block)

    def _delta(self, block: dict[str, Any], delta: Any) -> None:
        dtype = _get(delta, "type")
        if dtype == "text_delta" and block["type"] == "text":
            self.append(block, "text", _get(delta, "text", ""))
        elif dtype == "thinking_delta" and block["type"] == "thinking":
            self.append(block, "thinking", _get(delta, "thinking", ""))
        elif dtype == "input_json_delta" and block["type"] == "toolCall":
            self.add_arguments(block, _get(delta, "partial_json", ""))
        elif dtype == "signature_delta" and block["type"] == "thinking":
            block["thinkingSignature"] = (block.get("thinkingSignature") or "") + _get(
                delta, "signature", ""
            )

    def _stop_reason(self, delta: Any) -> None:
        reason = _get(delta, "stop_reason")
        if not reason:
            return
        if reason in STOP:
            self.message["stopReason"] = STOP[reason]
            return
        self.message["stopReason"] = "error"
        if reason == "refusal":
            details = _get(delta, "stop_details")
            self.error = _get(details, "explanation") or (
                "The model refused to complete the request"
            )
        elif reason == "sensitive":
            self.error = "An unknown error occurred"
        else:
            self.error = f"Unhandled stop reason: {reason}"


# What providers.stream_for hands out for this API.
stream = api_stream(
    _State, _opener, lambda exc, resolved: from_sdk(exc, resolved.provider, anthropic)
)
