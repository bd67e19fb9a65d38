"""manage.py configuration_table: docs/configuration.md's table is written from
piweb/env.py's declarations, and the committed one is current."""

from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from piweb import env

DOC = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"


def test_the_committed_configuration_table_is_current():
    call_command("configuration_table", "--check", file=DOC)  # raises when out of date


def test_a_stale_table_fails_the_check_and_is_rewritten(tmp_path):
    doc = tmp_path / "configuration.md"
    doc.write_text(f"# Configuration\n\n{env.TABLE_START}\n| `OLD` | row |\n{env.TABLE_END}\n")
    with pytest.raises(CommandError, match="out of date"):
        call_command("configuration_table", "--check", file=doc)
    assert "`OLD`" in doc.read_text()  # --check writes nothing
    call_command("configuration_table", file=doc)
    text = doc.read_text()
    assert "`OLD`" not in text and "| `PIWEB_GIT` | text | `git` |" in text
    call_command("configuration_table", "--check", file=doc)


def test_a_document_without_the_markers_is_refused(tmp_path):
    doc = tmp_path / "configuration.md"
    doc.write_text("# Configuration\n")
    with pytest.raises(CommandError, match="no configuration table markers"):
        call_command("configuration_table", file=doc)
    assert doc.read_text() == "# Configuration\n"
