"""`make screenshots`: every main screen of piweb, from a seeded demo session, into
docs/screenshots/ (PNG). A throwaway database and server (bench/browser_support.py).

Usage:  .venv/bin/python bench/screenshots.py [--out docs/screenshots]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.browser_support import REPO, chromium, daphne, logged_in_context, test_database  # noqa: E402

# Long forms: the whole page, not only the first screen.
FULL_PAGE = ("models", "users")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default=str(REPO / "docs" / "screenshots"))
    parser.add_argument("--only", default="", help="comma list of screen names (default: all)")
    args = parser.parse_args()
    only = {name for name in args.only.split(",") if name}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with test_database() as connection:
        from django.contrib.auth import get_user_model

        from sessions_app.models import Team, TeamMembership
        from sessions_app.services import sessions, sharing
        from tests.support.tree_data import import_branched

        users = get_user_model().objects
        owner = users.create_user("demo", password="demo-only", is_staff=True)  # an admin
        mate = users.create_user("reviewer", password="demo-only")
        session = import_branched(owner, "/home/demo/project")
        sessions.rename_session(session, "Fix the flaky upload test", actor=owner)
        team = Team.objects.create(name="platform")
        TeamMembership.objects.create(team=team, user=owner, role="admin")
        TeamMembership.objects.create(team=team, user=mate, role="viewer")
        sharing.share_with_team(session, team.pk, "editor", actor=owner)
        link = sharing.create_link(session, actor=owner, leaf_pi_id=None)
        sid = session.pi_id
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
            ("sharing", f"/s/{sid}/sharing/?leaf=e0000014", None),
            ("share-page", f"/l/{link.token}/", None),
            ("teams", "/teams/", None),
            ("usage", "/usage/", None),
            ("review-mode", f"/queues/{queue.pk}/review/", None),
            ("review-queues", f"/teams/{team.pk}/queues/", None),
            ("models", "/models/", None),
            ("users", "/users/", new_invitation),
            ("account", "/account/password/", None),
        ]
        # Every screen at 1280x800, the main ones at 390x844 too, each in the light and the
        # dark theme (the browser's prefers-color-scheme; the user's choice is "system").
        phone_shots = ("session-chat", "sessions-list", "session-node-drawer", "models", "users")
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


if __name__ == "__main__":
    main()
