"""The session tree in the database.

A Session is a pi session header plus a leaf pointer; an Entry is one pi entry, kept
verbatim as its JSONL `line` (so export writes back exactly what was imported) with a few
denormalized columns for the pages and search. Writes go through `services/`.
"""

import json
import uuid

from django.conf import settings
from django.db import models

from sessions_app.core.jsonl import serialize_entry

# Entry types the context builder finds by type (services/sessions.py, large sessions).
CONTEXT_MARKER_TYPES = ("compaction", "thinking_level_change", "model_change")


class Team(models.Model):
    name = models.CharField(max_length=200, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    members = models.ManyToManyField(
        settings.AUTH_USER_MODEL, through="TeamMembership", related_name="teams"
    )

    def __str__(self):
        return self.name


class TeamMembership(models.Model):
    class Role(models.TextChoices):
        # viewer: reads what is shared with the team, even where the share says editor;
        # reviewer: reads as a viewer and scores; editor: the share's role, and scores;
        # admin: as editor, and manages the team's members, score configs and queues.
        VIEWER = "viewer", "Viewer"
        REVIEWER = "reviewer", "Reviewer"
        EDITOR = "editor", "Editor"
        ADMIN = "admin", "Admin"

    team = models.ForeignKey(Team, on_delete=models.CASCADE)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.EDITOR)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["team", "user"], name="unique_team_member")]


class Session(models.Model):
    class Source(models.TextChoices):
        LIVE = "live", "Live"
        IMPORTED = "imported", "Imported"
        FORK = "fork", "Fork"

    pi_id = models.CharField(max_length=64, unique=True, help_text="The header's id.")
    version = models.PositiveSmallIntegerField(default=3)
    cwd = models.TextField(blank=True)
    header_timestamp = models.CharField(max_length=40)
    parent_session_ref = models.TextField(
        blank=True, help_text="The header's parentSession, as written in the file."
    )
    parent = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="forks"
    )
    name = models.CharField(max_length=500, blank=True)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="pi_sessions"
    )
    source = models.CharField(max_length=16, choices=Source.choices, default=Source.LIVE)
    # None means "before the first entry" (an empty context), as in pi.
    leaf = models.ForeignKey(
        "Entry", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    next_seq = models.PositiveIntegerField(default=0)
    entry_count = models.PositiveIntegerField(default=0)
    first_message = models.CharField(max_length=300, blank=True)
    # Managing sessions in the app (issue 27): archived ones leave the default list, pinned
    # ones lead it; tags are stored one a line, framed by newlines ("\nbug\nui\n") so a
    # filter matches whole tags.
    archived = models.BooleanField(default=False, db_index=True)
    pinned = models.BooleanField(default=False)
    tags = models.CharField(max_length=500, blank=True, default="")
    model_profile = models.CharField(max_length=100, blank=True)
    settings = models.JSONField(default=dict, blank=True)
    import_sha256 = models.CharField(max_length=64, blank=True)
    # The header line as imported (JSON.stringify form), kept so export writes back extra
    # header keys in their order; blank for sessions made here (export uses header()).
    header_line = models.TextField(blank=True, default="")
    # The pi session file this session was read from (an import from disk, or a followed
    # file; its latest path after a rename); blank for uploads and sessions made here.
    source_path = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    modified_at = models.DateTimeField(auto_now=True)
    # The session's own times: the pi header's timestamp and its newest entry's.
    started_at = models.DateTimeField(null=True, blank=True)
    last_activity_at = models.DateTimeField(null=True, blank=True)
    # The whole tree's usage (copied fork entries included), kept by services/usage.py.
    usage_tokens = models.BigIntegerField(default=0)
    usage_cost = models.FloatField(default=0.0)
    usage_models = models.TextField(blank=True, default="", help_text="Bucket keys, by cost.")

    class Meta:
        indexes = [
            models.Index(fields=["owner", "-modified_at"]),
            models.Index(fields=["-modified_at"]),
            models.Index(fields=["-last_activity_at"], name="session_last_activity"),
            models.Index(fields=["-usage_cost"], name="session_usage_cost"),
        ]

    def __str__(self):
        """Its name, else its first user message (as pi's /resume lists it), else its id."""
        return self.name or self.first_message or self.pi_id

    @property
    def leaf_pi_id(self) -> str | None:
        """The pi id of the session's leaf; None before the first entry (as in pi)."""
        return self.leaf.pi_id if self.leaf is not None else None

    def header(self) -> dict:
        """The pi session header line, with keys in pi's order."""
        header = {
            "type": "session",
            "version": self.version,
            "id": self.pi_id,
            "timestamp": self.header_timestamp,
            "cwd": self.cwd,
        }
        if self.parent_session_ref:
            header["parentSession"] = self.parent_session_ref
        return header


class SessionShare(models.Model):
    class Role(models.TextChoices):
        VIEWER = "viewer", "Viewer"
        EDITOR = "editor", "Editor"

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="shares")
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="shares")
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.VIEWER)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["session", "team"], name="unique_session_team")
        ]


