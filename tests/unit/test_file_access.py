"""Issue #33's rule as a check over the code's syntax tree: no process outside the
sandbox opens, follows, copies or writes anything inside a user's folder by path. Only
the modules listed in ``ALLOWED`` may call a file function (``open``, ``Path.open``,
``gzip``/``tarfile``/``io.open``, ``os.*`` and ``os.path.*`` on paths, ``shutil.*``,
``pathlib`` reads, writes and walks) or start a process (``subprocess.*``: git, tar and
the sandbox itself), and each only the kinds of call it makes today: a new call in
another module, or a new kind of call in a listed one, fails here, so nothing bypasses
the rule unseen. Importing a file function by name (``from os import listdir``) or
renaming its module (``import os as o``) counts as a call. Each entry says why it may.

Modules that need a user's files go through ``agent/safefs.py`` (descriptor helpers
included: a listing, an entry scan, a file object over a descriptor); piweb's shipped
files are read by name through ``core/shipped.py``. What is left here: the sandbox, the
snapshots, archives and the quota's measure, piweb's own folders (var, the tokenizer
cache, imports, the artifact folder) and pi's agent folder (the server's); the
management commands reach the paths an administrator gives them through
``management/admin_paths.py`` alone, which only they may import."""

import ast
from pathlib import Path

import pytest

APP = Path(__file__).resolve().parents[2] / "sessions_app"

OS_FUNCS = {
    "open", "stat", "lstat", "listdir", "scandir", "walk", "fwalk", "remove", "unlink",
    "rename", "replace", "mkdir", "makedirs", "rmdir", "removedirs", "chmod", "chown",
    "lchown", "readlink", "symlink", "link", "truncate", "utime", "access", "mkfifo",
    "statvfs",
}  # fmt: skip
OS_PATH_FUNCS = {"exists", "lexists", "isdir", "isfile", "islink", "realpath", "getsize",
                 "getmtime", "samefile", "ismount"}  # fmt: skip
PATHLIB_METHODS = {
    "read_text", "write_text", "read_bytes", "write_bytes", "iterdir", "rglob", "glob",
    "mkdir", "touch", "unlink", "rmdir", "symlink_to", "hardlink_to", "is_dir", "is_file",
    "is_symlink",
}  # fmt: skip
HIDDEN_BY_IMPORT = {"os", "os.path", "shutil", "subprocess", "io", "builtins"}
OPENING_MODULES = {"io", "codecs", "gzip", "bz2", "lzma", "tarfile", "zipfile"}  # X.open(path)

