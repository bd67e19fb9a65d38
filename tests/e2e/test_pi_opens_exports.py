"""pi itself (0.80.2 and 1.6.0) opens piweb's JSONL exports where piweb was.

Every session state below is exported with the web export's code, written to a file and
opened by pi's own SessionManager (tests/support/pi_open.mjs, under Node 24). pi's leaf
id and the context it builds there must equal piweb's leaf and `load_context`. The
sessions hold only entry types whose context pi 0.73, 0.80 and 1.6 build alike.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from sessions_app.models import Entry, Session
from sessions_app.presentation import exports
from sessions_app.selectors import paths
from sessions_app.selectors.exporter import LEAF_MARKER_TYPE
from sessions_app.services import chat, fork, jobs, navigation, sessions
from sessions_app.services.importer import import_jsonl_stream
from tests.support.job_sessions import SMALL, add_turn, make_session, wait_for_job
from tests.support.pi1_session import import_pi1_session
from tests.support.pi16_sessions import sessions_dir as pi160_dir
from tests.support.pi_reference import VERSIONS, open_in_pi, pi_or_skip
from tests.support.real_sessions import real_session_bytes
from tests.support.scripted_llm import text
from tests.support.tree_data import branched_jsonl, import_branched

pytestmark = [pytest.mark.django_db(transaction=True)]


class Exported:
    """Files written from piweb's exports, with what piweb says about each."""

    def __init__(self, directory: Path):
        self.directory = directory
        self.expected: dict[str, tuple[str | None, list]] = {}
        self.texts: dict[str, str] = {}

    def add(self, name: str, session: Session, *, context=VERSIONS) -> str:
        """Export `session`; every pi must open it at its leaf, and the pi versions in
        `context` must build the context piweb builds there."""
        session = Session.objects.get(pk=session.pk)
        export = exports.export_session(session, "jsonl")  # what the download streams
        data = b"".join(export.content) if export.streams else export.content.encode()
        (self.directory / f"{name}.jsonl").write_bytes(data)
        content = data.decode("utf-8")
        leaf = session.leaf.pi_id if session.leaf_id else None
        messages = json.loads(json.dumps(paths.load_context(session)["messages"]))
        self.expected[f"{name}.jsonl"] = (leaf, messages, context)
        self.texts[name] = content
        return content

    def check(self, scratch: Path) -> dict:
        files = [self.directory / name for name in self.expected]
        results = open_in_pi(pi_or_skip(), files, scratch)
        for version, by_file in results.items():
            for name, (leaf, messages, context_versions) in self.expected.items():
                got = by_file[name]
                where = f"pi {version} on {name}"
                if leaf is None:
                    # pi cannot hold "no leaf" in a file with entries: our marker root.
                    marker = json.loads(self.texts[name[: -len(".jsonl")]].splitlines()[-1])
                    assert marker["customType"] == LEAF_MARKER_TYPE, where
                    assert got["leafId"] == marker["id"], where
                else:
                    assert got["leafId"] == leaf, f"{where}: leaf"
                if version in context_versions:
                    assert got["context"]["messages"] == messages, f"{where}: context"
        return results


def _pi1_only(path: list[dict]) -> bool:
    """Whether a path holds what only pi 1.x builds a context from (context edits, system
    messages, a compaction's systemMessage or self-referring firstKeptEntryId)."""
    for entry in path:
        if entry.get("type") == "context_edit":
            return True
        if entry.get("type") == "message" and (entry.get("message") or {}).get("role") == "system":
            return True
        if entry.get("type") == "compaction" and (
            "systemMessage" in entry or entry.get("firstKeptEntryId") == entry.get("id")
        ):
            return True
    return False


def _last_line_id(content: str) -> str:
    return json.loads(content.splitlines()[-1])["id"]


