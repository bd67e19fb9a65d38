"""The tiktoken counter must work with no network and no pre-filled tiktoken cache."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from sessions_app.core import tokenizer

REPO_ROOT = Path(__file__).resolve().parents[2]

# Blocks every way Python could reach the network, then proves the block works.
_NO_NETWORK_PRELUDE = textwrap.dedent(
    """
    import socket

    class NetworkBlocked(OSError):
        pass

    def _blocked(*args, **kwargs):
        raise NetworkBlocked("network access is disabled in this test")

    socket.socket.connect = _blocked
    socket.socket.connect_ex = _blocked
    socket.create_connection = _blocked
    socket.getaddrinfo = _blocked

    try:
        socket.create_connection(("openaipublic.blob.core.windows.net", 443), timeout=1)
    except NetworkBlocked:
        pass
    else:
        raise SystemExit("network block is not effective")
    """
)


def _run_offline(script: str, cache_dir: Path) -> dict:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("TIKTOKEN_CACHE_DIR", "DATA_GYM_CACHE_DIR", "PIWEB_TIKTOKEN_CACHE")
    }
    # The cache folder reaches the tokenizer as the scripts' CACHE argument, as the
    # PIWEB_TIKTOKEN_CACHE setting does (the core reads no environment value of its own).
    script = f"CACHE = {str(cache_dir)!r}\n" + textwrap.dedent(script)
    env["PYTHONPATH"] = str(REPO_ROOT)
    # Point the default tiktoken cache (tempdir/data-gym-cache) somewhere empty too.
    env["TMPDIR"] = str(cache_dir.parent)
    proc = subprocess.run(
        [sys.executable, "-c", _NO_NETWORK_PRELUDE + script],
        cwd=str(REPO_ROOT),
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_counts_offline_with_empty_cache(tmp_path):
    cache = tmp_path / "tk-cache"
    result = _run_offline(
        """
        import json, os
        from sessions_app.core import tokenizer as t
        out = {
            "o200k_ids": t.get_encoding("o200k_base", CACHE).encode("hello world"),
            "cl100k_ids": t.get_encoding("cl100k_base", CACHE).encode("hello world"),
            "o200k_hello": t.count_tokens("hello world", model="gpt-4o", cache=CACHE),
            "cl100k_hello": t.count_tokens("hello world", model="gpt-4", cache=CACHE),
            "cl100k_cookbook": t.count_tokens(
                "tiktoken is great!", model="gpt-3.5-turbo", cache=CACHE
            ),
            "default_model": t.count_tokens("hello world", cache=CACHE),
            "env_after": os.environ.get("TIKTOKEN_CACHE_DIR"),
            "files": sorted(os.listdir(t.cache_dir("o200k_base", CACHE))),
        }
        print(json.dumps(out))
        """,
        cache,
    )
    # Known token ids for "hello world".
    assert result["o200k_ids"] == [24912, 2375]
    assert result["cl100k_ids"] == [15339, 1917]
    assert result["o200k_hello"] == 2
    assert result["cl100k_hello"] == 2
    # OpenAI cookbook example: "tiktoken is great!" is 6 cl100k tokens.
    assert result["cl100k_cookbook"] == 6
    assert result["default_model"] == 2
    # The temporary TIKTOKEN_CACHE_DIR override does not leak.
    assert result["env_after"] is None
    # Files are stored under tiktoken's own cache key: sha1 of the blob URL.
    assert result["files"] == [
        "9b5ad71b2ce5302211f9c61530b329a4922fc6a4",  # cl100k_base
        "fb374d419588a4632f3f557e76b4b70aebbca790",  # o200k_base
    ]


def test_prime_cache_makes_plain_tiktoken_work_offline(tmp_path):
    cache = tmp_path / "tk-cache"
    primed = tmp_path / "primed"
    result = _run_offline(
        f"""
        import json, os, tiktoken
        from sessions_app.core import tokenizer as t
        target = t.prime_tiktoken_cache({str(primed)!r})
        os.environ["TIKTOKEN_CACHE_DIR"] = target
        out = {{
            "target": target,
            "cl100k": tiktoken.get_encoding("cl100k_base").encode("hello world"),
            "o200k": tiktoken.encoding_for_model("gpt-4o").encode("hello world"),
        }}
        print(json.dumps(out))
        """,
        cache,
    )
    assert result == {"target": str(primed), "cl100k": [15339, 1917], "o200k": [24912, 2375]}


def test_corrupted_cache_file_is_repaired_offline(tmp_path):
    cache = tmp_path / "tk-cache"
    cache.mkdir()
    (cache / "fb374d419588a4632f3f557e76b4b70aebbca790").write_bytes(b"garbage\n")
    result = _run_offline(
        """
        import json
        from sessions_app.core import tokenizer as t
        print(json.dumps({"n": t.count_tokens("hello world", model="gpt-4o", cache=CACHE)}))
        """,
        cache,
    )
    assert result["n"] == 2


def test_tiktoken_hash_check_rejects_wrong_data_offline(tmp_path):
    cache = tmp_path / "tk-cache"
    result = _run_offline(
        """
        import json
        from sessions_app.core import tokenizer as t
        t._bundled_bytes = lambda name: b"aGVsbG8= 0\\n"  # valid format, wrong hash
        try:
            t.get_encoding("o200k_base", CACHE)
        except t.TokenizerUnavailable as exc:
            print(json.dumps({"error": str(exc)}))
        else:
            print(json.dumps({"error": None}))
        """,
        cache,
    )
    assert result["error"] is not None
    assert "o200k_base" in result["error"]


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        ("gpt-4o", "o200k_base"),
        ("gpt-4o-mini", "o200k_base"),
        ("chatgpt-4o-latest", "o200k_base"),
        ("gpt-4.1-nano", "o200k_base"),
        ("gpt-5", "o200k_base"),
        ("gpt-5-codex", "o200k_base"),
        ("o1", "o200k_base"),
        ("o3-mini", "o200k_base"),
        ("o4-mini", "o200k_base"),
        ("openai/gpt-4o", "o200k_base"),
        ("llama3.1:8b", "o200k_base"),
        ("", "o200k_base"),
        (None, "o200k_base"),
        ("gpt-4", "cl100k_base"),
        ("gpt-4-turbo", "cl100k_base"),
        ("gpt-4-0613", "cl100k_base"),
        ("GPT-3.5-Turbo", "cl100k_base"),
        ("text-embedding-3-small", "cl100k_base"),
        ("text-embedding-ada-002", "cl100k_base"),
        ("openrouter/openai/gpt-3.5-turbo", "cl100k_base"),
    ],
)
def test_encoding_name_for_model(model, expected):
    assert tokenizer.encoding_name_for_model(model) == expected


def test_encoding_for_model_is_cached():
    assert tokenizer.encoding_for_model("gpt-4o") is tokenizer.encoding_for_model("o3")
    assert tokenizer.encoding_for_model("gpt-4").name == "cl100k_base"


def test_unsupported_encoding():
    with pytest.raises(ValueError):
        tokenizer.get_encoding("p50k_base")


def test_count_tokens_special_token_text_is_plain_text():
    # Must not raise on text that looks like a special token.
    assert tokenizer.count_tokens("<|endoftext|>") > 1
    assert tokenizer.count_tokens("") == 0


def test_count_message_tokens_shapes():
    hw = tokenizer.count_tokens("hello world")
    assert tokenizer.count_message_tokens({"role": "user", "content": "hello world"}) == hw
    assert (
        tokenizer.count_message_tokens(
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "hello world"},
                    {"type": "image", "data": "AAAA", "mimeType": "image/png"},
                ],
            }
        )
        == hw + tokenizer.IMAGE_TOKEN_ESTIMATE
    )
    args = {"path": "a.py", "n": 1}
    assistant = {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "hello world"},
            {"type": "text", "text": "hello world"},
            {"type": "toolCall", "id": "c1", "name": "read", "arguments": args},
        ],
        "stopReason": "toolUse",
    }
    expected = (
        2 * hw + tokenizer.count_tokens("read") + tokenizer.count_tokens('{"path":"a.py","n":1}')
    )
    assert tokenizer.count_message_tokens(assistant) == expected
    tool_result = {
        "role": "toolResult",
        "toolCallId": "c1",
        "toolName": "read",
        "content": [{"type": "text", "text": "hello world"}],
        "isError": False,
    }
    assert tokenizer.count_message_tokens(tool_result) == hw
    bash = {"role": "bashExecution", "command": "ls", "output": "a.py\n", "exitCode": 0}
    assert tokenizer.count_message_tokens(bash) == tokenizer.count_tokens("lsa.py\n")
    summary = {"role": "compactionSummary", "summary": "hello world", "tokensBefore": 10}
    assert tokenizer.count_message_tokens(summary) == hw
    assert tokenizer.count_message_tokens({"role": "branchSummary", "summary": ""}) == 0
    # cl100k and o200k disagree on some text; the model argument is honoured.
    text = "Здравствуй, мир! 你好，世界"
    msg = {"role": "user", "content": text}
    assert tokenizer.count_tokens(text, "gpt-4") != tokenizer.count_tokens(text, "gpt-4o")
    assert tokenizer.count_message_tokens(msg, model="gpt-4") == tokenizer.count_tokens(
        text, "gpt-4"
    )
    assert tokenizer.count_message_tokens(msg, model="gpt-4o") == tokenizer.count_tokens(
        text, "gpt-4o"
    )
