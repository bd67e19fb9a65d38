"""pi's agent-folder formats (sessions_app.core.pi_config), written from pi's docs:
docs/models.md (value resolution, merge rules, overrides), docs/settings.md, and the
auth.json shapes of docs/providers.md."""

import json
import os
import time

from sessions_app.core import pi_config
from sessions_app.core.pi_config import (
    PiSettings,
    WatchedJson,
    clamp_thinking_level,
    merge_models,
    model_matches,
    parse_auth,
    resolve_value,
    supported_thinking_levels,
)

ENV = {"MY_API_KEY": "k-123", "KEY_PREFIX": "pre", "KEY_SUFFIX": "suf", "FOO": "foo"}

BUILTINS = [
    {
        "id": "claude-a",
        "name": "Claude A",
        "api": "anthropic-messages",
        "provider": "anthropic",
        "baseUrl": "https://api.anthropic.com",
        "reasoning": True,
        "input": ["text", "image"],
        "cost": {"input": 3, "output": 15, "cacheRead": 0.3, "cacheWrite": 3.75},
        "contextWindow": 200000,
        "maxTokens": 64000,
    },
    {
        "id": "claude-b",
        "name": "Claude B",
        "api": "anthropic-messages",
        "provider": "anthropic",
        "baseUrl": "https://api.anthropic.com",
        "reasoning": False,
        "input": ["text"],
        "cost": {"input": 1, "output": 5, "cacheRead": 0.1, "cacheWrite": 1.25},
        "contextWindow": 200000,
        "maxTokens": 8192,
    },
    {
        "id": "anthropic/claude-sonnet-4",
        "name": "Sonnet via OR",
        "api": "openai-completions",
        "provider": "openrouter",
        "baseUrl": "https://openrouter.ai/api/v1",
        "reasoning": True,
        "input": ["text"],
        "cost": {"input": 3, "output": 15, "cacheRead": 0.3, "cacheWrite": 3.75},
        "contextWindow": 200000,
        "maxTokens": 64000,
        "compat": {"openRouterRouting": {"order": ["anthropic"]}},
    },
]


# ------------------------------------------------------------------ value resolution


def test_env_interpolation_forms():
    assert resolve_value("$MY_API_KEY", ENV) == "k-123"
    assert resolve_value("${MY_API_KEY}", ENV) == "k-123"
    assert resolve_value("${KEY_PREFIX}_${KEY_SUFFIX}", ENV) == "pre_suf"
    # $FOO_BAR is the variable FOO_BAR (missing: unresolved); ${FOO}_BAR is FOO + "_BAR".
    assert resolve_value("$FOO_BAR", ENV) is None
    assert resolve_value("${FOO}_BAR", ENV) == "foo_BAR"
    assert resolve_value("Bearer $MY_API_KEY!", ENV) == "Bearer k-123!"


def test_escapes_and_literals():
    assert resolve_value("$$literal-dollar-prefix", ENV) == "$literal-dollar-prefix"
    assert resolve_value("$!literal-bang-prefix", ENV) == "!literal-bang-prefix"
    # A plain uppercase string is a literal, not a variable.
    assert resolve_value("MY_API_KEY", ENV) == "MY_API_KEY"
    assert resolve_value("sk-abc", ENV) == "sk-abc"
    assert resolve_value("${not a name}", ENV) == "${not a name}"
    assert resolve_value("cost $5", ENV) == "cost $5"


def test_missing_variable_leaves_the_value_unresolved_and_is_named():
    assert resolve_value("${KEY_PREFIX}_$NOPE", ENV) is None
    why = pi_config.describe_unresolved("$NOPE", "API key", ENV)
    assert why.endswith("environment variable: NOPE")
    assert not pi_config.is_configured("$NOPE", ENV)
    assert pi_config.is_configured("$MY_API_KEY", ENV)
    assert pi_config.is_configured("!anything", ENV)  # commands are not run to check


def test_command_values(tmp_path):
    assert resolve_value("!echo '  from-command  '", {}) == "from-command"
    assert resolve_value("!exit 3", {}) is None  # failing command: unresolved
    assert resolve_value("!true", {}) is None  # no output: unresolved
    # The whole value after "!" runs in a shell (pipes and quotes work).
    assert resolve_value("!printf 'a b' | tr ' ' '-'", {}) == "a-b"
    why = pi_config.describe_unresolved("!exit 3", "API key", {})
    assert "shell command" in why and "exit 3" not in why  # a command may hold a secret


# ------------------------------------------------------------------ models.json


def test_no_file_gives_the_builtins():
    merged = merge_models(BUILTINS, None)
    assert [m["id"] for m in merged.models] == [m["id"] for m in BUILTINS]
    assert merged.error is None


def test_builtin_provider_baseurl_and_compat_apply_to_all_its_models():
    config = {"providers": {"anthropic": {"baseUrl": "https://proxy.example/v1"}}}
    merged = merge_models(BUILTINS, config)
    assert {m["baseUrl"] for m in merged.models if m["provider"] == "anthropic"} == {
        "https://proxy.example/v1"
    }
    assert merged.find("openrouter", "anthropic/claude-sonnet-4")["baseUrl"].startswith(
        "https://openrouter.ai"
    )


