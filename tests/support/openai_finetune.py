"""OpenAI's chat fine-tuning line format (platform.openai.com/docs/guides/fine-tuning,
"Preparing your dataset", and the API reference's "Training format for chat models"),
as a JSON schema: `messages` of system, user, assistant (text and/or tool calls, an
optional `weight` of 0 or 1) and tool messages, and optional function `tools`."""

_TEXT_PART = {
    "type": "object",
    "required": ["type", "text"],
    "properties": {"type": {"const": "text"}, "text": {"type": "string"}},
}
_CONTENT = {"anyOf": [{"type": "string"}, {"type": "array", "items": _TEXT_PART, "minItems": 1}]}
_TOOL_CALL = {
    "type": "object",
    "required": ["id", "type", "function"],
    "additionalProperties": False,
    "properties": {
        "id": {"type": "string"},
        "type": {"const": "function"},
        "function": {
            "type": "object",
            "required": ["name", "arguments"],
            "additionalProperties": False,
            "properties": {"name": {"type": "string"}, "arguments": {"type": "string"}},
        },
    },
}
_MESSAGE = {
    "oneOf": [
        {
            "type": "object",
            "required": ["role", "content"],
            "additionalProperties": False,
            "properties": {
                "role": {"enum": ["system", "user"]},
                "content": _CONTENT,
                "name": {"type": "string"},
            },
        },
        {
            "type": "object",
            "required": ["role"],
            "additionalProperties": False,
            "properties": {
                "role": {"const": "assistant"},
                "content": {"anyOf": [_CONTENT, {"type": "null"}]},
                "tool_calls": {"type": "array", "items": _TOOL_CALL, "minItems": 1},
                "name": {"type": "string"},
                "weight": {"enum": [0, 1]},
            },
            "anyOf": [{"required": ["content"]}, {"required": ["tool_calls"]}],
        },
        {
            "type": "object",
            "required": ["role", "content", "tool_call_id"],
            "additionalProperties": False,
            "properties": {
                "role": {"const": "tool"},
                "content": _CONTENT,
                "tool_call_id": {"type": "string"},
            },
        },
    ]
}
CHAT_FINETUNE_LINE = {
    "type": "object",
    "required": ["messages"],
    "additionalProperties": False,
    "properties": {
        "messages": {"type": "array", "items": _MESSAGE, "minItems": 1},
        "tools": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["type", "function"],
                "additionalProperties": False,
                "properties": {
                    "type": {"const": "function"},
                    "function": {
                        "type": "object",
                        "required": ["name"],
                        "additionalProperties": False,
                        "properties": {
                            "name": {"type": "string"},
                            "description": {"type": "string"},
                            "parameters": {"type": "object"},
                        },
                    },
                },
            },
        },
        "parallel_tool_calls": {"type": "boolean"},
    },
}
