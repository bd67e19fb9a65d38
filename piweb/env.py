"""Typed reading of environment values, for piweb/settings.py.

Every value piweb takes from the environment is declared below (name, type, default, one
line of help) and read by settings.py through `get`; docs/configuration.md's table is
written from the declarations (`manage.py configuration_table`). A
value that is set but does not parse (a boolean that is not one of the words below, a
number that is not a number, a choice outside its list, JSON that is not JSON) stops
startup with ImproperlyConfigured naming the variable, instead of being read as False or
as the default. A variable set to the empty string counts as not set.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.core.exceptions import ImproperlyConfigured

TRUE = ("1", "true", "yes", "on")
FALSE = ("0", "false", "no", "off")


class EnvError(ImproperlyConfigured):
    """An environment value that does not parse; the message names the variable."""


def raw(name: str) -> str | None:
    """The variable's value, or None when it is unset or empty."""
    value = os.environ.get(name)
    return value if value not in (None, "") else None


def set_value(name: str) -> str | None:
    """The value as it is, an empty one included; None only when the variable is unset
    (for the few variables where "set but empty" means something of its own)."""
    return os.environ.get(name)


def text(name: str, default: str = "") -> str:
    value = raw(name)
    return default if value is None else value


def boolean(name: str, default: bool = False) -> bool:
    value = raw(name)
    if value is None:
        return default
    word = value.strip().lower()
    if word in TRUE:
        return True
    if word in FALSE:
        return False
    raise EnvError(f"{name}={value!r} is not a boolean: use one of {', '.join(TRUE + FALSE)}.")


def integer(name: str, default: int, *, minimum: int | None = None) -> int:
    value = raw(name)
    if value is None:
        return default
    try:
        number = int(value.strip())
    except ValueError:
        raise EnvError(f"{name}={value!r} is not a whole number.") from None
    return _at_least(name, number, minimum)


def decimal(name: str, default: float, *, minimum: float | None = None) -> float:
    value = raw(name)
    if value is None:
        return default
    try:
        number = float(value.strip())
    except ValueError:
        raise EnvError(f"{name}={value!r} is not a number.") from None
    if number != number or number in (float("inf"), float("-inf")):
        raise EnvError(f"{name}={value!r} is not a finite number.")
    return _at_least(name, number, minimum)


def _at_least(name, number, minimum):
    if minimum is not None and number < minimum:
        raise EnvError(f"{name}={number!r} is below its minimum, {minimum}.")
    return number


def choice(name: str, default: str, choices: tuple[str, ...]) -> str:
    """One of `choices` (compared stripped and lower-cased)."""
    value = raw(name)
    if value is None:
        return default
    word = value.strip().lower()
    if word not in choices:
        raise EnvError(f"{name} must be one of {', '.join(choices)}, not {value!r}.")
    return word


def items(name: str, default: str = "") -> list[str]:
    """A comma-separated list (blank items dropped)."""
    return [item.strip() for item in text(name, default).split(",") if item.strip()]


def path(name: str, default: str | Path) -> Path:
    return Path(text(name, str(default)))


def json_object(name: str) -> dict:
    """A JSON object, {} when unset."""
    value = raw(name)
    if value is None:
        return {}
    try:
        parsed = json.loads(value)
    except ValueError as exc:
        raise EnvError(f"{name} is not valid JSON: {exc}.") from None
    if not isinstance(parsed, dict):
        raise EnvError(f"{name} must be a JSON object ({{...}}), not {type(parsed).__name__}.")
    return parsed


def integer_or_off(name: str, default: int) -> int | None:
    """A whole number, or None for "off"."""
    value = raw(name)
    if value is not None and value.strip().lower() == "off":
        return None
    return integer(name, default)


def text_or_empty(name: str, default: str = "") -> str | None:
    """The value as set, an empty one included ("set but empty" means something of its
    own); None when unset, so the caller works out the default."""
    return set_value(name)


# --------------------------------------------------------------------------- declarations


@dataclass(frozen=True)
class Var:
    """One environment value piweb reads: its name, type, default and one line of help.

    `shown` is the default as the configuration table shows it, where settings.py works
    the default out at startup (a folder under the var folder, a value that depends on
    another); `default` is then what `get` falls back to unless settings.py passes its own."""

    name: str
    type: str
    default: Any
    help: str
    shown: str = ""
    choices: tuple[str, ...] = ()
    minimum: float | None = None

    def shown_default(self) -> str:
        if self.shown:
            return self.shown
        if self.type == "boolean":
            return "on" if self.default else "off"
        if self.default in ("", None):
            return "unset"
        if isinstance(self.default, str):
            return f"`{self.default}`"
        if isinstance(self.default, float) and self.default.is_integer():
            return str(int(self.default))  # 1024, not 1024.0
        return str(self.default)


