"""The workspace quota through the real worker: a `!cmd` fills the workspace, the worker
measures it in the background (the task the command's end asks for), and the next
`!cmd` is refused with how much to delete; deleting brings commands back."""

import pytest

from sessions_app.models import Job, WorkspaceUsage
from tests.support.agent_runs import messages, new_session, send, wait_run
from tests.support.waiting import wait_until
from tests.support.web import client_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.worker]
MB = 1024 * 1024


@pytest.mark.usefixtures("bwrap_required")
def test_a_filled_workspace_is_measured_in_the_background_and_refused(
    worker, make_user, workspace, settings
):
    settings.PIWEB_WORKSPACE_QUOTA_MB = 5
    user = make_user()
    session = new_session(user, workspace)
    client = client_for(user)
    assert "Sent." in send(client, session, "!head -c 8M /dev/urandom > big.bin").content.decode()
    assert wait_run(session).status == "done"
    assert wait_until(
        lambda: WorkspaceUsage.objects.filter(user=user, bytes__gte=8 * MB).exists(), 30
    ), "the worker did not measure the workspace"
    refused = send(client, session, "!echo more")
    assert refused.status_code == 400
    body = refused.content.decode()
    assert "over your quota of 5.0MB" in body and "delete at least 3." in body
    assert Job.objects.filter(session=session).count() == 1  # nothing was queued
    # A lone `rm` still runs, and the measure right after it lifts the refusal.
    assert "Sent." in send(client, session, "!rm big.bin").content.decode()
    assert wait_run(session).status == "done"
    assert wait_until(
        lambda: WorkspaceUsage.objects.filter(user=user, bytes__lt=1 * MB).exists(), 30
    )
    assert "Sent." in send(client, session, "!echo more").content.decode()
    wait_run(session)
    assert messages(session)[-1]["output"] == "more\n"
