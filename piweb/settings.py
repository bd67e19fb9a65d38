"""piweb settings.

Everything comes from the environment so that the embedded default (SQLite plus an
embedded Redis) and the scale-out layout (PostgreSQL, Redis, many processes) run the
same code. See docs/configuration.md for the full list.
"""

import json
import os
import secrets
import time
from datetime import timedelta
from pathlib import Path

import dj_database_url

from piweb import env

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = env.get("PIWEB_VAR_DIR", BASE_DIR / "var")
# The database, the secret key, Redis's socket and the workspaces live here: this
# account's alone (mode 0700), whatever the umask.
VAR_DIR.mkdir(parents=True, exist_ok=True, mode=0o700)
if VAR_DIR.stat().st_uid == os.geteuid() and VAR_DIR.stat().st_mode & 0o067:
    # Tightened, never loosened: a root worker's sandbox account keeps its group search bit.
    VAR_DIR.chmod(VAR_DIR.stat().st_mode & 0o710 | 0o700)


def _secret_key() -> str:
    """Use SECRET_KEY from the environment, else one generated once into var/."""
    if env.is_set("SECRET_KEY"):
        return env.get("SECRET_KEY")
    key_file = VAR_DIR / "secret_key"
    try:
        # Created 0600 from the start, and only if nobody else created it first.
        fd = os.open(key_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        pass
    else:
        with os.fdopen(fd, "w") as fh:
            fh.write(secrets.token_urlsafe(50))
    for _ in range(50):  # another process may have created it and still be writing
        key = key_file.read_text().strip()
        if key:
            return key
        time.sleep(0.02)
    raise RuntimeError(f"{key_file} is empty: delete it or set SECRET_KEY.")


SECRET_KEY = _secret_key()
DEBUG = env.get("DEBUG")
ALLOWED_HOSTS = env.get("ALLOWED_HOSTS")
CSRF_TRUSTED_ORIGINS = env.get("CSRF_TRUSTED_ORIGINS")

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django_htmx",
    "channels",
    "axes",
    "sessions_app",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "piweb.middleware.content_security_policy",
    "piweb.middleware.response_size_cap",
    "piweb.middleware.markdown_time_budget",
    # Last, as django-axes asks: turns a refused (locked-out) log-in into its page.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "piweb.urls"
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "sessions_app.views.preferences.theme_context",
                "sessions_app.views.users.admin_context",
            ],
        },
    },
]
WSGI_APPLICATION = "piweb.wsgi.application"
ASGI_APPLICATION = "piweb.asgi.application"