class Entry(models.Model):
    """One pi entry. `line` is the single stored copy of it; `payload` is that line parsed.

    The entry is stored once, as text: PostgreSQL's jsonb would not keep key order (export
    must write back exactly what was imported), and a second, parsed copy doubled what an
    import writes. No query looks inside the JSON; the columns below are what SQL filters.
    """

    # Neither link below has a database-level constraint: PostgreSQL checks one with a
    # lookup per row at commit, and for a 100,000-entry import each check costs about a
    # fifth of the import. The services are the only writers, always inside one session
    # under its row lock (the importer refuses cycles and keeps dangling parentIds as
    # roots), and deletes cascade in Django. The unique (session, pi_id) and
    # (session, seq) indexes serve lookups by session.
    session = models.ForeignKey(
        Session,
        on_delete=models.CASCADE,
        related_name="entries",
        db_index=False,
        db_constraint=False,
    )
    pi_id = models.CharField(max_length=64)
    parent = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="children",
        db_constraint=False,
    )
    # The parentId as written, kept even when it points nowhere (parent is then null).
    parent_pi_id = models.CharField(max_length=64, null=True, blank=True)
    seq = models.PositiveIntegerField(help_text="Append order within the session.")
    type = models.CharField(max_length=32)
    timestamp = models.CharField(max_length=40)
    role = models.CharField(max_length=32, blank=True)
    tool_name = models.CharField(max_length=100, blank=True)
    preview = models.CharField(max_length=300, blank=True)
    label = models.CharField(max_length=200, blank=True)
    token_count = models.PositiveIntegerField(default=0)
    # pi's estimateTokens of a message entry's message (0 for other entries): what the
    # entry adds to the compaction cut-point walk (core.tokens.entry_token_estimate).
    # Filled when the entry is written; null for a row written before it existed.
    pi_tokens = models.BigIntegerField(null=True, blank=True)
    # What the entry adds to pi's usage breakdown (core/usage.py); blank key: nothing.
    usage_key = models.CharField(max_length=200, blank=True, default="")
    usage_input = models.BigIntegerField(default=0)
    usage_output = models.BigIntegerField(default=0)
    usage_cache_read = models.BigIntegerField(default=0)
    usage_cache_write = models.BigIntegerField(default=0)
    usage_cost = models.FloatField(default=0.0)
    # Copied from the source session by a fork here: team and user totals skip it.
    copied = models.BooleanField(default=False)
    # The entry as one JSONL line: JSON.stringify's form, no newline.
    line = models.TextField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["session", "pi_id"], name="unique_entry_pi_id"),
            models.UniqueConstraint(fields=["session", "seq"], name="unique_entry_seq"),
        ]
        indexes = [
            # With the id (PostgreSQL: INCLUDE; SQLite: the rowid is in every index), the
            # parent links of a big session are read from this index alone.
            models.Index(fields=["session", "parent"], include=["id"], name="entry_session_parent"),
            # Only the few entries the context builder looks up by type, and labelled
            # ones, are indexed: a full index on either column slows every import.
            models.Index(
                fields=["session", "type"],
                condition=models.Q(type__in=CONTEXT_MARKER_TYPES),
                name="entry_context_marker",
            ),
            models.Index(
                fields=["session", "label"], condition=~models.Q(label=""), name="entry_labelled"
            ),
        ]
        verbose_name_plural = "entries"

    def __str__(self):
        return f"{self.type} {self.pi_id}"

    @property
    def payload(self) -> dict:
        """The entry as a dict (parsed from `line` once per line value)."""
        cached = self.__dict__.get("_payload")
        if cached is None or cached[0] is not self.line:
            cached = (self.line, json.loads(self.line))
            self.__dict__["_payload"] = cached
        return cached[1]

    @payload.setter
    def payload(self, value: dict) -> None:
        self.line = serialize_entry(value)
        self.__dict__["_payload"] = (self.line, value)


