"""Management commands as a user runs them, and the empty pi agent folder they read."""

from io import StringIO

from django.core.management import call_command

PROVIDER_VARIABLES = (
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_OAUTH_TOKEN",
    "OPENAI_API_KEY",
    "OPENROUTER_API_KEY",
)


def run(*args) -> str:
    """Run `manage.py <args>` in this process; its standard output."""
    out = StringIO()
    call_command(*args, stdout=out, stderr=StringIO())
    return out.getvalue()


def empty_agent_dir(tmp_path, settings, monkeypatch):
    """An empty pi agent folder for piweb to read, with the provider variables cleared."""
    folder = tmp_path / "agent"
    folder.mkdir()
    settings.PIWEB_PI_AGENT_DIR = str(folder)
    for name in PROVIDER_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    return folder