DATABASES = {
    "default": dj_database_url.parse(
        env.get("DATABASE_URL", f"sqlite:///{VAR_DIR / 'piweb.sqlite3'}"),
        conn_max_age=env.get("DB_CONN_MAX_AGE"),
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # WAL lets the web server, the worker and the tests read while one of them writes;
    # "immediate" takes the write lock at BEGIN so concurrent writers queue, not fail.
    DATABASES["default"]["OPTIONS"] = {
        "timeout": 30,
        "transaction_mode": "IMMEDIATE",
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    }
    DATABASES["default"]["TEST"] = {"NAME": str(VAR_DIR / "test.sqlite3")}
    # Entry's (session, parent) index INCLUDEs the id on PostgreSQL; SQLite has no
    # INCLUDE but keeps the rowid (the id) in every index anyway.
    SILENCED_SYSTEM_CHECKS = ["models.W040"]
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# Redis: the Celery broker and the channel layer. Unset means the embedded Redis that
# `make run` (and the test suite) start on a unix socket under var/.
EMBEDDED_REDIS_SOCKET = VAR_DIR / "redis.sock"
REDIS_URL = env.get("REDIS_URL", f"unix://{EMBEDDED_REDIS_SOCKET}")
USES_EMBEDDED_REDIS = not env.is_set("REDIS_URL")


def _celery_broker_url(redis_url: str) -> str:
    if redis_url.startswith("unix://"):
        return "redis+socket://" + redis_url[len("unix://") :]
    return redis_url


CHANNEL_LAYERS = {
    "default": {
        "BACKEND": "channels_redis.core.RedisChannelLayer",
        "CONFIG": {
            # redis-py 8 reads with a 5 s socket timeout by default, which is exactly
            # channels_redis's blocking-receive time: every idle websocket died after 5 s.
            "hosts": [{"address": REDIS_URL, "socket_timeout": 30}],
            "prefix": env.get("PIWEB_CHANNEL_PREFIX"),
            "capacity": 1000,
            "expiry": 30,
        },
    }
}

CELERY_BROKER_URL = _celery_broker_url(REDIS_URL)
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "visibility_timeout": env.get("PIWEB_VISIBILITY_TIMEOUT"),
    "global_keyprefix": env.get("PIWEB_CELERY_PREFIX"),
}
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_TASK_DEFAULT_QUEUE = env.get("PIWEB_CELERY_QUEUE")
CELERY_TASK_ALWAYS_EAGER = False

# `make run` (manage.py runpiweb): where daphne listens and how many worker processes run.
PIWEB_HOST = env.get("HOST")
PIWEB_PORT = env.get("PORT")
PIWEB_WORKER_CONCURRENCY = env.get("PIWEB_WORKER_CONCURRENCY")

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
# Login throttling (django-axes; docs/security.md): after PIWEB_LOGIN_FAILURE_LIMIT
# failed log-ins for one username, or from one address (PIWEB_LOGIN_LOCKOUT_BY: a comma
# list of "username", "ip_address", or "username+ip_address" for the pair), log-ins are
# refused, even with the right password, for PIWEB_LOGIN_COOLOFF_MINUTES (0: until an
# administrator unlocks: manage.py axes_reset_username / axes_reset_ip / axes_reset).
# Every failed attempt while locked starts the wait again. Behind a reverse proxy, list
# the proxies in PIWEB_TRUSTED_PROXIES (addresses or networks): the client's address is
# then read from PIWEB_CLIENT_IP_HEADER, never from a header a client sent directly.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
PIWEB_LOGIN_FAILURE_LIMIT = env.get("PIWEB_LOGIN_FAILURE_LIMIT")
PIWEB_LOGIN_COOLOFF_MINUTES = env.get("PIWEB_LOGIN_COOLOFF_MINUTES")
PIWEB_LOGIN_LOCKOUT_BY = env.get("PIWEB_LOGIN_LOCKOUT_BY")
PIWEB_TRUSTED_PROXIES = env.get("PIWEB_TRUSTED_PROXIES")
PIWEB_CLIENT_IP_HEADER = env.get("PIWEB_CLIENT_IP_HEADER")
AXES_ENABLED = env.get("PIWEB_LOGIN_THROTTLING")
AXES_FAILURE_LIMIT = PIWEB_LOGIN_FAILURE_LIMIT
AXES_COOLOFF_TIME = (
    timedelta(minutes=PIWEB_LOGIN_COOLOFF_MINUTES) if PIWEB_LOGIN_COOLOFF_MINUTES > 0 else None
)
AXES_LOCKOUT_PARAMETERS = [
    item.split("+") if "+" in item else item for item in PIWEB_LOGIN_LOCKOUT_BY
]
AXES_RESET_ON_SUCCESS = True
AXES_CLIENT_IP_CALLABLE = "piweb.login_throttle.client_ip"
AXES_LOCKOUT_CALLABLE = "piweb.login_throttle.lockout_response"
AXES_VERBOSE = False
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "sessions_app:session_list"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = VAR_DIR / "staticfiles"
STATIC_ROOT.mkdir(parents=True, exist_ok=True)  # whitenoise warns when it is missing
# Serve straight from static/ and app folders, so `make run` needs no collectstatic;
# a production deployment may still collect into STATIC_ROOT.
WHITENOISE_USE_FINDERS = True
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}

SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Lax"
CSRF_COOKIE_SAMESITE = "Lax"
X_FRAME_OPTIONS = "DENY"
# Scripts only from our own static files (no inline scripts or handlers, no eval); inline
# style attributes are allowed (the tree indents rows with them); the websocket is 'self'.
PIWEB_CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; "
    "form-action 'self'; frame-ancestors 'none'"
)
SECURE_CONTENT_TYPE_NOSNIFF = True
if env.get("PIWEB_SECURE_COOKIES"):
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True