class Job(models.Model):
    """A background job: compaction, branch summary, agent run, import, …

    An import job has no session until it has imported one (then it points at it); a
    search indexing job has none (its sessions are in ``params``); a workspace measure
    has none either: ``created_by`` is the user whose folders it measures; nor has a
    write-back (``params["session"]`` names the session whose pi file it writes)."""

    class Kind(models.TextChoices):
        COMPACTION = "compaction", "Compaction"
        BRANCH_SUMMARY = "branch_summary", "Branch summary"
        AGENT_RUN = "agent_run", "Agent run"
        COMPARE_SUMMARY = "compare_summary", "Branch comparison summary"
        IMPORT = "import", "Session import"
        SEARCH_INDEX = "search_index", "Search indexing"
        WORKSPACE_MEASURE = "workspace_measure", "Workspace measure"
        WRITE_BACK = "write_back", "Write-back to pi's file"
        SNAPSHOT_GC = "snapshot_gc", "Snapshot repository clean-up"

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"
        SUPERSEDED = "superseded", "Superseded"
        CANCELLED = "cancelled", "Cancelled"

    ACTIVE = (Status.QUEUED, Status.RUNNING)

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    session = models.ForeignKey(
        Session, null=True, blank=True, on_delete=models.CASCADE, related_name="jobs"
    )
    kind = models.CharField(max_length=32, choices=Kind.choices)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    prepared_leaf_pi_id = models.CharField(max_length=64, null=True, blank=True)
    target_pi_id = models.CharField(max_length=64, null=True, blank=True)
    params = models.JSONField(default=dict, blank=True)
    progress = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True)
    model = models.CharField(max_length=200, blank=True)
    attempts = models.PositiveIntegerField(default=0)
    result_entry = models.ForeignKey(
        Entry, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    # Set for the jobs panel (selectors.panels.jobs.jobs_list_context): its progress in
    # words, what started it, and whether the offline summarizer ran it.
    progress_text: str
    trigger: str
    offline: bool

    class Meta:
        indexes = [models.Index(fields=["session", "status"])]
        ordering = ["-created_at"]
        constraints = [
            # Chat: at most one queued/running agent run per branch start (DB-level guard;
            # runs are per branch, selectors/runs.py).
            models.UniqueConstraint(
                fields=["session", "prepared_leaf_pi_id"],
                condition=models.Q(kind="agent_run", status__in=["queued", "running"]),
                name="one_active_agent_run_per_branch",
            ),
            # At most one queued workspace measure per user: it measures what is there
            # when it runs, so one more would find the same.
            models.UniqueConstraint(
                fields=["created_by"],
                condition=models.Q(kind="workspace_measure", status="queued"),
                name="one_queued_workspace_measure_per_user",
            ),
        ]


class QueuedMessage(models.Model):
    """A message typed while the agent works, waiting for the run to take it: a *steer*
    is delivered after the current turn's tool calls, before the next model request; a
    *follow-up* when the run would otherwise end (pi's steering and follow-up queues).
    The row is deleted when it is delivered (it becomes a user message entry), cancelled
    or handed back to the chat box when the run is stopped."""

    class Mode(models.TextChoices):
        STEER = "steer", "Steer"
        FOLLOW_UP = "follow_up", "Follow-up"

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="queued")
    # The run (of one branch) it waits for; None: the run on the session's leaf.
    run = models.ForeignKey(
        "Job", null=True, blank=True, on_delete=models.SET_NULL, related_name="queued_messages"
    )
    mode = models.CharField(max_length=16, choices=Mode.choices)
    text = models.TextField()
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at", "id"]
        indexes = [models.Index(fields=["session", "mode", "created_at"])]