_READERS: dict[str, Callable[..., Any]] = {
    "text": text,
    "boolean": boolean,
    "integer": integer,
    "decimal": decimal,
    "choice": choice,
    "list": items,
    "path": path,
    "json": lambda name, default: json_object(name),
    "integer or off": integer_or_off,
    "text, empty allowed": text_or_empty,
}

_SERVER = "Server"
_STORAGE = "Folders"
_WORKSPACES = "Workspaces and snapshots"
_SANDBOX = "Sandbox and limits"
_WORKERS = "Workers, queues and jobs"
_MODELS = "Models"
_FOLLOW = "Following pi's folders"
_PAGES = "Pages and uploads"
_LOGIN = "Log-in throttling"

GROUPS: dict[str, list[Var]] = {
    _SERVER: [
        Var(
            "DATABASE_URL",
            "text",
            "",
            "the database, e.g. `postgres://user:pw@host:5432/piweb`",
            shown="`sqlite:///var/piweb.sqlite3`",
        ),
        Var(
            "REDIS_URL",
            "text",
            "",
            "Celery broker and channel layer, e.g. `redis://host:6379/0`",
            shown="embedded Redis on `var/redis.sock`",
        ),
        Var(
            "SECRET_KEY",
            "text",
            "",
            "Django's secret key",
            shown="generated once into `var/secret_key`",
        ),
        Var(
            "ALLOWED_HOSTS",
            "list",
            "127.0.0.1,localhost,[::1]",
            "host names served; also the websocket origin check",
        ),
        Var(
            "CSRF_TRUSTED_ORIGINS",
            "list",
            "",
            "origins trusted for CSRF: add `https://piweb.example.com` behind a proxy",
        ),
        Var(
            "PIWEB_SECURE_COOKIES",
            "boolean",
            False,
            "secure session and CSRF cookies: set `1` behind HTTPS",
        ),
        Var("HOST", "text", "127.0.0.1", "where `make run` listens"),
        Var("PORT", "integer", 8000, "the port `make run` listens on"),
        Var("DEBUG", "boolean", False, "Django's debug mode (never in production)"),
        Var("LOG_LEVEL", "text", "INFO", "the log level"),
        Var(
            "DB_CONN_MAX_AGE",
            "integer",
            0,
            "seconds a database connection is kept between requests",
        ),
    ],
    _STORAGE: [
        Var(
            "PIWEB_VAR_DIR",
            "path",
            "var",
            "where the secret key, the SQLite database, the embedded Redis socket, artifacts and workspaces live by default",
            shown="`var/`",
        ),
        Var("PIWEB_ARTIFACT_DIR", "path", "", "full bash output files", shown="`var/artifacts`"),
        Var("PIWEB_AGENT_DIR", "path", "", "global `AGENTS.md` and `skills/`", shown="`var/agent`"),
        Var(
            "PIWEB_IMPORT_DIR",
            "path",
            "",
            "where uploads wait for their import job (shared with the workers in a scale-out layout)",
            shown="`var/imports`",
        ),
        Var(
            "PIWEB_TIKTOKEN_CACHE",
            "text",
            "",
            "where the tokenizer's bundled encoding files are unpacked for tiktoken",
            shown="`$XDG_CACHE_HOME/piweb/tiktoken`",
        ),
    ],
    _WORKSPACES: [
        Var(
            "PIWEB_WORKSPACE_ROOTS",
            "list",
            "",
            "comma list of directories session workspaces must live in",
            shown="`var/workspaces`",
        ),
        Var(
            "PIWEB_WORKSPACE_MODE",
            "choice",
            "multi-user",
            "`multi-user`: each user works in `<root>/<user id>/`; `single-user`: the roots themselves (e.g. `$HOME`), so pi sessions continue in their own folder (see [workspaces.md](workspaces.md))",
            choices=("multi-user", "single-user"),
        ),
        Var(
            "PIWEB_WORKSPACE_ARCHIVE_MAX_MB",
            "integer",
            100,
            "a new workspace from an uploaded archive: the upload's size (MB)",
        ),
        Var(
            "PIWEB_WORKSPACE_UNPACKED_MAX_MB",
            "integer",
            1024,
            "a new workspace from an uploaded archive: its unpacked size (MB)",
        ),
        Var(
            "PIWEB_WORKSPACE_ARCHIVE_MAX_FILES",
            "integer",
            50000,
            "a new workspace from an uploaded archive: its entries",
        ),
        Var(
            "PIWEB_WRITE_BACK_DEFAULT",
            "boolean",
            False,
            "whether followed sessions write what piweb adds back to pi's file (per session on its page)",
            shown="on in `single-user` mode, else off",
        ),
        Var(
            "PIWEB_PI_QUIET_SECONDS",
            "decimal",
            5.0,
            'a followed file that changed less than this ago is "pi is writing": the chat waits and write-back waits',
        ),
        Var(
            "PIWEB_SNAPSHOTS",
            "boolean",
            True,
            "snapshot the workspace after every agent turn and `!cmd` (the file diffs and the rewind)",
        ),
        Var(
            "PIWEB_SNAPSHOT_DIR",
            "path",
            "",
            "where the shadow git repositories of the workspaces live",
            shown="`var/snapshots`",
        ),
        Var(
            "PIWEB_SNAPSHOT_MAX_FILE_KB", "integer", 1024, "larger files are left out of snapshots"
        ),
        Var(
            "PIWEB_SNAPSHOT_WAIT_SECONDS",
            "integer",
            30,
            "how long a snapshot due while another session's run works in an overlapping folder waits for it; then it is skipped, and the node says why",
        ),
        Var(
            "PIWEB_SNAPSHOT_GC_EVERY",
            "integer",
            200,
            "a shadow snapshot repository is packed (`git gc`, a job in the sandbox) after every this many snapshots",
        ),
        Var(
            "PIWEB_DIFF_MAX_FILE_BYTES", "integer", 200000, "the most diff text shown for one file"
        ),
        Var(
            "PIWEB_DIFF_MAX_TOTAL_BYTES",
            "integer",
            1000000,
            "the most diff text shown for one page, partial or export",
        ),
        Var("PIWEB_GIT", "text", "git", "the git binary snapshots use"),
    ],
    _SANDBOX: [
        Var(
            "PIWEB_SANDBOX",
            "choice",
            "bwrap",
            "`bwrap`: every command runs in the bubblewrap sandbox; `off`: no isolation (single-user machines only)",
            choices=("bwrap", "off"),
        ),
        Var("PIWEB_SANDBOX_BWRAP", "text", "bwrap", "the bwrap binary (name on `PATH` or a path)"),
        Var(
            "PIWEB_SANDBOX_HOST_UID",
            "integer or off",
            64100,
            "when the worker runs as root, the unprivileged host uid (and gid) its sandboxed commands run as; `off` leaves them root's on the host (not recommended); ignored for a non-root worker",
        ),
        Var(
            "PIWEB_SANDBOX_NETWORK",
            "boolean",
            False,
            '`1` gives commands the host\'s network: read the risk in [security.md](security.md), "Sandbox", first',
        ),
        Var("PIWEB_SANDBOX_CPU_SECONDS", "integer", 600, "per command: CPU seconds per process"),
        Var(
            "PIWEB_SANDBOX_MEMORY_MB",
            "integer",
            3072,
            "per command: address space per process (MB)",
        ),
        Var(
            "PIWEB_SANDBOX_TOTAL_MEMORY_MB",
            "integer",
            3072,
            "memory of all of one command's processes together (memory cgroup, else watched by the worker)",
        ),
        Var("PIWEB_SANDBOX_MAX_PROCESSES", "integer", 256, "per command: processes at once"),
        Var(
            "PIWEB_SANDBOX_FILE_SIZE_MB",
            "integer",
            1024,
            "per command: size of one written file (MB)",
        ),
        Var("PIWEB_SANDBOX_TMP_MB", "integer", 512, "per command: size of `/tmp` (MB)"),
        Var(
            "PIWEB_USER_BASH_TIMEOUT",
            "decimal",
            3600.0,
            "wall time of a `!cmd` in seconds (the agent's bash tool has its own `timeout`)",
        ),
        Var(
            "PIWEB_FULL_OUTPUT_MAX_MB",
            "decimal",
            50.0,
            "size of a command's full-output file; past it the file keeps the last part and says so",
        ),
        Var(
            "PIWEB_WORKSPACE_QUOTA_MB",
            "decimal",
            10240.0,
            "disk one user's workspace folders may use together (0: no quota); over it commands are refused",
        ),
        Var(
            "PIWEB_WORKSPACE_MEASURE_SECONDS",
            "decimal",
            30.0,
            "how often at most the worker measures one user's workspaces for the quota",
        ),
        Var(
            "PIWEB_DISK_RESERVE_MB",
            "decimal",
            1024.0,
            "free space kept on the var folder's disk: below it commands are refused and running ones stopped (0: no reserve)",
        ),
        Var(
            "PIWEB_TOOL_MAX_FILE_MB",
            "decimal",
            32.0,
            "the biggest file the agent's `read` and `edit` open",
        ),
    ],
    _WORKERS: [
        Var(
            "PIWEB_WORKER_CONCURRENCY",
            "integer",
            4,
            "worker slots `make run` gives agent turns (`--concurrency`)",
        ),
        Var("PIWEB_COMMAND_CONCURRENCY", "integer", 3, "worker slots `make run` gives `!cmd`s"),
        Var("PIWEB_SUMMARY_CONCURRENCY", "integer", 2, "worker slots `make run` gives summaries"),
        Var(
            "PIWEB_IMPORT_CONCURRENCY",
            "integer",
            1,
            "worker slots `make run` gives imports and small tasks",
        ),
        Var(
            "PIWEB_USER_MAX_RUNS",
            "integer",
            2,
            'runs (agent turns and `!cmd`s) one user has on the workers at once; more wait, "queued behind your other runs"',
        ),
        Var(
            "PIWEB_CELERY_QUEUE",
            "text",
            "piweb",
            'the base queue name (piweb also sends to `<base>-runs`, `-commands`, `-summaries`, `-imports`: see [operations.md](operations.md), "Scale-out")',
        ),
        Var(
            "PIWEB_JOBS_QUEUE",
            "text",
            "",
            "another queue for summary jobs, if set",
            shown="`<base>-summaries`",
        ),
        Var(
            "PIWEB_CELERY_PREFIX",
            "text",
            "",
            "Redis key prefix of the broker (several piweb instances on one Redis)",
        ),
        Var("PIWEB_CHANNEL_PREFIX", "text", "piweb", "Redis key prefix of the channel layer"),
        Var("PIWEB_CHAT_REDIS_PREFIX", "text", "piweb:chat", "Redis key prefix of live run state"),
        Var(
            "PIWEB_VISIBILITY_TIMEOUT",
            "integer",
            3600,
            "seconds before the broker hands an unacknowledged task to another worker",
        ),
        Var(
            "PIWEB_JOB_STALE_SECONDS",
            "integer",
            120,
            "a job whose worker has not reported for this long is requeued (an agent run is failed)",
        ),
        Var(
            "PIWEB_JOB_HEARTBEAT_SECONDS",
            "decimal",
            0.0,
            "how often a running job reports",
            shown="min(5, stale/4)",
        ),
        Var("PIWEB_JOB_MAX_ATTEMPTS", "integer", 3, "how many runs a job gets before it fails"),
        Var(
            "PIWEB_JOB_WAIT_FOR_RUN_SECONDS",
            "decimal",
            1800.0,
            "how long a job waits for the session's agent run to end",
        ),
    ],
    _MODELS: [
        Var(
            "PIWEB_LLM_BASE_URL",
            "text",
            "",
            "the default model: any OpenAI-compatible endpoint (OpenAI, OpenRouter, Ollama, vLLM, llama.cpp, LM Studio)",
        ),
        Var("PIWEB_LLM_MODEL", "text", "", "the default model's id"),
        Var("PIWEB_LLM_API_KEY", "text", "", "the default model's key"),
        Var(
            "PIWEB_LLM_CONTEXT_WINDOW",
            "integer",
            128000,
            "the default model's window, and that of every profile that leaves it out (also used when no model is configured)",
        ),
        Var(
            "PIWEB_LLM_MAX_OUTPUT",
            "integer",
            16384,
            "the default model's reply limit, and that of every profile that leaves it out",
        ),
        Var(
            "PIWEB_LLM_TIMEOUT",
            "decimal",
            120.0,
            "the default model's timeout (seconds), and that of every profile that leaves it out",
        ),
        Var(
            "PIWEB_MODEL_PROFILES",
            "json",
            "",
            'more environment models as a JSON object by name, each with `base_url` and `model` (every other field: [models.md](models.md), "Environment models")',
        ),
        Var(
            "PIWEB_MODEL_CONTEXT_WINDOWS",
            "json",
            "",
            'context windows for the context chart, as JSON by model id or `provider/model`, over the catalog\'s: `{"my-model": 200000}`',
        ),
        Var(
            "PIWEB_PI_AGENT_DIR",
            "text, empty allowed",
            "",
            "pi's agent folder: `models.json`, `auth.json`, `settings.json` (see [models.md](models.md)); empty: none",
            shown="`~/.pi/agent` when it exists",
        ),
        Var(
            "PIWEB_SERVER_KEYS",
            "choice",
            "all",
            "who may use the server's keys (environment, pi's `auth.json`/`models.json`): `all` signed-in users or `staff` only",
            choices=("all", "staff"),
        ),
        Var(
            "PIWEB_KEY_ENCRYPTION_KEY",
            "text",
            "",
            'the Fernet key that encrypts users\' own API keys (`python -c "from cryptography.fernet import Fernet; print(Fernet.generate_key().decode())"`)',
            shown="derived from `SECRET_KEY` (HKDF)",
        ),
        Var(
            "PI_CACHE_RETENTION",
            "text",
            "",
            "pi's own variable: `long` asks providers for long prompt caching (Anthropic's 1 h, OpenAI's 24 h); anything else is the short default",
        ),
        Var(
            "PIWEB_COMPACTION_ENABLED",
            "boolean",
            True,
            "automatic compaction; pi's `settings.json` overrides it, a session's own settings (session page) override both",
        ),
        Var(
            "PIWEB_COMPACTION_RESERVE_TOKENS",
            "integer",
            16384,
            "tokens kept free in the window: compaction starts past window − reserve",
        ),
        Var(
            "PIWEB_COMPACTION_KEEP_RECENT_TOKENS",
            "integer",
            20000,
            "tokens of recent messages a compaction keeps",
        ),
        Var(
            "PIWEB_LLM_RETRIES",
            "integer",
            4,
            "the one retry policy of model calls (agent runs and summaries): retries of a failed call (429, 5xx, …)",
        ),
        Var(
            "PIWEB_LLM_RETRY_BASE_DELAY",
            "decimal",
            1.0,
            "the first backoff between retries (seconds), doubled each time",
        ),
        Var(
            "PIWEB_LLM_RETRY_MAX_DELAY",
            "decimal",
            30.0,
            "the longest backoff between retries (seconds)",
        ),
        Var(
            "PIWEB_CHAT_IMAGE_MAX_BYTES",
            "integer",
            4718592,
            "the biggest image file a chat message may carry (4.5 MB; see [chat.md](chat.md))",
            minimum=1024,
        ),
        Var(
            "PIWEB_CHAT_IMAGE_MAX_COUNT",
            "integer",
            8,
            "how many images a chat message may carry",
            minimum=1,
        ),
    ],
    _FOLLOW: [
        Var(
            "PIWEB_PI_SESSION_DIRS",
            "list",
            "",
            "comma list of pi session folders `make run` follows live (`watch_pi_sessions`)",
        ),
        Var(
            "PIWEB_PI_SESSION_OWNER",
            "text",
            "",
            "user who owns the followed sessions",
            shown="the only superuser",
        ),
        Var(
            "PIWEB_PI_SESSION_RESCAN_SECONDS",
            "decimal",
            60.0,
            "full rescan period of the follower, for filesystems without change events (0: none)",
        ),
        Var(
            "PIWEB_FOLLOW_READ_AHEAD",
            "choice",
            "auto",
            "whether the follower's scan prepares new files in a second process while it writes them (`auto`: when it may use more than one CPU; `on`; `off`)",
            choices=("auto", "on", "off"),
        ),
        Var(
            "PIWEB_PI_DEFAULT_SESSION_DIR",
            "path",
            "",
            "pi's folder the startup banner mentions when following is off",
            shown="`~/.pi/agent/sessions`",
        ),
    ],
    _PAGES: [
        Var(
            "PIWEB_REVIEW_HOLD_SECONDS",
            "integer",
            1800,
            "a review queue item handed out and left unscored this long goes back to the queue (see [scores.md](scores.md))",
            minimum=1,
        ),
        Var(
            "PIWEB_PREVIEW_CHARS",
            "integer",
            20000,
            'characters of one text block a page renders before "show more" (see [operations.md](operations.md), "Limits of a page")',
        ),
        Var(
            "PIWEB_SHOW_MORE_CHARS", "integer", 200000, 'characters one "show more" request returns'
        ),
        Var(
            "PIWEB_MAX_RESPONSE_BYTES",
            "integer",
            8388608,
            "the largest page or partial; bigger ones are replaced by a notice (downloads stream and are not capped)",
        ),
        Var(
            "PIWEB_RENDER_SECONDS",
            "decimal",
            5.0,
            "seconds one request may spend rendering Markdown; later blocks show as plain text",
        ),
        Var(
            "PIWEB_EXACT_TOKEN_CHARS",
            "integer",
            2000000,
            "characters the context inspector counts with tiktoken per report; beyond, pi's chars/4 estimate (marked ≈)",
        ),
        Var(
            "PIWEB_MAX_UPLOAD_BYTES",
            "integer",
            536870912,
            "the biggest session file `/import/` takes (512 MB); bigger bodies are refused before they are read (see [security.md](security.md))",
        ),
        Var(
            "PIWEB_SYNC_MAX_BATCH_BYTES",
            "integer",
            16777216,
            "the biggest JSON body one request of the sync client may send (16 MB; see [sync.md](sync.md))",
        ),
    ],
    _LOGIN: [
        Var(
            "PIWEB_LOGIN_THROTTLING",
            "boolean",
            True,
            "log-in throttling and lockout (django-axes); `0` turns it off",
        ),
        Var("PIWEB_LOGIN_FAILURE_LIMIT", "integer", 10, "failed log-ins before the lockout"),
        Var(
            "PIWEB_LOGIN_COOLOFF_MINUTES",
            "decimal",
            15.0,
            "the lockout's length in minutes (0: until an administrator unlocks)",
        ),
        Var(
            "PIWEB_LOGIN_LOCKOUT_BY",
            "list",
            "username,ip_address",
            "what failures are counted by: a comma list of `username`, `ip_address`, or `username+ip_address` for the pair",
        ),
        Var(
            "PIWEB_TRUSTED_PROXIES",
            "list",
            "",
            "reverse proxies (addresses or networks) whose client-address header is believed",
        ),
        Var(
            "PIWEB_CLIENT_IP_HEADER",
            "text",
            "X-Forwarded-For",
            "the header that carries the client's address behind a trusted proxy",
        ),
    ],
}