# module (relative to sessions_app/) → (why it may, the calls it makes)
ALLOWED: dict[str, tuple[str, set[str]]] = {
    "agent/safefs.py": ("the descriptor-walking file access everything else should use",
        {".is_dir", ".is_symlink", "open", "os.chown", "os.listdir", "os.mkdir", "os.open", "os.path.realpath", "os.readlink", "os.scandir", "os.stat", "shutil.rmtree"}),
    "management/admin_paths.py": ("the paths an administrator gives the commands (-o FILE, folders to import or watch); only the commands import it",
        {".is_file", ".read_text", ".rglob", ".write_text", "open", "os.path.exists", "os.path.isdir", "os.path.isfile", "os.path.lexists", "os.replace", "os.unlink"}),
    "core/shipped.py": ("piweb's own shipped files by name (static/, sessions_app/data/, the sync client)",
        {"open"}),
    "agent/archives.py": ("unpacks beneath a descriptor of the new folder (harden-read)",
        {".is_dir", "bz2.open", "gzip.open", "lzma.open", "open", "os.listdir", "os.mkdir", "os.open", "os.scandir", "os.symlink", "os.unlink", "shutil.rmtree", "tarfile.open"}),
    "agent/sandbox.py": ("builds the sandbox: the staged /etc, cgroups, bwrap itself",
        {"open", "os.access", "os.chmod", "os.listdir", "os.lstat", "os.makedirs", "os.mkdir", "os.open", "os.path.exists", "os.path.isdir", "os.path.islink", "os.readlink", "os.rename", "os.rmdir", "os.stat", "shutil.copyfile", "shutil.copytree", "shutil.rmtree", "shutil.which", "subprocess.CompletedProcess", "subprocess.Popen", "subprocess.run"}),
    "agent/shell.py": ("starts the sandboxed command",
        {"subprocess.Popen"}),
    "agent/snapshots.py": ("shadow repositories (piweb's folder); git on a workspace runs in the sandbox",
        {"open", "os.lstat", "os.makedirs", "os.path.exists", "os.path.getsize", "os.replace", "os.walk", "shutil.copyfile", "shutil.rmtree", "subprocess.run"}),
    "agent/paths.py": ("makes and checks the workspace roots and areas (piweb's folders)",
        {"os.chmod", "os.chown", "os.makedirs", "os.mkdir", "os.path.exists", "os.path.isdir", "os.path.realpath", "os.stat"}),
    "core/pi_config.py": ("pi's agent folder (the server's), (to move)",
        {".read_text", "os.stat", "subprocess.run"}),
    "core/read_ahead.py": ("reads a followed pi file in a helper (the user's own pi file)",
        {"open", "subprocess.Popen"}),
    "core/tokenizer.py": ("the tokenizer's cache in piweb's folder",
        {".open", "open", "os.makedirs", "os.path.exists", "os.path.getsize", "os.remove", "os.replace"}),
    "core/truncate.py": ("the full-output file in the artifact folder",
        {".is_dir", "os.open"}),
    "selectors/pi_file.py": ("a followed pi file's size",
        {"os.stat"}),
    "selectors/workspaces.py": ("lists the user's workspaces (to move into safefs)",
        {".is_dir", "os.path.exists", "os.path.isdir", "os.path.isfile", "os.path.realpath", "os.scandir"}),
    "services/following.py": ("the followed pi files (the user's own pi folder)",
        {".is_dir", ".is_file", ".is_symlink", "open", "os.path.lexists", "os.scandir", "os.stat"}),
    "services/jobs/session_import.py": ("the uploaded file in the import folder",
        {".open", ".unlink"}),
    "services/workspace_choice.py": ("the clone runs in the sandbox (the folder is made and removed through safefs)",
        {"subprocess.run"}),
    "services/alternatives.py": ("the copy runs in the sandbox on a single-user machine without one (the folders are made and removed through safefs)",
        {"subprocess.run"}),
    "services/write_back.py": ("appends to the user's own followed pi file",
        {"os.open"}),
    "upload_handlers.py": ("streams an upload into the import folder",
        {".mkdir", ".unlink", "os.open"}),
    "selectors/llm/keys.py": ("pi's agent folder and the pi binary (the server's)",
        {"shutil.which", "subprocess.run"}),
    "services/jobs/workspace_measure.py": ("the quota's measure: fwalk with descriptors, no link followed; shadow repositories (piweb's folder)",
        {"open", "os.chmod", "os.fwalk", "os.listdir", "os.open", "os.path.isdir", "os.path.islink", "os.stat"}),
    "services/jobs/snapshot_gc.py": ("removes an unused shadow repository (piweb's folder)",
        {"os.path.isdir", "shutil.rmtree"}),
    "selectors/prompt_templates.py": ("the real paths of the agent folder's shared prompts (the server's); files go through safefs",
        {"os.path.realpath"}),
    "services/resources.py": ("free disk above the reserve (statvfs of piweb's folders)",
        {"os.path.exists", "os.stat", "os.statvfs"}),
}  # fmt: skip


def _pathlib_open(call: ast.Call) -> bool:
    """``Path.open``: no argument, or a mode first (``p.open("rb")``), as opposed to the
    opens that take what to open (``workspace.open(path, flags)``, ``zip.open(member)``)."""
    first = call.args[0] if call.args else None
    return first is None or isinstance(first, ast.Constant) and isinstance(first.value, str)


