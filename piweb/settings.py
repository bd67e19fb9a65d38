"""piweb settings.

Everything comes from the environment so that the embedded default (SQLite plus an
embedded Redis) and the scale-out layout (PostgreSQL, Redis, many processes) run the
same code. See README "Configuration" for the full list.
"""

import os
import secrets
import time
from datetime import timedelta
from pathlib import Path

import dj_database_url

from piweb import env

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = env.path("PIWEB_VAR_DIR", BASE_DIR / "var")
# The database, the secret key, Redis's socket and the workspaces live here: this
# account's alone (mode 0700), whatever the umask.
VAR_DIR.mkdir(parents=True, exist_ok=True, mode=0o700)
if VAR_DIR.stat().st_uid == os.geteuid() and VAR_DIR.stat().st_mode & 0o067:
    # Tightened, never loosened: a root worker's sandbox account keeps its group search bit.
    VAR_DIR.chmod(VAR_DIR.stat().st_mode & 0o710 | 0o700)


def _secret_key() -> str:
    """Use SECRET_KEY from the environment, else one generated once into var/."""
    if env.raw("SECRET_KEY") is not None:
        return env.text("SECRET_KEY")
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
DEBUG = env.boolean("DEBUG")
ALLOWED_HOSTS = env.items("ALLOWED_HOSTS", "127.0.0.1,localhost,[::1]")
CSRF_TRUSTED_ORIGINS = env.items("CSRF_TRUSTED_ORIGINS", "")

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
            ],
        },
    },
]
WSGI_APPLICATION = "piweb.wsgi.application"
ASGI_APPLICATION = "piweb.asgi.application"