def test_custom_model_with_same_id_replaces_the_builtin_and_new_ids_are_added():
    config = {
        "providers": {
            "anthropic": {
                "models": [
                    {"id": "claude-a", "contextWindow": 50000},
                    {"id": "claude-new", "reasoning": True},
                ]
            }
        }
    }
    merged = merge_models(BUILTINS, config)
    a = merged.find("anthropic", "claude-a")
    # Replaced, not patched: defaults fill what the custom entry leaves out.
    assert a["contextWindow"] == 50000
    assert a["maxTokens"] == 16384
    assert a["cost"] == {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}
    assert a["name"] == "claude-a"
    # api and baseUrl from the built-in provider when neither the model nor provider set them.
    assert a["api"] == "anthropic-messages"
    assert a["baseUrl"] == "https://api.anthropic.com"
    assert merged.find("anthropic", "claude-new")["reasoning"] is True
    assert merged.find("anthropic", "claude-b")["maxTokens"] == 8192  # kept
    assert ("anthropic", "claude-a") in merged.custom


def test_custom_provider_defaults():
    config = {
        "providers": {
            "ollama": {
                "baseUrl": "http://localhost:11434/v1",
                "api": "openai-completions",
                "apiKey": "ollama",
                "compat": {"supportsDeveloperRole": False},
                "models": [
                    {"id": "llama3.1:8b"},
                    {
                        "id": "gpt-oss:20b",
                        "reasoning": True,
                        "compat": {"maxTokensField": "max_tokens"},
                    },
                ],
            }
        }
    }
    merged = merge_models(BUILTINS, config)
    llama = merged.find("ollama", "llama3.1:8b")
    assert llama == {
        "id": "llama3.1:8b",
        "name": "llama3.1:8b",
        "api": "openai-completions",
        "provider": "ollama",
        "baseUrl": "http://localhost:11434/v1",
        "reasoning": False,
        "input": ["text"],
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
        "contextWindow": 128000,
        "maxTokens": 16384,
        "compat": {"supportsDeveloperRole": False},
    }
    # Model-level compat merges over provider-level compat.
    assert merged.find("ollama", "gpt-oss:20b")["compat"] == {
        "supportsDeveloperRole": False,
        "maxTokensField": "max_tokens",
    }
    assert merged.requests["ollama"].api_key == "ollama"


def test_model_overrides_patch_builtins_and_ignore_unknown_ids():
    config = {
        "providers": {
            "openrouter": {
                "modelOverrides": {
                    "anthropic/claude-sonnet-4": {
                        "name": "Sonnet (Bedrock route)",
                        "cost": {"output": 20},
                        "compat": {"openRouterRouting": {"only": ["amazon-bedrock"]}},
                        "headers": {"x-route": "$FOO"},
                    },
                    "does/not-exist": {"name": "ignored"},
                }
            }
        }
    }
    merged = merge_models(BUILTINS, config)
    m = merged.find("openrouter", "anthropic/claude-sonnet-4")
    assert m["name"] == "Sonnet (Bedrock route)"
    assert m["cost"] == {"input": 3, "output": 20, "cacheRead": 0.3, "cacheWrite": 3.75}
    # Routing objects merge one level deeper.
    assert m["compat"]["openRouterRouting"] == {"order": ["anthropic"], "only": ["amazon-bedrock"]}
    assert merged.find("openrouter", "does/not-exist") is None
    assert merged.model_headers[("openrouter", "anthropic/claude-sonnet-4")] == {"x-route": "$FOO"}


def test_custom_models_merge_after_overrides():
    config = {
        "providers": {
            "anthropic": {
                "modelOverrides": {"claude-b": {"contextWindow": 1000}},
                "models": [{"id": "claude-b", "contextWindow": 2000}],
            }
        }
    }
    assert merge_models(BUILTINS, config).find("anthropic", "claude-b")["contextWindow"] == 2000


def test_invalid_files_keep_the_builtins_with_an_error():
    # A custom provider needs a baseUrl and an api.
    for config in (
        {"providers": {"x": {"api": "openai-completions", "models": [{"id": "m"}]}}},
        {"providers": {"x": {"baseUrl": "http://h", "models": [{"id": "m"}]}}},
        {"providers": {"x": {}}},
        {
            "providers": {
                "x": {
                    "baseUrl": "http://h",
                    "api": "openai-completions",
                    "models": [{"id": "m", "contextWindow": 0}],
                }
            }
        },
        {"nope": 1},
    ):
        merged = merge_models(BUILTINS, config)
        assert merged.error, config
        assert len(merged.models) == len(BUILTINS)
    merged = merge_models(BUILTINS, None, "Failed to parse models.json: x")
    assert merged.error.startswith("Failed to parse")


