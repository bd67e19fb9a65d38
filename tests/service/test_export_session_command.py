"""manage.py export_session: a session's branch as HTML or Markdown, to a file or a folder;
an unknown session or leaf is a command error."""

import pytest
from django.core.management import CommandError, call_command

from tests.support.branchy_session import build_branchy_session

pytestmark = pytest.mark.django_db


@pytest.mark.embedded
def test_export_session_writes_html_and_markdown_and_refuses_unknown_ids(make_user, tmp_path):
    data = build_branchy_session(make_user())
    out = tmp_path / "s.html"
    call_command(
        "export_session",
        data.session.pi_id,
        "--format",
        "html",
        "--leaf",
        data.ids["a3"],
        "-o",
        str(out),
    )
    assert "Fixed the parser" in out.read_text()
    call_command("export_session", data.session.pi_id, "--format", "md", "-o", str(tmp_path))
    assert list(tmp_path.glob("*.md"))
    with pytest.raises(CommandError):
        call_command("export_session", "nope", "--format", "md")
    with pytest.raises(CommandError):
        call_command("export_session", data.session.pi_id, "--format", "md", "--leaf", "zzz")