# --- piweb ---------------------------------------------------------------------------
# Directories under which session workspaces (cwd) may live; tools never leave them.
PIWEB_WORKSPACE_ROOTS = [
    Path(p).resolve() for p in env.get("PIWEB_WORKSPACE_ROOTS", str(VAR_DIR / "workspaces"))
]
# How workspaces are shared out (docs/workspaces.md): "multi-user" (default) gives every
# user their own folder <root>/<user id>/ of each root, and a session's tools run only
# there; "single-user" lets the roots themselves be used (e.g. PIWEB_WORKSPACE_ROOTS=~),
# so a session imported from pi can continue in its own folder (~/code/proj).
PIWEB_WORKSPACE_MODE = env.get("PIWEB_WORKSPACE_MODE")
# New workspaces from an uploaded archive: the upload's size, and what it may unpack to.
PIWEB_WORKSPACE_ARCHIVE_MAX_MB = env.get("PIWEB_WORKSPACE_ARCHIVE_MAX_MB")
PIWEB_WORKSPACE_UNPACKED_MAX_MB = env.get("PIWEB_WORKSPACE_UNPACKED_MAX_MB")
PIWEB_WORKSPACE_ARCHIVE_MAX_FILES = env.get("PIWEB_WORKSPACE_ARCHIVE_MAX_FILES")
# Writing back to pi's file (docs/follow.md): on by
# default for followed sessions on a single-user setup; per session either way.
PIWEB_WRITE_BACK_DEFAULT = env.get(
    "PIWEB_WRITE_BACK_DEFAULT", PIWEB_WORKSPACE_MODE == "single-user"
)
# pi is taken to be writing a session whose file changed less than this many seconds ago:
# the chat waits (and offers a fork) and the write-back waits until it is quiet.
PIWEB_PI_QUIET_SECONDS = env.get("PIWEB_PI_QUIET_SECONDS")
# Where full bash output files and other per-run artifacts go.
PIWEB_ARTIFACT_DIR = env.get("PIWEB_ARTIFACT_DIR", VAR_DIR / "artifacts")
# Workspace snapshots (docs/workspaces.md): after every agent turn with tool
# calls and every `!cmd`, the workspace is committed to a shadow git repository under
# PIWEB_SNAPSHOT_DIR (one per workspace; the user's own .git is never touched). Files
# larger than PIWEB_SNAPSHOT_MAX_FILE_KB are left out, as are ignored files.
PIWEB_SNAPSHOTS = env.get("PIWEB_SNAPSHOTS")
PIWEB_SNAPSHOT_DIR = env.get("PIWEB_SNAPSHOT_DIR", VAR_DIR / "snapshots")
PIWEB_SNAPSHOT_MAX_FILE_KB = env.get("PIWEB_SNAPSHOT_MAX_FILE_KB")
# A snapshot due while a run of another session works in an overlapping folder waits
# this long for it to end, then is skipped (the node says why).
PIWEB_SNAPSHOT_WAIT_SECONDS = env.get("PIWEB_SNAPSHOT_WAIT_SECONDS")
# A shadow repository is packed (`git gc`, a job) after every this many snapshots.
PIWEB_SNAPSHOT_GC_EVERY = env.get("PIWEB_SNAPSHOT_GC_EVERY")
# The most diff text shown for one file (bytes) and for one page or export (bytes).
PIWEB_DIFF_MAX_FILE_BYTES = env.get("PIWEB_DIFF_MAX_FILE_BYTES")
PIWEB_DIFF_MAX_TOTAL_BYTES = env.get("PIWEB_DIFF_MAX_TOTAL_BYTES")
# The git binary the snapshots run.
PIWEB_GIT = env.get("PIWEB_GIT")
# Global agent directory (AGENTS.md and skills that apply to every workspace).
PIWEB_AGENT_DIR = env.get("PIWEB_AGENT_DIR", VAR_DIR / "agent")