class ArchivedBranch(models.Model):
    """A branch folded away (issue 36): the subtree below `head_pi_id` is drawn folded
    in the tree until shown again. Only a view: its entries stay in the session and in
    its exports."""

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="archived_branches")
    head_pi_id = models.CharField(max_length=64)
    archived_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    archived_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["session", "head_pi_id"], name="one_archive_per_branch_head"
            )
        ]


class Comment(models.Model):
    """A reviewer's comment on an entry. Never part of the model's context."""

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="comments")
    entry = models.ForeignKey(Entry, on_delete=models.CASCADE, related_name="comments")
    author = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    reply_to = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.CASCADE, related_name="replies"
    )
    body = models.TextField()
    resolved = models.BooleanField(default=False)
    resolved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    resolved_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    # A thread root's replies, oldest first: set by selectors.comments.threads_for_entry.
    thread_replies: list["Comment"]

    class Meta:
        indexes = [models.Index(fields=["session", "resolved"])]
        ordering = ["created_at"]


class ShareLink(models.Model):
    """A read-only, revocable link to one branch and node of a session."""

    class Scope(models.TextChoices):
        PATH = "path", "The path from the root to this node"
        SUBTREE = "subtree", "The path to this node and everything under it"

    token = models.CharField(max_length=64, unique=True)
    # What the link shows (sharing.link_visible_entry_ids): the path root → leaf only, or
    # also every entry below the leaf (what grows there later included).
    scope = models.CharField(max_length=16, choices=Scope.choices, default=Scope.PATH)
    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="share_links")
    leaf_pi_id = models.CharField(max_length=64, null=True, blank=True)
    target_pi_id = models.CharField(max_length=64, null=True, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    # Whether the link's page shows the scores of the entries it shows (docs/scores.md).
    show_scores = models.BooleanField(default=False)

    # Set for the sharing page (views.sharing): whether it works now, and its address.
    state: str
    url: str


class Activity(models.Model):
    """The audit list of a session: who imported, forked, navigated, compacted, …"""

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="activity")
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    verb = models.CharField(max_length=40)
    details = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
        verbose_name_plural = "activity"


class UsageDaily(models.Model):
    """Usage per session, UTC day and bucket key, kept current on every entry write.

    `copied` rows hold what a fork copied from its source session: a session's own total
    counts them, a total over several sessions skips them when the source is counted too.
    """

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="usage_days")
    day = models.DateField()
    key = models.CharField(max_length=200)
    copied = models.BooleanField(default=False)
    input = models.BigIntegerField(default=0)
    output = models.BigIntegerField(default=0)
    cache_read = models.BigIntegerField(default=0)
    cache_write = models.BigIntegerField(default=0)
    cost = models.FloatField(default=0.0)
    entries = models.PositiveIntegerField(default=0)
    first_seq = models.PositiveIntegerField(help_text="Where the key first appears (pi's order).")

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["session", "day", "key", "copied"], name="unique_usage_day"
            )
        ]
        indexes = [models.Index(fields=["day"], name="usage_daily_day")]


class SearchDocument(models.Model):
    """The searchable text of one entry (services/search.py keeps it in step with writes).

    Full-text indexes are not Django fields: migration 0002_search_indexes adds a stored
    tsvector column with a GIN index on PostgreSQL and an FTS5 table (synced by triggers)
    on SQLite.
    """

    entry = models.OneToOneField(
        Entry, primary_key=True, on_delete=models.CASCADE, related_name="search_document"
    )
    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="+")
    role = models.CharField(max_length=32, blank=True)
    tool_name = models.CharField(max_length=100, blank=True)
    date = models.DateTimeField(null=True, blank=True)
    text = models.TextField()

    class Meta:
        indexes = [
            models.Index(fields=["session", "role"]),
            models.Index(fields=["tool_name"]),
            models.Index(fields=["date"]),
        ]


