"""`make screenshots`: every main screen of piweb, from a seeded demo session, into
docs/screenshots/ (PNG). A throwaway database and server (bench/browser_support.py).

Usage:  .venv/bin/python bench/screenshots.py [--out docs/screenshots]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.browser_support import REPO, chromium, daphne, logged_in_context, test_database  # noqa: E402

# Long forms: the whole page, not only the first screen.
FULL_PAGE = ("models", "users", "alternatives")


@contextlib.contextmanager
def demo_folders():
    """Workspaces and snapshots of a folder of their own (in piweb's var folder, removed
    afterwards), here and in daphne: the demo must not write in a real user's area."""
    import os

    from django.conf import settings

    base = Path(tempfile.mkdtemp(prefix="screenshots-", dir=settings.VAR_DIR))
    base.chmod(0o711)  # (the sandbox's account passes through it, as through var/)
    saved = {k: os.environ.get(k) for k in ("PIWEB_WORKSPACE_ROOTS", "PIWEB_SNAPSHOT_DIR")}
    old = (settings.PIWEB_WORKSPACE_ROOTS, settings.PIWEB_SNAPSHOT_DIR)
    settings.PIWEB_WORKSPACE_ROOTS = [base / "workspaces"]
    settings.PIWEB_SNAPSHOT_DIR = base / "snapshots"
    os.environ["PIWEB_WORKSPACE_ROOTS"] = str(base / "workspaces")
    os.environ["PIWEB_SNAPSHOT_DIR"] = str(base / "snapshots")
    try:
        yield base
    finally:
        settings.PIWEB_WORKSPACE_ROOTS, settings.PIWEB_SNAPSHOT_DIR = old
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        shutil.rmtree(base, ignore_errors=True)


BUGGY = "def add(a, b):\n    return a - b\n"
CHECK = "python3 -c 'import calc; assert calc.add(2, 3) == 5, calc.add(2, 3)'"