# The sandbox every command of a session runs in (docs/security.md, "Sandbox"): "bwrap" (default)
# or "off" (single-user machines only: commands then run as the worker's user).
PIWEB_SANDBOX = env.get("PIWEB_SANDBOX")
PIWEB_SANDBOX_BWRAP = env.get("PIWEB_SANDBOX_BWRAP")
# Network inside the sandbox: off by default (loopback only). On, commands can reach the
# internet and every service listening on the host (see docs/security.md for the risk).
PIWEB_SANDBOX_NETWORK = env.get("PIWEB_SANDBOX_NETWORK")
PIWEB_SANDBOX_CPU_SECONDS = env.get("PIWEB_SANDBOX_CPU_SECONDS")
PIWEB_SANDBOX_MEMORY_MB = env.get("PIWEB_SANDBOX_MEMORY_MB")
PIWEB_SANDBOX_MAX_PROCESSES = env.get("PIWEB_SANDBOX_MAX_PROCESSES")
PIWEB_SANDBOX_FILE_SIZE_MB = env.get("PIWEB_SANDBOX_FILE_SIZE_MB")
PIWEB_SANDBOX_TMP_MB = env.get("PIWEB_SANDBOX_TMP_MB")
# When the worker runs as root, commands run as this unprivileged host uid (and gid), so
# nothing a session leaves in its workspace belongs to root. "off" keeps them root's on
# the host (not recommended). Ignored when the worker is not root: then its own account.
PIWEB_SANDBOX_HOST_UID = env.get("PIWEB_SANDBOX_HOST_UID")
if PIWEB_SANDBOX_HOST_UID is not None and not 0 < PIWEB_SANDBOX_HOST_UID < 2**32 - 1:
    raise env.EnvError("PIWEB_SANDBOX_HOST_UID must be 'off' or a uid other than 0.")
# All processes of one command together (memory cgroup when the worker can make one,
# else the worker watches their resident memory); the per-process figure above is RLIMIT_AS.
PIWEB_SANDBOX_TOTAL_MEMORY_MB = env.get("PIWEB_SANDBOX_TOTAL_MEMORY_MB")
# Wall time of a user's `!cmd` (the agent's bash tool has its own timeout argument).
PIWEB_USER_BASH_TIMEOUT = env.get("PIWEB_USER_BASH_TIMEOUT")

# Disk and memory a session may take (docs/security.md): the full-output file of a
# command keeps its last part past this size; each user's workspace folders together
# (measured in the background at most every PIWEB_WORKSPACE_MEASURE_SECONDS; 0 = no
# quota); the free space kept on the var folder's disk (below it commands are refused and
# running ones stopped); the biggest file the agent's read and edit tools open.
PIWEB_FULL_OUTPUT_MAX_MB = env.get("PIWEB_FULL_OUTPUT_MAX_MB")
PIWEB_WORKSPACE_QUOTA_MB = env.get("PIWEB_WORKSPACE_QUOTA_MB")
PIWEB_WORKSPACE_MEASURE_SECONDS = env.get("PIWEB_WORKSPACE_MEASURE_SECONDS")
PIWEB_DISK_RESERVE_MB = env.get("PIWEB_DISK_RESERVE_MB")
PIWEB_TOOL_MAX_FILE_MB = env.get("PIWEB_TOOL_MAX_FILE_MB")

# Fairness (docs/security.md, "What a session may take"): how many runs (agent turns and `!cmd`) of one
# user run at once (more wait, "queued behind your other runs"), and the worker slots of
# each queue besides the agent runs' (PIWEB_WORKER_CONCURRENCY): short commands,
# summaries (compaction, branch and compare summaries), imports and other small tasks.
PIWEB_USER_MAX_RUNS = env.get("PIWEB_USER_MAX_RUNS")
PIWEB_COMMAND_CONCURRENCY = env.get("PIWEB_COMMAND_CONCURRENCY")
PIWEB_SUMMARY_CONCURRENCY = env.get("PIWEB_SUMMARY_CONCURRENCY")
PIWEB_IMPORT_CONCURRENCY = env.get("PIWEB_IMPORT_CONCURRENCY")