class FollowedFile(models.Model):
    """A pi session file that `watch_pi_sessions` follows, and how far it has read it.

    `offset` is the end of the last complete line imported (a half-written line after it
    waits for its newline); `offset` and the entries it covers are committed together, so
    a restart resumes exactly there. `size`, `mtime_ns`, `device`/`inode` and the hashes
    of the first block and of the block that ends at `offset` tell an unchanged file, an
    append and a rewrite apart without reading the file again.
    """

    class State(models.TextChoices):
        FOLLOWING = "following", "Followed live"
        WAITING = "waiting", "Waiting for a complete first line"
        GONE = "gone", "Gone from disk"
        REFUSED = "refused", "Not a pi session (ignored)"
        ERROR = "error", "Error"

    path = models.TextField(unique=True)
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    session = models.ForeignKey(
        Session, null=True, blank=True, on_delete=models.SET_NULL, related_name="followed_files"
    )
    state = models.CharField(max_length=16, choices=State.choices, default=State.WAITING)
    message = models.TextField(blank=True, default="")
    device = models.BigIntegerField(default=0)
    inode = models.BigIntegerField(default=0)
    size = models.BigIntegerField(default=0)
    mtime_ns = models.BigIntegerField(default=0)
    offset = models.BigIntegerField(default=0)
    lines = models.BigIntegerField(default=0, help_text="Lines before `offset`.")
    head_hash = models.CharField(max_length=64, blank=True, default="")
    tail_hash = models.CharField(max_length=64, blank=True, default="")
    # False for a v1/v2 file (migrated as a whole): its growth is re-imported, not appended.
    appendable = models.BooleanField(default=True)
    last_read_at = models.DateTimeField(null=True, blank=True)
    gone_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        indexes = [models.Index(fields=["device", "inode"], name="followed_file_inode")]

    def __str__(self):
        return self.path


class FileSnapshot(models.Model):
    """The workspace's files as an entry left them: a commit of the workspace's shadow
    repository (agent/snapshots.py), keyed by the entry that caused it (an agent reply
    whose tool calls ran, a `!cmd`, a rewind). `base` is the commit of the workspace just
    before, so base → commit is exactly what that entry changed; `files` caches the
    changed files' names and line counts for the tree rows and cards."""

    class Kind(models.TextChoices):
        TURN = "turn", "Agent turn"
        BASH = "bash", "User command"
        REWIND = "rewind", "Rewind"

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="snapshots")
    entry = models.ForeignKey(Entry, on_delete=models.CASCADE, related_name="+")
    kind = models.CharField(max_length=16, choices=Kind.choices, default=Kind.TURN)
    repo = models.CharField(max_length=64, help_text="The shadow repository's key.")
    commit = models.CharField(max_length=64)
    base = models.CharField(max_length=64, blank=True, default="")
    files = models.JSONField(default=list, blank=True)
    added = models.PositiveIntegerField(default=0)
    removed = models.PositiveIntegerField(default=0)
    # Why no snapshot was taken after this entry ("": it was); such a row has no commit.
    skipped = models.CharField(max_length=300, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [models.Index(fields=["session", "entry"], name="file_snapshot_entry")]

    def __str__(self):
        return f"{self.kind} {self.commit[:12]}"


class WorkspaceUsage(models.Model):
    """How much disk one user's workspace folders take, as last measured in the background
    (services/jobs/workspace_measure.measure_workspace); the quota check before each command reads it."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, primary_key=True, related_name="+"
    )
    bytes = models.BigIntegerField(default=0)
    files = models.BigIntegerField(default=0)
    # Files whose setuid/setgid bits the measure removed (in total, over all measures).
    stripped = models.BigIntegerField(default=0)
    measured_at = models.DateTimeField()

    def __str__(self):
        return f"{self.user_id}: {self.bytes} bytes"


class ProviderKey(models.Model):
    """A user's own API key for one model provider, encrypted (selectors/provider_keys.py reads it, services/provider_keys.py stores it).

    The key is stored only as a Fernet token; it is never shown back, logged or exported.
    ``hint`` keeps the last four characters so that the Models page can tell keys apart.
    """

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="provider_keys"
    )
    provider = models.CharField(max_length=100)
    encrypted_key = models.BinaryField()
    hint = models.CharField(max_length=8, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user", "provider"], name="unique_provider_key")
        ]

    def __repr__(self):
        return f"<ProviderKey {self.user_id}:{self.provider}>"

    __str__ = __repr__


class ModelPreference(models.Model):
    """A user's default model and thinking level (the Models page; "" = not chosen)."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="model_preference"
    )
    provider = models.CharField(max_length=100, blank=True)
    model_id = models.CharField(max_length=200, blank=True)
    thinking_level = models.CharField(max_length=10, blank=True)
    updated_at = models.DateTimeField(auto_now=True)