def seed_alternatives(owner) -> tuple[str, str]:
    """A session in a real workspace whose last node left calc.py with a bug, and three
    finished variants of the next step (docs/alternatives.md), run here through the real
    run job with a scripted model: a fix with the default tools, a read-only look, and a
    wrong fix at thinking "high"; the check passes in one. (session id, node id)"""
    from django.conf import settings

    from sessions_app.services import alternatives, chat, jobs, sandboxing, sessions
    from sessions_app.services.workspaces import protect_user_area, user_workspace
    from tests.support.scripted_llm import ScriptedLLM, text, tool_call

    llm = ScriptedLLM()
    prices = {"input": 3, "output": 15, "cacheRead": 0.3, "cacheWrite": 3.75}
    profile = {
        "base_url": llm.base_url,
        "api_key": "demo-only",
        "provider": "demo",
        "context_window": 200000,
        "max_output": 8192,
        "reasoning": True,
        "cost": prices,
    }
    settings.PIWEB_MODEL_PROFILES_JSON = json.dumps({
        "demo-large": {**profile, "model": "coder-large"},
        "demo-small": {**profile, "model": "coder-small"},
    })  # fmt: skip
    folder = user_workspace(owner) / "calc"
    protect_user_area(owner, sandboxing.make_var_reachable())  # (the sandbox passes)
    folder.mkdir()
    (folder / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    session = sessions.create_session(owner=owner, cwd=str(folder), model_profile="demo-large")
    sessions.rename_session(session, "Fix add() in calc.py", actor=owner)

    def run(job):
        assert jobs.run_job(str(job.pk)) in ("done", "error"), job.pk

    run(chat.send_message(session, owner, f"!printf '{BUGGY}' > calc.py"))
    session.refresh_from_db()
    node = session.leaf_pi_id
    fix = {"path": "calc.py", "edits": [{"oldText": "a - b", "newText": "a + b"}]}
    llm.push_for(
        "Fix add",
        tool_call("read", {"path": "calc.py"}),
        tool_call("edit", fix),
        text("Fixed: `add` subtracted; it now returns `a + b`."),
    )
    llm.push_for(
        "Explain the bug",
        tool_call("grep", {"pattern": "return", "path": "."}),
        text("Line 2 of calc.py returns `a - b`: it should be `a + b`. No file was changed."),
    )
    wrong = {"path": "calc.py", "edits": [{"oldText": "a - b", "newText": "abs(a - b)"}]}
    llm.push_for(
        "Make add",
        tool_call("edit", wrong),
        text("`add` now returns `abs(a - b)`, so it is never negative."),
    )
    variants = [
        alternatives.Variant("Fix add() so the check passes."),
        alternatives.Variant(
            "Explain the bug in add().", tools=alternatives.TOOL_SETS["read-only"]
        ),
        alternatives.Variant("Make add() never negative.", "demo/coder-small", "high"),
    ]
    started = alternatives.start(session, owner, node, variants, check=CHECK)
    for s in started:
        run(s.job)
    llm.close()
    return session.pi_id, node


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default=str(REPO / "docs" / "screenshots"))
    parser.add_argument("--only", default="", help="comma list of screen names (default: all)")
    args = parser.parse_args()
    only = {name for name in args.only.split(",") if name}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with test_database() as connection, demo_folders():
        from django.contrib.auth import get_user_model

        from sessions_app.models import Team, TeamMembership
        from sessions_app.services import sessions, sharing
        from tests.support.tree_data import import_branched

        users = get_user_model().objects
        owner = users.create_user("demo", password="demo-only", is_staff=True)  # an admin
        mate = users.create_user("reviewer", password="demo-only")
        fresh = users.create_user("fresh", password="demo-only")  # the first run: no session
        session = import_branched(owner, "/home/demo/project")
        sessions.rename_session(session, "Fix the flaky upload test", actor=owner)
        team = Team.objects.create(name="platform")
        TeamMembership.objects.create(team=team, user=owner, role="admin")
        TeamMembership.objects.create(team=team, user=mate, role="viewer")
        sharing.share_with_team(session, team.pk, "editor", actor=owner)
        link = sharing.create_link(session, actor=owner, leaf_pi_id=None)
        sid = session.pi_id
        alt_sid, alt_node = seed_alternatives(owner)
        # scores and a review queue (docs/scores.md)
        from sessions_app.selectors.sessions import ListFilters
        from sessions_app.services import review_queues, scores

        quality = scores.create_config(
            team, actor=owner, name="quality", kind="number", min_value=1, max_value=5,
            description="1: wrong, 5: what a careful engineer would do",
        )  # fmt: skip
        scores.create_config(team, actor=owner, name="safe", kind="boolean")
        queue = review_queues.create_queue(
            team, actor=owner, name="Branch ends", filters=ListFilters(), scope="branch_ends"
        )
        first = review_queues.take_next(queue, actor=owner)
        review_queues.score_item(queue, first.pk, quality.pk, "4", actor=owner)

        # the Models page: a key of one's own and an endpoint for everyone; the Users page
        from sessions_app.services import endpoints, provider_keys
        from sessions_app.services import users as user_admin

        provider_keys.set_key(owner, "anthropic", "sk-ant-demo-only-0000000000000000wxyz")
        endpoints.save_endpoint(
            owner, "ollama", "openai-completions", "http://127.0.0.1:11434/v1",
            "llama3.1:8b, 128k, 4096\nqwen2.5-coder:14b, 32k, 8192", "",
        )  # fmt: skip
        user_admin.invite(owner, user_admin.create_user(owner, "newcomer", email="new@example.org"))

        invited = iter(range(1, 100))

        def new_invitation(page):
            page.fill("#users-create-username", f"another{next(invited)}")
            page.click("#users-create button[type=submit]")
            page.wait_for_load_state("networkidle")

        def open_chart(page):
            page.click("#context-gauge")
            page.wait_for_selector('[data-usage-chart="context"][data-ready]')

        def open_jobs(page):
            page.click("#toggle-drawer")
            page.locator("#jobs-panel").scroll_into_view_if_needed()

        def slash_commands(page):
            page.click("#chat-input")
            page.keyboard.type("/")
            page.wait_for_selector("#composer-complete:not([hidden])")

        shots = [
            ("sessions-list", "/", None),
            ("session-chat", f"/s/{sid}/", None),
            ("session-node-drawer", f"/s/{sid}/?target=e0000004", None),
            ("session-context-chart", f"/s/{sid}/", open_chart),
            ("session-slash-commands", f"/s/{sid}/", slash_commands),
            ("compare", f"/s/{sid}/compare/?a=e0000014&b=e0000010", None),
            ("alternatives", f"/s/{alt_sid}/alternatives/?at={alt_node}", None),
            ("sharing", f"/s/{sid}/sharing/?leaf=e0000014", None),
            ("share-page", f"/l/{link.token}/", None),
            ("teams", "/teams/", None),
            ("usage", "/usage/", None),
            ("review-mode", f"/queues/{queue.pk}/review/", None),
            ("review-queues", f"/teams/{team.pk}/queues/", None),
            ("models", "/models/", None),
            ("users", "/users/", new_invitation),
            ("account", "/account/password/", None),
            ("session-jobs", f"/s/{alt_sid}/", open_jobs),
        ]
        # Screens of someone else: the first run (no session yet) and the login page.
        others = [("sessions-empty", "/", fresh), ("login", "/login/", None)]
        # Every screen at 1280x800, the main ones at 390x844 too, each in the light and the
        # dark theme (the browser's prefers-color-scheme; the user's choice is "system").
        phone_shots = (
            "session-chat", "sessions-list", "session-node-drawer", "models", "users",
            "sessions-empty", "login",
        )  # fmt: skip
        with daphne(connection) as base, chromium() as browser:
            for scheme in ("light", "dark"):
                for viewport, suffix in (
                    ({"width": 1280, "height": 800}, ""),
                    ({"width": 390, "height": 844}, "-phone"),
                ):
                    context = logged_in_context(
                        browser, base, owner, viewport=viewport, color_scheme=scheme
                    )
                    page = context.new_page()
                    for name, url, prepare in shots:
                        if (suffix and name not in phone_shots) or (only and name not in only):
                            continue
                        page.goto(url, wait_until="networkidle")
                        if prepare:
                            prepare(page)
                        theme = "" if scheme == "light" else "-dark"
                        path = out / f"{name}{suffix}{theme}.png"
                        page.screenshot(path=str(path), full_page=name in FULL_PAGE)
                        print(path)
                    context.close()
                    for name, url, who in others:
                        if (suffix and name not in phone_shots) or (only and name not in only):
                            continue
                        if who is None:
                            context = browser.new_context(
                                base_url=base, viewport=viewport, color_scheme=scheme
                            )
                        else:
                            context = logged_in_context(
                                browser, base, who, viewport=viewport, color_scheme=scheme
                            )
                        page = context.new_page()
                        page.goto(url, wait_until="networkidle")
                        theme = "" if scheme == "light" else "-dark"
                        path = out / f"{name}{suffix}{theme}.png"
                        page.screenshot(path=str(path))
                        print(path)
                        context.close()


if __name__ == "__main__":
    main()