# LLM model profiles. The default profile comes from PIWEB_LLM_* variables; more can be
# given as JSON in PIWEB_MODEL_PROFILES ({"name": {"base_url": ..., "model": ...}}).
# No model configured is a normal state: chat says how to configure one and summaries
# fall back to the offline summarizer.
PIWEB_LLM_BASE_URL = env.get("PIWEB_LLM_BASE_URL")
PIWEB_LLM_API_KEY = env.get("PIWEB_LLM_API_KEY")
PIWEB_LLM_MODEL = env.get("PIWEB_LLM_MODEL")
PIWEB_LLM_CONTEXT_WINDOW = env.get("PIWEB_LLM_CONTEXT_WINDOW")
PIWEB_LLM_MAX_OUTPUT = env.get("PIWEB_LLM_MAX_OUTPUT")
PIWEB_LLM_TIMEOUT = env.get("PIWEB_LLM_TIMEOUT")
# (checked here, at startup; selectors.llm reads the JSON text)
PIWEB_MODEL_PROFILES_JSON = (
    json.dumps(env.get("PIWEB_MODEL_PROFILES")) if env.is_set("PIWEB_MODEL_PROFILES") else ""
)

# pi's agent folder (models.json, auth.json, settings.json), read as pi reads it and
# re-read when a file changes. Unset: ~/.pi/agent of the user running piweb when that
# folder exists; "" (empty): none.
_pi_agent_dir = env.get("PIWEB_PI_AGENT_DIR")  # (set but empty means "none")
if _pi_agent_dir is None:
    _default_agent_dir = Path.home() / ".pi" / "agent"
    _pi_agent_dir = str(_default_agent_dir) if _default_agent_dir.is_dir() else ""
PIWEB_PI_AGENT_DIR = _pi_agent_dir
# Who may use the server's keys (environment variables, pi's auth.json and models.json):
# "all" signed-in users (default; a single-user or trusted team setup) or "staff" only
# (others bring their own key on the Models page).
PIWEB_SERVER_KEYS = env.get("PIWEB_SERVER_KEYS")
# The key that encrypts users' own API keys (Fernet, urlsafe base64 of 32 bytes). Unset:
# derived from SECRET_KEY with HKDF-SHA256 (rotating SECRET_KEY then loses stored keys).
PIWEB_KEY_ENCRYPTION_KEY = env.get("PIWEB_KEY_ENCRYPTION_KEY")
# pi's own variable: "long" asks the providers for long prompt caching, as pi does.
PI_CACHE_RETENTION = env.get("PI_CACHE_RETENTION")

# Compaction defaults (pi's); pi's settings.json, then a session's
# own (Session.settings), override them.
PIWEB_COMPACTION = {
    "enabled": env.get("PIWEB_COMPACTION_ENABLED"),
    "reserve_tokens": env.get("PIWEB_COMPACTION_RESERVE_TOKENS"),
    "keep_recent_tokens": env.get("PIWEB_COMPACTION_KEEP_RECENT_TOKENS"),
}
# Context windows by model for the session page's context chart, as JSON
# ({"claude-sonnet-4-5": 200000, "openai/gpt-5.1-codex": 400000}: a model id or a
# provider/model key); other models use their session's profile window, else
# PIWEB_LLM_CONTEXT_WINDOW.
PIWEB_MODEL_CONTEXT_WINDOWS = env.get("PIWEB_MODEL_CONTEXT_WINDOWS")
# A review queue item held this long without a score is handed out again.
PIWEB_REVIEW_HOLD_SECONDS = env.get("PIWEB_REVIEW_HOLD_SECONDS")
# A job whose worker has not reported for this long is treated as dead.
PIWEB_JOB_STALE_SECONDS = env.get("PIWEB_JOB_STALE_SECONDS")
# Jobs area: how often a running job reports (default min(5s, stale/4)), how many runs a
# job gets before it is failed, and the capped exponential backoff for provider errors.
PIWEB_JOB_HEARTBEAT_SECONDS = env.get("PIWEB_JOB_HEARTBEAT_SECONDS") or None
PIWEB_JOB_MAX_ATTEMPTS = env.get("PIWEB_JOB_MAX_ATTEMPTS")
# Queue for compaction / branch-summary tasks ("" = CELERY_TASK_DEFAULT_QUEUE).
PIWEB_JOBS_QUEUE = env.get("PIWEB_JOBS_QUEUE")
# The one retry policy of model calls (agent runs and summaries; agent/retry.py): how many
# retries, and the capped exponential backoff between them (seconds).
PIWEB_LLM_RETRIES = env.get("PIWEB_LLM_RETRIES")
PIWEB_LLM_RETRY_BASE_DELAY = env.get("PIWEB_LLM_RETRY_BASE_DELAY")
PIWEB_LLM_RETRY_MAX_DELAY = env.get("PIWEB_LLM_RETRY_MAX_DELAY")
# How long a job waits for the session's agent run to end, and the Redis key prefix of
# live run state.
PIWEB_JOB_WAIT_FOR_RUN_SECONDS = env.get("PIWEB_JOB_WAIT_FOR_RUN_SECONDS")
PIWEB_CHAT_REDIS_PREFIX = env.get("PIWEB_CHAT_REDIS_PREFIX")
# Images attached to a chat message (docs/chat.md): the biggest image file the server
# takes (pi keeps an image under 4.5 MB) and how many one message may carry. The page
# scales an image larger than 2000 px down first, as pi does.
PIWEB_CHAT_IMAGE_MAX_BYTES = env.get("PIWEB_CHAT_IMAGE_MAX_BYTES")
PIWEB_CHAT_IMAGE_MAX_COUNT = env.get("PIWEB_CHAT_IMAGE_MAX_COUNT")