class PromptTemplate(models.Model):
    """A user's own pi prompt template, kept in piweb (the Templates page): the text of a
    ``<name>.md`` file, front matter included (core/prompt_templates.py reads it)."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="prompt_templates"
    )
    name = models.CharField(max_length=100)
    text = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(fields=["user", "name"], name="unique_prompt_template")
        ]

    def __repr__(self):
        return f"<PromptTemplate {self.user_id}:{self.name}>"

    __str__ = __repr__


class AccessToken(models.Model):
    """A personal access token for the sync API (services/sync_tokens.py).

    Only the SHA-256 of the secret is stored; `prefix` (the token's first characters,
    not secret) finds the row without scanning. The token is shown once, when created.
    """

    class Scope(models.TextChoices):
        SYNC = "sync", "Sync pi session files"

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="access_tokens"
    )
    name = models.CharField(max_length=100)
    scope = models.CharField(max_length=16, choices=Scope.choices, default=Scope.SYNC)
    prefix = models.CharField(max_length=16, unique=True)
    digest = models.CharField(max_length=64)
    expires_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self):
        return f"{self.name} ({self.prefix}…)"


class SyncedFile(models.Model):
    """A pi session file on a user's own machine, sent by the sync client
    (services/sync.py): its identity is (owner, client, path on the client), apart from
    the server's own FollowedFile rows, so the same path on two laptops or on the server
    are three files. `offset` is the end of the last complete line the server holds;
    `pending` lists the ids of the entries piweb added that the client has not written
    back yet."""

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    client = models.CharField(max_length=100)
    client_path = models.TextField()
    session = models.ForeignKey(
        Session, null=True, blank=True, on_delete=models.SET_NULL, related_name="synced_files"
    )
    offset = models.BigIntegerField(default=0)
    lines = models.BigIntegerField(default=0)
    pending = models.JSONField(default=list, blank=True)
    last_pushed_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["owner", "client", "client_path"], name="unique_synced_file"
            )
        ]

    def __str__(self):
        return f"{self.client}: {self.client_path}"


class ScoreConfig(models.Model):
    """One thing a team scores answers on: a number in a range, a category, or yes/no."""

    class Kind(models.TextChoices):
        NUMBER = "number", "Number"
        CATEGORY = "category", "Category"
        BOOLEAN = "boolean", "Yes / no"

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="score_configs")
    name = models.CharField(max_length=60)
    kind = models.CharField(max_length=16, choices=Kind.choices)
    min_value = models.FloatField(null=True, blank=True)
    max_value = models.FloatField(null=True, blank=True)
    categories = models.JSONField(default=list, blank=True)
    description = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)

    # One reviewer's view of the config (selectors.review_queues.item_scores,
    # presentation.review_mode): their score of the answer, and the keys that give each value.
    given: "Score | None"
    keys: list[str]

    class Meta:
        ordering = ["name", "id"]
        constraints = [
            models.UniqueConstraint(fields=["team", "name"], name="unique_score_config_name")
        ]

    def __str__(self):
        return self.name


class Score(models.Model):
    """A reviewer's score of one entry, or of the branch that ends at it. Like a comment,
    never part of the model's context. One per reviewer, config, entry and target."""

    class Target(models.TextChoices):
        ENTRY = "entry", "This entry"
        BRANCH = "branch", "The branch ending here"

    config = models.ForeignKey(ScoreConfig, on_delete=models.CASCADE, related_name="scores")
    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="scores")
    entry = models.ForeignKey(Entry, on_delete=models.CASCADE, related_name="scores")
    target = models.CharField(max_length=8, choices=Target.choices, default=Target.ENTRY)
    # number: the number; yes/no: 1 or 0; category: the category's index (label keeps it).
    value = models.FloatField()
    label = models.CharField(max_length=60, blank=True, default="")
    comment = models.TextField(blank=True, default="")
    author = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["created_at", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["config", "entry", "target", "author"], name="unique_score_per_author"
            )
        ]
        indexes = [models.Index(fields=["session", "entry"], name="score_session_entry")]