DECLARED: dict[str, Var] = {var.name: var for group in GROUPS.values() for var in group}
_FROM_DECLARATION = object()


def declared(name: str) -> Var:
    try:
        return DECLARED[name]
    except KeyError:
        raise EnvError(f"{name} is not declared in piweb/env.py.") from None


def get(name: str, default: Any = _FROM_DECLARATION) -> Any:
    """The declared variable's value, read by its type; `default` replaces the declared
    one where settings.py works it out (a folder under the var folder)."""
    var = declared(name)
    fallback = var.default if default is _FROM_DECLARATION else default
    if var.type == "choice":
        return choice(name, fallback, var.choices)
    if var.minimum is not None:
        return _READERS[var.type](name, fallback, minimum=var.minimum)
    return _READERS[var.type](name, fallback)


def is_set(name: str) -> bool:
    """Whether the declared variable is set (to something other than the empty string)."""
    return raw(declared(name).name) is not None


TABLE_START = (
    "<!-- configuration table: written by `manage.py configuration_table`, do not edit -->"
)
TABLE_END = "<!-- end of the configuration table -->"


def configuration_table() -> str:
    """The Markdown table of every declared variable, one section per group."""
    parts = []
    for group, variables in GROUPS.items():
        rows = [f"### {group}", "", "| variable | type | default | meaning |", "|---|---|---|---|"]
        for var in variables:
            kind = var.type + (f": {', '.join(var.choices)}" if var.choices else "")
            rows.append(f"| `{var.name}` | {kind} | {var.shown_default()} | {var.help} |")
        parts.append("\n".join(rows))
    return "\n\n".join(parts)


def with_current_table(document: str) -> str:
    """`document` with the text between the table's markers replaced by the current table."""
    start, end = document.find(TABLE_START), document.find(TABLE_END)
    if start < 0 or end < start:
        raise ValueError("the document has no configuration table markers")
    head = document[: start + len(TABLE_START)]
    return f"{head}\n\n{configuration_table()}\n\n{document[end:]}"
