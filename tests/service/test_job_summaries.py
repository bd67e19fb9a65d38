"""services/jobs/summaries.py, what the summary jobs share: a session's compaction settings,
merged over the server's and checked before they are stored. (The jobs themselves are
tested in test_job_compaction.py and test_job_branch_summary.py.)"""

import pytest

from sessions_app.selectors.llm.windows import compaction_settings
from sessions_app.services import jobs, sessions

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("no_worker_for_these_jobs"),
]


def test_compaction_settings_merge_and_validation(make_user, settings):
    settings.PIWEB_COMPACTION = {
        "enabled": True,
        "reserve_tokens": 1000,
        "keep_recent_tokens": 2000,
    }
    owner = make_user()
    session = sessions.create_session(owner=owner, cwd="/tmp")
    cfg = compaction_settings(session)
    assert (cfg.enabled, cfg.reserve_tokens, cfg.keep_recent_tokens) == (True, 1000, 2000)
    cfg = jobs.update_compaction_settings(
        session, actor=owner, enabled=False, reserve_tokens="5000", keep_recent_tokens=300
    )
    assert (cfg.enabled, cfg.reserve_tokens, cfg.keep_recent_tokens) == (False, 5000, 300)
    session.refresh_from_db()
    assert session.settings["compaction"] == {
        "enabled": False,
        "reserveTokens": 5000,
        "keepRecentTokens": 300,
    }
    for bad in ("abc", 0, -5, 10**9):
        with pytest.raises(jobs.JobError):
            jobs.update_compaction_settings(
                session, actor=owner, enabled=True, reserve_tokens=bad, keep_recent_tokens=10
            )