class ReviewQueue(models.Model):
    """A team's list of answers to review, built once from a filter (docs/scores.md)."""

    class Scope(models.TextChoices):
        LEAF = "leaf", "The last answer of each session"
        BRANCH_ENDS = "branch_ends", "Every answer that ends a branch"

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="review_queues")
    name = models.CharField(max_length=200)
    filters = models.JSONField(default=dict, blank=True)
    scope = models.CharField(max_length=16, choices=Scope.choices, default=Scope.LEAF)
    reviews_per_item = models.PositiveSmallIntegerField(default=1)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]


class ReviewItem(models.Model):
    """One review of one answer: a queue asking for n reviews per answer holds n items
    (slots) per answer. An item is held by one reviewer at a time; a hold older than
    PIWEB_REVIEW_HOLD_SECONDS lapses and the item is free again."""

    queue = models.ForeignKey(ReviewQueue, on_delete=models.CASCADE, related_name="items")
    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="+")
    entry = models.ForeignKey(Entry, on_delete=models.CASCADE, related_name="+")
    slot = models.PositiveSmallIntegerField(default=0)
    position = models.PositiveIntegerField()
    assigned_to = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    held_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    held_at = models.DateTimeField(null=True, blank=True)
    done_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    done_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["position", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["queue", "entry", "slot"], name="unique_review_item_slot"
            )
        ]
        indexes = [
            models.Index(
                fields=["queue", "position"],
                condition=models.Q(done_at=None),
                name="review_item_open",
            ),
            # a reviewer's items in a queue: the one they hold, the ones they reviewed
            models.Index(fields=["queue", "held_by"], name="review_item_held"),
            models.Index(fields=["queue", "done_by"], name="review_item_done"),
        ]


class AnswerInput(models.Model):
    """What an agent run sent the model for one answer besides the messages: its system
    prompt and tools, recorded when the answer is stored (the messages are the context at
    the answer's parent, rebuilt exactly from the tree). A dataset row of an answer with
    none (stored before this existed, or imported) is rebuilt and marked `reconstructed`."""

    entry = models.OneToOneField(Entry, on_delete=models.CASCADE, related_name="sent_input")
    system_prompt = models.TextField()
    tools = models.JSONField(default=list)
    created_at = models.DateTimeField(auto_now_add=True)


class DisplayPreference(models.Model):
    """How a user's pages look: the colour theme ("system" follows the browser's
    `prefers-color-scheme`). Stored on the user so the choice follows them across browsers,
    and read by the server so `<html data-theme>` is right before the first paint."""

    class Theme(models.TextChoices):
        SYSTEM = "system", "System"
        LIGHT = "light", "Light"
        DARK = "dark", "Dark"

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="display_preference"
    )
    theme = models.CharField(max_length=10, choices=Theme.choices, default=Theme.SYSTEM)
    updated_at = models.DateTimeField(auto_now=True)

    def __repr__(self):
        return f"<DisplayPreference {self.user_id}:{self.theme}>"

    __str__ = __repr__


class ModelEndpoint(models.Model):
    """A model endpoint an admin added on the Models page, for everyone: an OpenAI-compatible,
    Anthropic or Google API at ``base_url``, under the provider name ``provider``, with its
    models (pi's Model fields: ``id``, ``name``, ``contextWindow``, ``maxTokens``, ``cost``)
    and an optional key (selectors/llm/catalog.py merges them into the catalog,
    services/endpoints.py stores them).

    The key is stored only as a Fernet token, like a user's own key (``ProviderKey``), and
    is never shown back; ``hint`` keeps its last four characters.
    """

    provider = models.CharField(max_length=100, unique=True)
    api = models.CharField(max_length=40)
    base_url = models.URLField(max_length=500)
    model_list = models.JSONField(default=list)
    encrypted_key = models.BinaryField(blank=True, default=b"")
    hint = models.CharField(max_length=8, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    def __repr__(self):
        return f"<ModelEndpoint {self.provider} {self.api}>"

    __str__ = __repr__


class Invitation(models.Model):
    """A link that lets one user set their password (services/users.py): only a SHA-256 of
    its token is stored; it works once, until ``expires_at``."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="invitations"
    )
    token_hash = models.CharField(max_length=64, unique=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    used_at = models.DateTimeField(null=True, blank=True)

    def __repr__(self):
        return f"<Invitation {self.user_id} until {self.expires_at:%Y-%m-%d %H:%M}>"

    __str__ = __repr__