# Following pi's session folders (`watch_pi_sessions`): the folders `runpiweb` follows
# beside its worker (comma list; none by default), the user who owns the sessions (default:
# the only superuser), and how often a full rescan catches what change events missed.
PIWEB_PI_SESSION_DIRS = env.get("PIWEB_PI_SESSION_DIRS")
PIWEB_PI_SESSION_OWNER = env.get("PIWEB_PI_SESSION_OWNER")
PIWEB_PI_SESSION_RESCAN_SECONDS = env.get("PIWEB_PI_SESSION_RESCAN_SECONDS")
# Whether a scan prepares new files in a second process while it writes (auto: when this
# process may run on more than one CPU; on; off).
PIWEB_FOLLOW_READ_AHEAD = env.get("PIWEB_FOLLOW_READ_AHEAD")
# pi's own session folder, named in the startup banner when it exists and is not followed.
PIWEB_PI_DEFAULT_SESSION_DIR = env.get(
    "PIWEB_PI_DEFAULT_SESSION_DIR", Path.home() / ".pi" / "agent" / "sessions"
)

# Page limits (docs/operations.md, "Limits of a page"): every page is bounded whatever a session holds.
# Characters of one text block a page renders before "show more"; characters one "show
# more" request returns; the biggest page/partial response (downloads stream instead);
# characters the context inspector counts exactly with tiktoken per request (beyond:
# pi's chars/4 estimate, marked ≈).
PIWEB_PREVIEW_CHARS = env.get("PIWEB_PREVIEW_CHARS")
PIWEB_SHOW_MORE_CHARS = env.get("PIWEB_SHOW_MORE_CHARS")
PIWEB_MAX_RESPONSE_BYTES = env.get("PIWEB_MAX_RESPONSE_BYTES")
PIWEB_EXACT_TOKEN_CHARS = env.get("PIWEB_EXACT_TOKEN_CHARS")
# Where the tokenizer unpacks its bundled encodings (unset: core/tokenizer.py's own choice).
PIWEB_TIKTOKEN_CACHE = env.get("PIWEB_TIKTOKEN_CACHE")
# Seconds of Markdown rendering one request may spend; later blocks show as plain text.
PIWEB_RENDER_SECONDS = env.get("PIWEB_RENDER_SECONDS")

# Uploads (docs/security.md): the biggest session file /import/ takes. The server
# (piweb.server) refuses a bigger body before reading it; the upload handler writes the
# file straight into PIWEB_IMPORT_DIR as it arrives and stops at the limit; an import job
# in the worker reads it from there (so in a scale-out layout that folder is shared).
PIWEB_MAX_UPLOAD_BYTES = env.get("PIWEB_MAX_UPLOAD_BYTES")
PIWEB_IMPORT_DIR = env.get("PIWEB_IMPORT_DIR", VAR_DIR / "imports")
PIWEB_SYNC_MAX_BATCH_BYTES = env.get("PIWEB_SYNC_MAX_BATCH_BYTES")
# Django keeps at most this much of a request body in memory (the rest goes to disk).
FILE_UPLOAD_MAX_MEMORY_SIZE = 256 * 1024

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env.get("LOG_LEVEL")},
    "loggers": {
        "httpx": {"level": "WARNING"},
        "openai": {"level": "WARNING"},
        "daphne": {"level": "WARNING"},
    },
}