DATABASES = {
    "default": dj_database_url.parse(
        env.text("DATABASE_URL", f"sqlite:///{VAR_DIR / 'piweb.sqlite3'}"),
        conn_max_age=env.integer("DB_CONN_MAX_AGE", 0),
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
REDIS_URL = env.text("REDIS_URL", f"unix://{EMBEDDED_REDIS_SOCKET}")
USES_EMBEDDED_REDIS = env.raw("REDIS_URL") is None


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
            "prefix": env.text("PIWEB_CHANNEL_PREFIX", "piweb"),
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
    "visibility_timeout": env.integer("PIWEB_VISIBILITY_TIMEOUT", 3600),
    "global_keyprefix": env.text("PIWEB_CELERY_PREFIX", ""),
}
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_TASK_DEFAULT_QUEUE = env.text("PIWEB_CELERY_QUEUE", "piweb")
CELERY_TASK_ALWAYS_EAGER = False

# `make run` (manage.py runpiweb): where daphne listens and how many worker processes run.
PIWEB_HOST = env.text("HOST", "127.0.0.1")
PIWEB_PORT = env.integer("PORT", 8000)
PIWEB_WORKER_CONCURRENCY = env.integer("PIWEB_WORKER_CONCURRENCY", 4)

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
# Login throttling (django-axes; README "Security model"): after PIWEB_LOGIN_FAILURE_LIMIT
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
PIWEB_LOGIN_FAILURE_LIMIT = env.integer("PIWEB_LOGIN_FAILURE_LIMIT", 10)
PIWEB_LOGIN_COOLOFF_MINUTES = env.decimal("PIWEB_LOGIN_COOLOFF_MINUTES", 15)
PIWEB_LOGIN_LOCKOUT_BY = env.items("PIWEB_LOGIN_LOCKOUT_BY", "username,ip_address")
PIWEB_TRUSTED_PROXIES = env.items("PIWEB_TRUSTED_PROXIES", "")
PIWEB_CLIENT_IP_HEADER = env.text("PIWEB_CLIENT_IP_HEADER", "X-Forwarded-For")
AXES_ENABLED = env.boolean("PIWEB_LOGIN_THROTTLING", True)
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
if env.boolean("PIWEB_SECURE_COOKIES"):
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True

# --- piweb ---------------------------------------------------------------------------
# Directories under which session workspaces (cwd) may live; tools never leave them.
PIWEB_WORKSPACE_ROOTS = [
    Path(p).resolve() for p in env.items("PIWEB_WORKSPACE_ROOTS", str(VAR_DIR / "workspaces"))
]
# How workspaces are shared out (README "Workspaces"): "multi-user" (default) gives every
# user their own folder <root>/<user id>/ of each root, and a session's tools run only
# there; "single-user" lets the roots themselves be used (e.g. PIWEB_WORKSPACE_ROOTS=~),
# so a session imported from pi can continue in its own folder (~/code/proj).
PIWEB_WORKSPACE_MODE = env.choice(
    "PIWEB_WORKSPACE_MODE", "multi-user", ("multi-user", "single-user")
)
# New workspaces from an uploaded archive: the upload's size, and what it may unpack to.
PIWEB_WORKSPACE_ARCHIVE_MAX_MB = env.integer("PIWEB_WORKSPACE_ARCHIVE_MAX_MB", 100)
PIWEB_WORKSPACE_UNPACKED_MAX_MB = env.integer("PIWEB_WORKSPACE_UNPACKED_MAX_MB", 1024)
PIWEB_WORKSPACE_ARCHIVE_MAX_FILES = env.integer("PIWEB_WORKSPACE_ARCHIVE_MAX_FILES", 50000)
# Writing back to pi's file (README "Move a session between pi and the browser"): on by
# default for followed sessions on a single-user setup; per session either way.
PIWEB_WRITE_BACK_DEFAULT = env.boolean(
    "PIWEB_WRITE_BACK_DEFAULT", PIWEB_WORKSPACE_MODE == "single-user"
)
# pi is taken to be writing a session whose file changed less than this many seconds ago:
# the chat waits (and offers a fork) and the write-back waits until it is quiet.
PIWEB_PI_QUIET_SECONDS = env.decimal("PIWEB_PI_QUIET_SECONDS", 5)
# Where full bash output files and other per-run artifacts go.
PIWEB_ARTIFACT_DIR = env.path("PIWEB_ARTIFACT_DIR", VAR_DIR / "artifacts")
# Workspace snapshots (README "What the agent changed"): after every agent turn with tool
# calls and every `!cmd`, the workspace is committed to a shadow git repository under
# PIWEB_SNAPSHOT_DIR (one per workspace; the user's own .git is never touched). Files
# larger than PIWEB_SNAPSHOT_MAX_FILE_KB are left out, as are ignored files.
PIWEB_SNAPSHOTS = env.boolean("PIWEB_SNAPSHOTS", True)
PIWEB_SNAPSHOT_DIR = env.path("PIWEB_SNAPSHOT_DIR", VAR_DIR / "snapshots")
PIWEB_SNAPSHOT_MAX_FILE_KB = env.integer("PIWEB_SNAPSHOT_MAX_FILE_KB", 1024)
# The most diff text shown for one file (bytes) and for one page or export (bytes).
PIWEB_DIFF_MAX_FILE_BYTES = env.integer("PIWEB_DIFF_MAX_FILE_BYTES", 200000)
PIWEB_DIFF_MAX_TOTAL_BYTES = env.integer("PIWEB_DIFF_MAX_TOTAL_BYTES", 1000000)
# Global agent directory (AGENTS.md and skills that apply to every workspace).
PIWEB_AGENT_DIR = env.path("PIWEB_AGENT_DIR", VAR_DIR / "agent")

# The sandbox every command of a session runs in (README "Sandbox"): "bwrap" (default)
# or "off" (single-user machines only: commands then run as the worker's user).
PIWEB_SANDBOX = env.choice("PIWEB_SANDBOX", "bwrap", ("bwrap", "off"))
PIWEB_SANDBOX_BWRAP = env.text("PIWEB_SANDBOX_BWRAP", "bwrap")
# Network inside the sandbox: off by default (loopback only). On, commands can reach the
# internet and every service listening on the host (see the README for the risk).
PIWEB_SANDBOX_NETWORK = env.boolean("PIWEB_SANDBOX_NETWORK", False)
PIWEB_SANDBOX_CPU_SECONDS = env.integer("PIWEB_SANDBOX_CPU_SECONDS", 600)
PIWEB_SANDBOX_MEMORY_MB = env.integer("PIWEB_SANDBOX_MEMORY_MB", 3072)
PIWEB_SANDBOX_MAX_PROCESSES = env.integer("PIWEB_SANDBOX_MAX_PROCESSES", 256)
PIWEB_SANDBOX_FILE_SIZE_MB = env.integer("PIWEB_SANDBOX_FILE_SIZE_MB", 1024)
PIWEB_SANDBOX_TMP_MB = env.integer("PIWEB_SANDBOX_TMP_MB", 512)
# When the worker runs as root, commands run as this unprivileged host uid (and gid), so
# nothing a session leaves in its workspace belongs to root. "off" keeps them root's on
# the host (not recommended). Ignored when the worker is not root: then its own account.
PIWEB_SANDBOX_HOST_UID = (
    None
    if env.text("PIWEB_SANDBOX_HOST_UID").strip().lower() == "off"
    else env.integer("PIWEB_SANDBOX_HOST_UID", 64100)
)
if PIWEB_SANDBOX_HOST_UID is not None and not 0 < PIWEB_SANDBOX_HOST_UID < 2**32 - 1:
    raise env.EnvError("PIWEB_SANDBOX_HOST_UID must be 'off' or a uid other than 0.")
# All processes of one command together (memory cgroup when the worker can make one,
# else the worker watches their resident memory); the per-process figure above is RLIMIT_AS.
PIWEB_SANDBOX_TOTAL_MEMORY_MB = env.integer("PIWEB_SANDBOX_TOTAL_MEMORY_MB", 3072)
# Wall time of a user's `!cmd` (the agent's bash tool has its own timeout argument).
PIWEB_USER_BASH_TIMEOUT = env.decimal("PIWEB_USER_BASH_TIMEOUT", 3600.0)

# Disk and memory a session may take (README "Security model"): the full-output file of a
# command keeps its last part past this size; each user's workspace folders together
# (measured in the background at most every PIWEB_WORKSPACE_MEASURE_SECONDS; 0 = no
# quota); the free space kept on the var folder's disk (below it commands are refused and
# running ones stopped); the biggest file the agent's read and edit tools open.
PIWEB_FULL_OUTPUT_MAX_MB = env.decimal("PIWEB_FULL_OUTPUT_MAX_MB", 50)
PIWEB_WORKSPACE_QUOTA_MB = env.decimal("PIWEB_WORKSPACE_QUOTA_MB", 10240)
PIWEB_WORKSPACE_MEASURE_SECONDS = env.decimal("PIWEB_WORKSPACE_MEASURE_SECONDS", 30)
PIWEB_DISK_RESERVE_MB = env.decimal("PIWEB_DISK_RESERVE_MB", 1024)
PIWEB_TOOL_MAX_FILE_MB = env.decimal("PIWEB_TOOL_MAX_FILE_MB", 32)

# Fairness (README "Queues and fairness"): how many runs (agent turns and `!cmd`) of one
# user run at once (more wait, "queued behind your other runs"), and the worker slots of
# each queue besides the agent runs' (PIWEB_WORKER_CONCURRENCY): short commands,
# summaries (compaction, branch and compare summaries), imports and other small tasks.
PIWEB_USER_MAX_RUNS = env.integer("PIWEB_USER_MAX_RUNS", 2)
PIWEB_COMMAND_CONCURRENCY = env.integer("PIWEB_COMMAND_CONCURRENCY", 3)
PIWEB_SUMMARY_CONCURRENCY = env.integer("PIWEB_SUMMARY_CONCURRENCY", 2)
PIWEB_IMPORT_CONCURRENCY = env.integer("PIWEB_IMPORT_CONCURRENCY", 1)

# LLM model profiles. The default profile comes from PIWEB_LLM_* variables; more can be
# given as JSON in PIWEB_MODEL_PROFILES ({"name": {"base_url": ..., "model": ...}}).
# No model configured is a normal state: chat says how to configure one and summaries
# fall back to the offline summarizer.
PIWEB_LLM_BASE_URL = env.text("PIWEB_LLM_BASE_URL", "")
PIWEB_LLM_API_KEY = env.text("PIWEB_LLM_API_KEY", "")
PIWEB_LLM_MODEL = env.text("PIWEB_LLM_MODEL", "")
PIWEB_LLM_CONTEXT_WINDOW = env.integer("PIWEB_LLM_CONTEXT_WINDOW", 128000)
PIWEB_LLM_MAX_OUTPUT = env.integer("PIWEB_LLM_MAX_OUTPUT", 16384)
PIWEB_LLM_TIMEOUT = env.decimal("PIWEB_LLM_TIMEOUT", 120.0)
PIWEB_MODEL_PROFILES_JSON = env.text("PIWEB_MODEL_PROFILES")
env.json_object("PIWEB_MODEL_PROFILES")  # (parsed by services.llm; checked here, at startup)

# pi's agent folder (models.json, auth.json, settings.json), read as pi reads it and
# re-read when a file changes. Unset: ~/.pi/agent of the user running piweb when that
# folder exists; "" (empty): none.
_pi_agent_dir = env.set_value("PIWEB_PI_AGENT_DIR")  # (set but empty means "none")
if _pi_agent_dir is None:
    _default_agent_dir = Path.home() / ".pi" / "agent"
    _pi_agent_dir = str(_default_agent_dir) if _default_agent_dir.is_dir() else ""
PIWEB_PI_AGENT_DIR = _pi_agent_dir
# Who may use the server's keys (environment variables, pi's auth.json and models.json):
# "all" signed-in users (default; a single-user or trusted team setup) or "staff" only
# (others bring their own key on the Models page).
PIWEB_SERVER_KEYS = env.choice("PIWEB_SERVER_KEYS", "all", ("all", "staff"))
# The key that encrypts users' own API keys (Fernet, urlsafe base64 of 32 bytes). Unset:
# derived from SECRET_KEY with HKDF-SHA256 (rotating SECRET_KEY then loses stored keys).
PIWEB_KEY_ENCRYPTION_KEY = env.text("PIWEB_KEY_ENCRYPTION_KEY")

# Compaction defaults (pi's); pi's settings.json, then a session's
# own (Session.settings), override them.
PIWEB_COMPACTION = {
    "enabled": env.boolean("PIWEB_COMPACTION_ENABLED", True),
    "reserve_tokens": env.integer("PIWEB_COMPACTION_RESERVE_TOKENS", 16384),
    "keep_recent_tokens": env.integer("PIWEB_COMPACTION_KEEP_RECENT_TOKENS", 20000),
}
# Context windows by model for the session page's context chart, as JSON
# ({"claude-sonnet-4-5": 200000, "openai/gpt-5.1-codex": 400000}: a model id or a
# provider/model key); other models use their session's profile window, else
# PIWEB_LLM_CONTEXT_WINDOW.
PIWEB_MODEL_CONTEXT_WINDOWS = env.json_object("PIWEB_MODEL_CONTEXT_WINDOWS")
# A job whose worker has not reported for this long is treated as dead.
PIWEB_JOB_STALE_SECONDS = env.integer("PIWEB_JOB_STALE_SECONDS", 120)
# Jobs area: how often a running job reports (default min(5s, stale/4)), how many runs a
# job gets before it is failed, and the capped exponential backoff for provider errors.
PIWEB_JOB_HEARTBEAT_SECONDS = env.decimal("PIWEB_JOB_HEARTBEAT_SECONDS", 0.0) or None
PIWEB_JOB_MAX_ATTEMPTS = env.integer("PIWEB_JOB_MAX_ATTEMPTS", 3)
# Queue for compaction / branch-summary tasks ("" = CELERY_TASK_DEFAULT_QUEUE).
PIWEB_JOBS_QUEUE = env.text("PIWEB_JOBS_QUEUE", "")
# The one retry policy of model calls (agent runs and summaries; agent/retry.py): how many
# retries, and the capped exponential backoff between them (seconds).
PIWEB_LLM_RETRIES = env.integer("PIWEB_LLM_RETRIES", 4)
PIWEB_LLM_RETRY_BASE_DELAY = env.decimal("PIWEB_LLM_RETRY_BASE_DELAY", 1.0)
PIWEB_LLM_RETRY_MAX_DELAY = env.decimal("PIWEB_LLM_RETRY_MAX_DELAY", 30.0)
# How long a job waits for the session's agent run to end, and the Redis key prefix of
# live run state.
PIWEB_JOB_WAIT_FOR_RUN_SECONDS = env.decimal("PIWEB_JOB_WAIT_FOR_RUN_SECONDS", 1800.0)
PIWEB_CHAT_REDIS_PREFIX = env.text("PIWEB_CHAT_REDIS_PREFIX", "piweb:chat")
# Images attached to a chat message (README "Chat"): the biggest image file the server
# takes (pi keeps an image under 4.5 MB) and how many one message may carry. The page
# scales an image larger than 2000 px down first, as pi does.
PIWEB_CHAT_IMAGE_MAX_BYTES = env.integer("PIWEB_CHAT_IMAGE_MAX_BYTES", 4718592, minimum=1024)
PIWEB_CHAT_IMAGE_MAX_COUNT = env.integer("PIWEB_CHAT_IMAGE_MAX_COUNT", 8, minimum=1)

# Following pi's session folders (`watch_pi_sessions`): the folders `runpiweb` follows
# beside its worker (comma list; none by default), the user who owns the sessions (default:
# the only superuser), and how often a full rescan catches what change events missed.
PIWEB_PI_SESSION_DIRS = env.items("PIWEB_PI_SESSION_DIRS", "")
PIWEB_PI_SESSION_OWNER = env.text("PIWEB_PI_SESSION_OWNER", "")
PIWEB_PI_SESSION_RESCAN_SECONDS = env.decimal("PIWEB_PI_SESSION_RESCAN_SECONDS", 60.0)
# Whether a scan prepares new files in a second process while it writes (auto: when this
# process may run on more than one CPU; on; off).
PIWEB_FOLLOW_READ_AHEAD = env.choice("PIWEB_FOLLOW_READ_AHEAD", "auto", ("auto", "on", "off"))
# pi's own session folder, named in the startup banner when it exists and is not followed.
PIWEB_PI_DEFAULT_SESSION_DIR = env.path(
    "PIWEB_PI_DEFAULT_SESSION_DIR", Path.home() / ".pi" / "agent" / "sessions"
)

# Page limits (README "Limits of a page"): every page is bounded whatever a session holds.
# Characters of one text block a page renders before "show more"; characters one "show
# more" request returns; the biggest page/partial response (downloads stream instead);
# characters the context inspector counts exactly with tiktoken per request (beyond:
# pi's chars/4 estimate, marked ≈).
PIWEB_PREVIEW_CHARS = env.integer("PIWEB_PREVIEW_CHARS", 20000)
PIWEB_SHOW_MORE_CHARS = env.integer("PIWEB_SHOW_MORE_CHARS", 200000)
PIWEB_MAX_RESPONSE_BYTES = env.integer("PIWEB_MAX_RESPONSE_BYTES", 8 * 1024 * 1024)
PIWEB_EXACT_TOKEN_CHARS = env.integer("PIWEB_EXACT_TOKEN_CHARS", 2000000)
# Seconds of Markdown rendering one request may spend; later blocks show as plain text.
PIWEB_RENDER_SECONDS = env.decimal("PIWEB_RENDER_SECONDS", 5.0)

# Uploads (README "Security model"): the biggest session file /import/ takes. The server
# (piweb.server) refuses a bigger body before reading it; the upload handler writes the
# file straight into PIWEB_IMPORT_DIR as it arrives and stops at the limit; an import job
# in the worker reads it from there (so in a scale-out layout that folder is shared).
PIWEB_MAX_UPLOAD_BYTES = env.integer("PIWEB_MAX_UPLOAD_BYTES", 512 * 1024 * 1024)
PIWEB_IMPORT_DIR = env.path("PIWEB_IMPORT_DIR", VAR_DIR / "imports")
# Django keeps at most this much of a request body in memory (the rest goes to disk).
FILE_UPLOAD_MAX_MEMORY_SIZE = 256 * 1024

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env.text("LOG_LEVEL", "INFO")},
    "loggers": {
        "httpx": {"level": "WARNING"},
        "openai": {"level": "WARNING"},
        "daphne": {"level": "WARNING"},
    },
}