def file_calls(source: str) -> set[str]:
    """The file functions and process starts called in ``source``."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        # A file function imported by name or its module renamed would hide the calls:
        # such an import counts as a call (so it needs an entry, which no module has).
        if isinstance(node, ast.ImportFrom) and node.module in HIDDEN_BY_IMPORT:
            found.update(f"from {node.module} import" for _ in node.names)
        elif isinstance(node, ast.Import):
            found.update(
                f"import {a.name} as" for a in node.names if a.asname and a.name in HIDDEN_BY_IMPORT
            )
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Name) and func.id == "open":
            found.add("open")
        elif isinstance(func, ast.Attribute):
            owner = func.value
            if isinstance(owner, ast.Name) and owner.id == "os" and func.attr in OS_FUNCS:
                found.add(f"os.{func.attr}")
            elif (
                isinstance(owner, ast.Attribute)
                and isinstance(owner.value, ast.Name)
                and (owner.value.id, owner.attr) == ("os", "path")
                and func.attr in OS_PATH_FUNCS
            ):
                found.add(f"os.path.{func.attr}")
            elif isinstance(owner, ast.Name) and owner.id in ("shutil", "subprocess"):
                found.add(f"{owner.id}.{func.attr}")
            elif (
                isinstance(owner, ast.Name) and owner.id in OPENING_MODULES and func.attr == "open"
            ):
                found.add(f"{owner.id}.open")
            elif func.attr == "open" and _pathlib_open(node):
                found.add(".open")
            elif func.attr in PATHLIB_METHODS:
                found.add(f".{func.attr}")
    return found


def breaks(modules: dict[str, str]) -> list[str]:
    """Calls of ``modules`` (path → source) that the allow-list does not grant."""
    out = []
    for module, source in sorted(modules.items()):
        granted = ALLOWED.get(module, ("", set()))[1]
        extra = sorted(file_calls(source) - granted)
        if extra:
            out.append(f"sessions_app/{module}: {', '.join(extra)}")
    return out


def app_modules() -> dict[str, str]:
    return {
        str(path.relative_to(APP)): path.read_text()
        for path in APP.rglob("*.py")
        if "migrations" not in path.parts
    }


def test_only_allow_listed_modules_call_file_functions():
    found = breaks(app_modules())
    assert not found, (
        "file functions called outside the allow-list (use safefs or the sandbox, or add "
        "the module to ALLOWED with why):\n" + "\n".join(found)
    )


def test_every_allow_list_entry_is_still_needed():
    modules = app_modules()
    stale = {
        m: sorted(calls - file_calls(modules.get(m, ""))) for m, (_why, calls) in ALLOWED.items()
    }
    stale = {m: c for m, c in stale.items() if c}
    assert not stale, f"granted but no longer called (shorten the list): {stale}"


ADMIN_PATHS = "sessions_app.management.admin_paths"


def admin_paths_importers(modules: dict[str, str]) -> list[str]:
    """Modules (path → source) outside the management commands that import admin_paths,
    the file access of the commands (administrators' paths): it is no way around the rule
    for code that runs for a request or a job."""
    out = []
    for module, source in sorted(modules.items()):
        if module.startswith("management/"):
            continue
        for node in ast.walk(ast.parse(source)):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            if ADMIN_PATHS in names:
                out.append(f"sessions_app/{module}")
    return out


def test_only_the_management_commands_import_admin_paths():
    assert admin_paths_importers(app_modules()) == []


@pytest.mark.parametrize(
    "source",
    [
        "from sessions_app.management import admin_paths\n",
        "from sessions_app.management.admin_paths import open_input\n",
        "import sessions_app.management.admin_paths\n",
    ],
)
def test_importing_admin_paths_elsewhere_fails_the_check(source):
    assert admin_paths_importers({"services/chat.py": source}) == ["sessions_app/services/chat.py"]
    assert admin_paths_importers({"management/commands/x.py": source}) == []


@pytest.mark.parametrize(
    "module, source",
    [
        ("views/pages.py", "def f(p):\n    return open(p).read()\n"),
        ("selectors/sessions.py", "import os\ndef f(p):\n    return os.listdir(p)\n"),
        ("services/chat.py", "import subprocess\nsubprocess.run(['git', 'clone', 'x'])\n"),
        ("services/fork.py", "import shutil\nshutil.copytree('a', 'b')\n"),
        ("services/manage.py", "from pathlib import Path\nPath('x').read_text()\n"),
        ("views/tree.py", "def f(p):\n    return p.open('rb')\n"),
        ("views/tree.py", "def f(p):\n    return p.open()\n"),
        ("services/importer.py", "import gzip\ngzip.open('x.gz')\n"),
        ("agent/tools/grep.py", "import io\nio.open('x')\n"),
        ("selectors/sessions.py", "from os import listdir\nlistdir('x')\n"),
        ("selectors/sessions.py", "import os as o\no.listdir('x')\n"),
        ("selectors/sessions.py", "from os.path import isfile\n"),
        ("services/resources.py", "import shutil\nshutil.copyfile('a', 'b')\n"),  # a new kind
    ],
)
def test_a_deliberate_violation_fails_the_check(module, source):
    assert breaks({module: source}) != []
