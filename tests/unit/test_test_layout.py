"""Tests mirror the code: every app module with logic has a test module named after it
(tests/support/code_layout.py says where and how), and every unit or service test module
is named after a module of the app or of piweb/, or is one of the few that check a
property across the whole app.

The rule counts statements, so it does not drift; the lists below are the only way out and
each says why.
"""

import pytest

from tests.support import code_layout

pytestmark = pytest.mark.embedded  # needs no database: it runs in both passes

# Modules whose behaviour shows only through a running server, worker or browser: the
# tests/e2e/ modules that cover each (the first path names the main one).
COVERED_END_TO_END = {
    "consumers.py": "e2e/test_agent_ws.py, e2e/test_ws_revocation.py (websockets via daphne)",
    "services/events.py": "e2e/test_ws_revocation.py, e2e/test_sessions_list_ws.py",
    "management/commands/runpiweb.py": "e2e/test_runpiweb_supervisor.py (the processes)",
    "management/commands/watch_pi_sessions.py": "e2e/test_follow_watcher.py (the watcher)",
    "templatetags/tree_tags.py": "e2e/test_tree_browser.py (the rows it draws)",
    "services/manage.py": "e2e/test_manage_sessions_browser.py (archive, pin, tag, delete)",
    "views/manage.py": "e2e/test_manage_sessions_browser.py",
    "services/teams.py": "e2e/test_teams_browser.py (teams made and shared in Chromium)",
    "views/teams.py": "e2e/test_teams_browser.py",
}

# The agent's model API modules: tests/unit/test_providers.py (named after their package)
# runs the same cases on each API's module against a fake server speaking its protocol.
COVERED_BY_THEIR_PACKAGE = {
    "agent/providers/anthropic_messages.py": "unit/test_providers.py",
    "agent/providers/conversion.py": "unit/test_providers.py",
    "agent/providers/errors.py": "unit/test_providers.py",
    "agent/providers/google_generative_ai.py": "unit/test_providers.py",
    "agent/providers/openai_completions.py": "unit/test_providers.py",
    "agent/providers/openai_responses.py": "unit/test_providers.py",
    "agent/providers/streaming.py": "unit/test_providers.py",
    "agent/providers/thinking.py": "unit/test_providers.py",
    "agent/providers/transport.py": "unit/test_providers.py",
}

# Modules with logic that have no test module of their own yet: the modules whose cases
# exercise them meanwhile (to be moved when those modules are next split). Empty now.
NO_TEST_YET: dict[str, str] = {}

# Unit and service test modules that check one property across the whole app, so no single
# module owns them.
ACROSS_THE_APP = {
    "unit/test_layers.py": "the import rules of docs/ARCHITECTURE.md, for every module",
    "unit/test_import_cycles.py": "no import cycle among the app's modules",
    "unit/test_test_layout.py": "this check",
    "unit/test_file_access.py": "only allow-listed modules call file functions (issue #33)",
    "unit/test_design_tokens.py": "no colour literal outside static/piweb/tokens.css; contrast",
    "unit/test_model_catalog.py": "the committed catalog is what bin/generate-model-catalog writes",
    "unit/test_docs.py": "README.md and docs/: a short front door, no paragraph twice, live links",
    "service/test_permissions_matrix.py": "every route for every persona",
    "service/test_page_limits.py": "every page stays small on big sessions",
    "service/test_no_reflected_markup.py": "no page reflects markup it was sent",
    "service/test_hostile_input.py": "hostile text through import, render, search and export",
    "service/test_fuzz_sessions.py": "generated sessions through import and export",
    "service/test_real_sessions.py": "real pi files through import, render and export",
    "service/test_infrastructure.py": "the real parts answer: worker and websocket round trips",
    "service/test_wide_trees.py": "a root with 100,000 children: every page stays small",
    "service/test_pi_tokens.py": "the stored cut-point estimate, written by every entry writer",
}


EXEMPT = {**COVERED_END_TO_END, **COVERED_BY_THEIR_PACKAGE, **NO_TEST_YET}


def test_every_module_with_logic_has_a_test_module_named_after_it():
    missing = [
        f"sessions_app/{e.module}: expected tests/{' or tests/'.join(e.tests)}"
        for e in code_layout.expected_tests()
        if not e.found() and e.module not in EXEMPT
    ]
    assert not missing, "modules without a test module named after them:\n" + "\n".join(missing)


def test_every_exemption_is_still_needed_and_names_real_test_modules():
    expected = {e.module: e for e in code_layout.expected_tests()}
    stale = [m for m in EXEMPT if m not in expected or expected[m].found()]
    assert not stale, f"exempted but without logic or with a test module now: {stale}"
    lists = (COVERED_END_TO_END, COVERED_BY_THEIR_PACKAGE, NO_TEST_YET)
    assert sum(map(len, lists)) == len(EXEMPT), "a module is in two lists"
    for covering in EXEMPT.values():
        for path in covering.split(" (")[0].split(", "):
            assert (code_layout.TESTS / path).is_file(), path
    for covering in COVERED_END_TO_END.values():
        assert covering.startswith("e2e/"), covering


def test_every_test_module_is_named_after_a_module_or_checks_the_whole_app():
    named = code_layout.accepted_names()
    strays = [t for t in code_layout.test_modules() if t not in named and t not in ACROSS_THE_APP]
    assert not strays, "test modules named after no module:\n" + "\n".join(strays)
    gone = [t for t in ACROSS_THE_APP if not (code_layout.TESTS / t).is_file()]
    assert not gone, gone


def test_the_rule_counts_function_statements_and_names_the_layer(tmp_path):
    small = tmp_path / "small.py"
    small.write_text('"""Doc."""\nX = 1\n\n\ndef f():\n    """Doc."""\n    return X\n')
    assert code_layout.logic_statements(small) == 2  # the docstring and the return
    bigger = tmp_path / "bigger.py"
    bigger.write_text("def f(x):\n" + "".join(f"    x += {i}\n" for i in range(25)))
    assert code_layout.logic_statements(bigger) == 25

    assert code_layout.expected_test("core/truncate.py").tests == (
        "unit/test_truncate.py",
        "service/test_truncate.py",
    )
    assert code_layout.expected_test("services/jobs/lifecycle.py").tests == (
        "service/test_job_lifecycle.py",
    )
    assert code_layout.expected_test("agent/tools/read.py").tests == (
        "unit/test_tool_read.py",
        "service/test_tool_read.py",
    )
    assert code_layout.expected_test("views/chat.py").tests == ("service/views/test_chat_views.py",)
    absent = code_layout.Expected("core/absent.py", ("unit/test_no_such_module.py",))
    assert not absent.found()
