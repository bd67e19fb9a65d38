"""piweb/env.py: typed environment values. A value that does not parse stops startup with
the variable's name (a typo is not read as False)."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from piweb import env

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("word", ["1", "true", "Yes", " ON ", "TRUE"])
def test_true_words(monkeypatch, word):
    monkeypatch.setenv("PIWEB_X", word)
    assert env.boolean("PIWEB_X") is True


@pytest.mark.parametrize("word", ["0", "false", "No", " off "])
def test_false_words(monkeypatch, word):
    monkeypatch.setenv("PIWEB_X", word)
    assert env.boolean("PIWEB_X", True) is False


@pytest.mark.parametrize("word", ["ture", "enabled", "2", "y"])
def test_a_boolean_typo_is_refused_with_the_name(monkeypatch, word):
    monkeypatch.setenv("PIWEB_X", word)
    with pytest.raises(env.EnvError, match=rf"PIWEB_X='{word}' is not a boolean"):
        env.boolean("PIWEB_X")


def test_unset_and_empty_mean_the_default(monkeypatch):
    monkeypatch.delenv("PIWEB_X", raising=False)
    assert env.boolean("PIWEB_X", True) is True
    assert env.integer("PIWEB_X", 7) == 7
    monkeypatch.setenv("PIWEB_X", "")
    assert env.boolean("PIWEB_X", True) is True
    assert env.decimal("PIWEB_X", 1.5) == 1.5
    assert env.text("PIWEB_X", "d") == "d"
    assert env.json_object("PIWEB_X") == {}


def test_numbers(monkeypatch):
    monkeypatch.setenv("PIWEB_X", " 42 ")
    assert env.integer("PIWEB_X", 1) == 42
    assert env.decimal("PIWEB_X", 1.0) == 42.0
    for bad, reader in [("4o", env.integer), ("1.5", env.integer), ("fast", env.decimal)]:
        monkeypatch.setenv("PIWEB_X", bad)
        with pytest.raises(env.EnvError, match="PIWEB_X="):
            reader("PIWEB_X", 1)
    monkeypatch.setenv("PIWEB_X", "nan")
    with pytest.raises(env.EnvError, match="not a finite number"):
        env.decimal("PIWEB_X", 1.0)
    monkeypatch.setenv("PIWEB_X", "-1")
    with pytest.raises(env.EnvError, match="below its minimum"):
        env.integer("PIWEB_X", 1, minimum=0)


def test_choices_lists_paths_and_json(monkeypatch):
    monkeypatch.setenv("PIWEB_X", " On ")
    assert env.choice("PIWEB_X", "auto", ("auto", "on", "off")) == "on"
    monkeypatch.setenv("PIWEB_X", "sometimes")
    with pytest.raises(env.EnvError, match="PIWEB_X must be one of auto, on, off"):
        env.choice("PIWEB_X", "auto", ("auto", "on", "off"))
    monkeypatch.setenv("PIWEB_X", "a, ,b,")
    assert env.items("PIWEB_X") == ["a", "b"]
    monkeypatch.setenv("PIWEB_X", "/srv/x")
    assert env.path("PIWEB_X", "/d") == Path("/srv/x")
    monkeypatch.setenv("PIWEB_X", '{"m": 1}')
    assert env.json_object("PIWEB_X") == {"m": 1}
    for bad in ("{m: 1}", "[1]"):
        monkeypatch.setenv("PIWEB_X", bad)
        with pytest.raises(env.EnvError, match="PIWEB_X"):
            env.json_object("PIWEB_X")


def test_settings_reads_every_variable_through_the_reader():
    source = (ROOT / "piweb" / "settings.py").read_text()
    assert "os.environ" not in source and "getenv" not in source


def test_settings_reads_every_declared_variable_and_only_through_its_declaration():
    source = (ROOT / "piweb" / "settings.py").read_text()
    used = set(re.findall(r"env\.(\w+)\(", source))
    assert used <= {"get", "is_set", "EnvError"}, (
        "settings.py reads the environment past the declarations"
    )
    read = set(re.findall(r'env\.(?:get|is_set)\(\s*"([A-Z][A-Z0-9_]*)"', source))
    assert sorted(set(env.DECLARED) - read) == []  # no declaration settings.py ignores
    assert sorted(read - set(env.DECLARED)) == []


def test_no_app_module_reads_a_piweb_value_from_the_environment_itself():
    reading = re.compile(r"""(environ\.get\(|environ\[|getenv\()\s*["'](PIWEB_|PI_)""")
    found = [
        str(path.relative_to(ROOT))
        for folder in ("piweb", "sessions_app")
        for path in (ROOT / folder).rglob("*.py")
        if path.name != "env.py" and reading.search(path.read_text())
    ]
    assert found == []


def test_get_reads_a_declared_variable_by_its_type_and_default(monkeypatch):
    monkeypatch.delenv("PIWEB_USER_MAX_RUNS", raising=False)
    assert env.get("PIWEB_USER_MAX_RUNS") == env.DECLARED["PIWEB_USER_MAX_RUNS"].default == 2
    monkeypatch.setenv("PIWEB_USER_MAX_RUNS", " 5 ")
    assert env.get("PIWEB_USER_MAX_RUNS") == 5 and env.is_set("PIWEB_USER_MAX_RUNS")
    monkeypatch.setenv("PIWEB_SANDBOX", "firejail")
    with pytest.raises(env.EnvError, match="PIWEB_SANDBOX must be one of bwrap, off"):
        env.get("PIWEB_SANDBOX")
    monkeypatch.setenv("PIWEB_CHAT_IMAGE_MAX_COUNT", "0")
    with pytest.raises(env.EnvError, match="below its minimum"):
        env.get("PIWEB_CHAT_IMAGE_MAX_COUNT")
    monkeypatch.setenv("PIWEB_SANDBOX_HOST_UID", "Off")
    assert env.get("PIWEB_SANDBOX_HOST_UID") is None
    monkeypatch.delenv("PIWEB_ARTIFACT_DIR", raising=False)
    assert env.get("PIWEB_ARTIFACT_DIR", "/srv/a") == Path("/srv/a")  # settings' own default
    monkeypatch.setenv("PIWEB_PI_AGENT_DIR", "")
    assert env.get("PIWEB_PI_AGENT_DIR") == ""  # set but empty: none, not the default
    with pytest.raises(env.EnvError, match="PIWEB_NO_SUCH is not declared"):
        env.get("PIWEB_NO_SUCH")


def test_every_declaration_has_a_known_type_help_and_a_row_in_the_table():
    table = env.configuration_table()
    for var in env.DECLARED.values():
        assert var.type in env._READERS and var.help and "\n" not in var.help, var.name
        assert f"| `{var.name}` | {var.type}" in table
    assert sum(len(group) for group in env.GROUPS.values()) == len(env.DECLARED)  # no twice


def test_the_table_goes_between_its_markers_and_nothing_else_changes():
    document = f"intro\n\n{env.TABLE_START}\nold rows\n{env.TABLE_END}\n\nafter\n"
    written = env.with_current_table(document)
    assert written.startswith(f"intro\n\n{env.TABLE_START}\n") and written.endswith(
        f"{env.TABLE_END}\n\nafter\n"
    )
    assert "old rows" not in written and env.configuration_table() in written
    assert env.with_current_table(written) == written
    with pytest.raises(ValueError, match="no configuration table markers"):
        env.with_current_table("no markers here")


def _check(tmp_path, **values) -> subprocess.CompletedProcess:
    environ = {**os.environ, "PIWEB_VAR_DIR": str(tmp_path / "var"), **values}
    environ.pop("DATABASE_URL", None)
    return subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=ROOT,
        env=environ,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("PIWEB_SANDBOX_NETWORK", "yess"),
        ("DEBUG", "treu"),
        ("PIWEB_JOB_STALE_SECONDS", "2m"),
        ("PIWEB_LLM_TIMEOUT", "soon"),
        ("PIWEB_MODEL_CONTEXT_WINDOWS", "{gpt: 1}"),
    ],
)
def test_a_bad_value_stops_manage_py_naming_the_variable(tmp_path, name, value):
    result = _check(tmp_path, **{name: value})
    assert result.returncode != 0
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("piweb.env.EnvError: ") and name in last, result.stderr


def test_good_values_pass_the_check(tmp_path):
    result = _check(tmp_path, PIWEB_SANDBOX_NETWORK="no", DEBUG="0", PIWEB_JOB_STALE_SECONDS="90")
    assert result.returncode == 0, result.stderr
