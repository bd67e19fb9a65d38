"""core/shipped.py: piweb's own files by name, and nothing else."""

import pytest

from sessions_app.core.shipped import CODE_DIR, read_shipped


def test_reads_a_shipped_file_as_it_is():
    name = "static/piweb/tokens.css"
    assert read_shipped(name) == (CODE_DIR / name).read_bytes()
    assert read_shipped("piweb_sync.py") == (CODE_DIR / "piweb_sync.py").read_bytes()


@pytest.mark.parametrize(
    "name",
    [
        "/etc/passwd",
        "static/../var/secret_key",
        "static//piweb/tokens.css",
        "var/secret_key",
        "sessions_app/models.py",
        "piweb_sync.py/x",
        "staticx/a.css",
    ],
)
def test_refuses_any_other_name(name):
    with pytest.raises(ValueError):
        read_shipped(name)