def test_request_config_headers_and_auth_header():
    config = {
        "providers": {
            "proxy": {
                "baseUrl": "https://proxy.example/v1",
                "api": "anthropic-messages",
                "apiKey": "$MY_API_KEY",
                "authHeader": True,
                "headers": {"x-portkey-api-key": "$FOO"},
                "models": [{"id": "m", "headers": {"x-model": "1"}}],
            }
        }
    }
    merged = merge_models(BUILTINS, config)
    request = merged.requests["proxy"]
    assert request.api_key == "$MY_API_KEY" and request.auth_header
    assert request.headers == {"x-portkey-api-key": "$FOO"}
    assert merged.model_headers[("proxy", "m")] == {"x-model": "1"}
    assert "headers" not in merged.find("proxy", "m")
    assert "MY_API_KEY" not in repr(request)


def test_json_comments_are_accepted(tmp_path):
    path = tmp_path / "models.json"
    path.write_text(
        '{\n // a comment\n "providers": {"a": {"baseUrl": "http://x//y"}} /* end */\n}'
    )
    data, error = WatchedJson(path, comments=True).read()
    assert error is None and data["providers"]["a"]["baseUrl"] == "http://x//y"


def test_watched_file_is_reread_when_it_changes(tmp_path):
    path = tmp_path / "settings.json"
    watched = WatchedJson(path)
    assert watched.read() == (None, None)
    path.write_text(json.dumps({"defaultModel": "a"}))
    assert watched.read()[0] == {"defaultModel": "a"}
    path.write_text(json.dumps({"defaultModel": "bb"}))
    stamp = time.time() + 5
    os.utime(path, (stamp, stamp))
    assert watched.read()[0] == {"defaultModel": "bb"}
    path.write_text("{broken")
    os.utime(path, (stamp + 5, stamp + 5))
    data, error = watched.read()
    assert data is None and "Failed to parse settings.json" in error


# ------------------------------------------------------------------ settings.json, auth.json


def test_settings_keys():
    s = PiSettings.parse(
        {
            "defaultProvider": "anthropic",
            "defaultModel": "claude-sonnet-4-20250514",
            "defaultThinkingLevel": "medium",
            "enabledModels": ["claude-*", "gpt-4o"],
            "compaction": {"enabled": False, "reserveTokens": 8192, "keepRecentTokens": -1},
            "branchSummary": {"reserveTokens": 4096, "skipPrompt": True},
            "theme": "dark",
        }
    )
    assert (s.default_provider, s.default_model) == ("anthropic", "claude-sonnet-4-20250514")
    assert s.default_thinking_level == "medium"
    assert s.enabled_models == ("claude-*", "gpt-4o")
    assert s.compaction == {"enabled": False, "reserveTokens": 8192}  # bad value dropped
    assert s.branch_summary == {"reserveTokens": 4096}
    assert PiSettings.parse({"defaultThinkingLevel": "extreme"}).default_thinking_level is None
    assert PiSettings.parse(None) == PiSettings()


def test_enabled_model_patterns():
    assert model_matches("claude-*", "anthropic", "claude-a")
    assert model_matches("anthropic/claude-*", "anthropic", "claude-a")
    assert not model_matches("gpt-4o", "openai", "gpt-4o-mini")
    assert model_matches("gemini-2*", "google", "gemini-2.5-pro")
    assert model_matches("anthropic/claude-a:high", "anthropic", "claude-a")


def test_auth_entries():
    entries = parse_auth(
        {
            "anthropic": {"type": "api_key", "key": "$MY_API_KEY"},
            "openai-codex": {"type": "oauth", "access": "x", "refresh": "y", "expires": 1},
            "broken": {"type": "api_key"},
            "weird": "text",
        }
    )
    assert set(entries) == {"anthropic", "openai-codex"}
    assert entries["anthropic"].type == "api_key"
    assert entries["openai-codex"].type == "oauth"
    assert "MY_API_KEY" not in repr(entries["anthropic"])


def test_thinking_levels_as_pi_supports_them():
    assert supported_thinking_levels({"reasoning": False}) == ["off"]
    assert supported_thinking_levels({"reasoning": True}) == [
        "off",
        "minimal",
        "low",
        "medium",
        "high",
    ]
    fable = {"reasoning": True, "thinkingLevelMap": {"off": None, "xhigh": "xhigh", "max": "max"}}
    assert supported_thinking_levels(fable) == ["minimal", "low", "medium", "high", "xhigh", "max"]
    assert clamp_thinking_level(fable, "off") == "minimal"
    assert clamp_thinking_level({"reasoning": True}, "max") == "high"
    assert clamp_thinking_level({"reasoning": False}, "high") == "off"


def test_the_merge_is_one_level_deep_and_the_projects_value_wins():
    base = {"a": 1, "nested": {"x": 1, "y": 2}, "list": [1, 2], "gone": {"k": 1}}
    over = {"nested": {"y": 3}, "list": [9], "gone": None, "new": {"z": 1}}
    assert pi_config.merge_settings(base, over) == {
        "a": 1,
        "nested": {"x": 1, "y": 3},
        "list": [9],
        "gone": None,
        "new": {"z": 1},
    }