def test_pi_opens_navigated_labelled_and_forked_sessions_at_pipwebs_leaf(make_user, tmp_path):
    pi_or_skip()
    owner = make_user()
    session = import_branched(owner, str(tmp_path))
    out = Exported(tmp_path / "exports")
    out.directory.mkdir()

    # Nobody changed it: the file pi wrote comes back byte for byte (the bad line aside,
    # which the import skipped), and pi opens it at the same leaf.
    original = branched_jsonl(str(tmp_path), bad_line=False).decode()
    unchanged = out.add("unchanged", session)
    assert [json.loads(x) for x in unchanged.splitlines()[1:]] == [
        json.loads(x) for x in original.splitlines()[1:]
    ]
    assert _last_line_id(unchanged) == "e0000014"

    # A moved leaf with children after it (branch A), one on the branch-summary branch,
    # one right after the compaction, and a root user message (leaf None).
    for name, target in (
        ("moved-a", "e000000b"),
        ("moved-summary-branch", "e0000016"),
        ("moved-after-compaction", "e0000012"),
        ("moved-before-compaction", "e0000011"),
    ):
        navigation.navigate(session, target, actor=owner)
        content = out.add(name, session)
        assert _last_line_id(content) == target
    navigation.navigate(session, "e0000001", actor=owner)  # a root user message: leaf None
    out.add("leaf-none", session)

    # Labels: set at a leaf (the label entry becomes the leaf), then the leaf moves on.
    navigation.navigate(session, "e0000014", actor=owner)
    navigation.set_label(session, "e0000011", "B works", actor=owner)
    out.add("label-at-leaf", session)
    navigation.navigate(session, "e000000e", actor=owner)
    navigation.set_label(session, "e000000a", "approach A", actor=owner)
    navigation.navigate(session, "e0000013", actor=owner)
    content = out.add("label-then-moved", session)
    assert Entry.objects.get(session=session, pi_id="e000000a").label == "approach A"

    # Forks of every scope, at the branch point, inside a branch and after the compaction.
    for target in ("e0000004", "e000000c", "e0000012"):
        for scope in fork.SCOPES:
            forked = fork.fork_session(session, target, scope, actor=owner)
            out.add(f"fork-{scope}-{target}", forked)

    # Files pi 1.6.0 wrote, with the leaf moved to an entry that has children: pi 1.6.0
    # builds piweb's context there; pi 0.80.2 too where the path holds nothing only 1.x
    # understands (context edits, system messages, a 1.x compaction).
    for path in sorted(pi160_dir().glob("session-*.jsonl"))[:6]:
        imported = import_jsonl_stream(path.open("rb"), owner, filename=path.name).session
        parents = set(Entry.objects.filter(session=imported).values_list("parent_pi_id", flat=True))
        inner = list(
            Entry.objects.filter(session=imported, pi_id__in=parents, type="message")
            .exclude(role="user")
            .order_by("seq")
            .values_list("pi_id", flat=True)
        )
        target = inner[len(inner) // 2]
        sessions.set_leaf(imported, target, actor=owner)
        out.add(
            f"pi160-{path.stem}",
            imported,
            context=("1.6.0",)
            if _pi1_only(paths.load_path(Session.objects.get(pk=imported.pk)))
            else VERSIONS,
        )

    # Context edits, system messages, usage, an unknown type and a pi 1.x compaction
    # (keeps nothing, re-states a system message): pi 1.6.0 builds piweb's context.
    pi1 = import_pi1_session(owner)
    out.add("pi1-unchanged", pi1, context=("1.6.0",))
    sessions.set_leaf(pi1, "b0000005", actor=owner)
    out.add("pi1-moved-after-1x-compaction", pi1, context=("1.6.0",))
    sessions.set_leaf(pi1, "b00000e2", actor=owner)
    out.add("pi1-moved-between-edits", pi1, context=("1.6.0",))

    # A 1 MB session with real pi shapes (signatures, images, aborted runs, custom
    # providers), unchanged and with the leaf moved back.
    real = import_jsonl_stream(io.BytesIO(real_session_bytes()), owner, filename="real.jsonl")
    assert out.add("real-unchanged", real.session).encode() == real_session_bytes()
    aborted = (
        Entry.objects.filter(session=real.session, role="assistant", line__contains='"aborted"')
        .order_by("seq")
        .values_list("pi_id", flat=True)[2]
    )
    sessions.set_leaf(real.session, aborted, actor=owner)
    out.add("real-moved-to-aborted", real.session)

    results = out.check(tmp_path / "pi")
    # The checks above compared something: pi's contexts are not empty on these files.
    assert all(results[v]["moved-a.jsonl"]["context"]["messages"] for v in results)


@pytest.fixture
def owner(make_user):
    return make_user()


@pytest.mark.worker
def test_pi_opens_sessions_after_piweb_compactions_summaries_and_turns(
    worker, owner, workspace, llm, tmp_path
):
    pi_or_skip()
    out = Exported(tmp_path / "exports")
    out.directory.mkdir()
    session = make_session(owner, turns=4, compaction=SMALL, cwd=str(workspace))

    llm.push(text("## Goal\nCompacted by piweb."))
    job = jobs.request_compaction(session, actor=owner)
    wait_for_job(job)
    assert job.status == "done", job.error
    out.add("compacted", session)
    add_turn(session, 5)
    out.add("turn-after-compaction", session)

    # Navigate with a summary back to turn 2's answer: the summary becomes the leaf.
    session.refresh_from_db()
    turn2 = Entry.objects.filter(session=session, type="message", role="assistant").order_by("seq")[
        3
    ]
    llm.push(text("## Goal\nThe branch left behind."))
    job = jobs.request_branch_summary(
        session, old_leaf_pi_id=session.leaf.pi_id, target_pi_id=turn2.pi_id, actor=owner
    )
    wait_for_job(job)
    assert job.status == "done", job.error
    out.add("branch-summary", session)
    add_turn(session, 6)
    out.add("turn-after-branch-summary", session)

    # A real agent turn (the worker runs it against the scripted model).
    llm.push(text("Turn answered by the agent."))
    run = chat.send_message(Session.objects.get(pk=session.pk), owner, "one more thing")
    wait_for_job(run)
    assert run.status == "done", run.error
    out.add("agent-turn", session)

    # The leaf moves back before the compaction: the compaction is no longer on the path.
    navigation.navigate(session, turn2.pi_id, actor=owner)
    out.add("moved-before-piweb-compaction", session)
    for scope in fork.SCOPES:
        out.add(f"fork-{scope}", fork.fork_session(session, turn2.pi_id, scope, actor=owner))
    out.check(tmp_path / "pi")
