"""Issue #33's rule as a check over the code's syntax tree: no process outside the
sandbox opens, follows, copies or writes anything inside a user's folder by path. Only
the modules listed in ``ALLOWED`` may call a file function (``open``, ``os.*`` and
``os.path.*`` on paths, ``shutil.*``, ``pathlib`` reads, writes and walks) or start a
process (``subprocess.*``: git, tar and the sandbox itself), and each only the kinds of
call it makes today: a new call in another module, or a new kind of call in a listed
one, fails here, so nothing bypasses the rule unseen. Each entry says why it may.

The list is longer than it should be: the modules marked "(to move)" read files that a
user cannot reach (pi's config, exports on the server's disk, imports) or will read
context files through ``safefs`` (issue #33, A1/A2); they should shrink to the agent's
file modules and the few that only touch piweb's own folders.
"""

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

# module (relative to sessions_app/) → (why it may, the calls it makes)
ALLOWED: dict[str, tuple[str, set[str]]] = {
    "agent/safefs.py": ("the descriptor-walking file access everything else should use",
        {".is_dir", "os.chown", "os.listdir", "os.open", "os.path.realpath", "os.readlink", "os.scandir"}),
    "agent/archives.py": ("unpacks beneath a descriptor of the new folder (harden-read)",
        {".is_dir", "open", "os.listdir", "os.mkdir", "os.open", "os.scandir", "os.symlink", "os.unlink", "shutil.rmtree"}),
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
        {"open", "os.makedirs", "os.path.exists", "os.path.getsize", "os.remove", "os.replace"}),
    "core/truncate.py": ("the full-output file in the artifact folder",
        {".is_dir", "os.open"}),
    "management/commands/export_pi_session.py": ("an admin's export path",
        {"open", "os.path.exists", "os.replace", "os.unlink"}),
    "management/commands/export_session.py": ("an admin's export path",
        {".is_dir"}),
    "management/commands/import_pi_sessions.py": ("an admin's import path",
        {".is_dir", ".is_file", ".rglob"}),
    "management/commands/runpiweb.py": ("the var folder",
        {".is_dir"}),
    "management/commands/watch_pi_sessions.py": ("an admin's pi folder",
        {".is_dir", "os.path.isdir", "os.path.lexists"}),
    "presentation/exports.py": ("static files of the HTML export",
        {".read_text"}),
    "selectors/changes.py": ("is the workspace there (to move)",
        {"os.path.isdir"}),
    "selectors/model_input.py": ("a cwd's real path (to move, issue #33 A2)",
        {"os.path.realpath"}),
    "selectors/pi_file.py": ("a followed pi file's size",
        {"os.stat"}),
    "selectors/workspaces.py": ("lists the user's workspaces (to move into safefs)",
        {".is_dir", "os.path.exists", "os.path.isdir", "os.path.isfile", "os.path.realpath", "os.scandir"}),
    "services/following.py": ("the followed pi files (the user's own pi folder)",
        {".is_dir", ".is_file", ".is_symlink", "open", "os.path.lexists", "os.scandir", "os.stat"}),
    "services/jobs/session_import.py": ("the uploaded file in the import folder",
        {".unlink"}),
    "services/workspace_choice.py": ("makes the new folder; the clone runs in the sandbox",
        {"os.mkdir", "os.path.lexists", "shutil.rmtree", "subprocess.run"}),
    "services/alternatives.py": ("makes and removes a variant's folder; the copy and checkout run in the sandbox",
        {"os.makedirs", "os.mkdir", "os.path.isdir", "os.path.lexists", "os.path.realpath", "shutil.rmtree", "subprocess.run"}),
    "services/write_back.py": ("appends to the user's own followed pi file",
        {"os.open"}),
    "upload_handlers.py": ("streams an upload into the import folder",
        {".mkdir", ".unlink", "os.open"}),
    "agent/tools/listing.py": ("grep, find and ls walk beneath the workspace descriptor (safefs)",
        {".is_dir", ".is_symlink", "os.scandir"}),
    "agent/tools/ls.py": ("ls lists a folder opened through safefs",
        {"os.listdir"}),
    "agent/tools/read.py": ("read opens a file through the workspace's descriptor (safefs)",
        {"open"}),
    "agent/tools/write.py": ("write: is the resolved target a folder (to move into safefs)",
        {"os.path.isdir"}),
    "selectors/llm/catalog.py": ("pi's agent folder (the server's, not a user's)",
        {".read_text"}),
    "selectors/llm/keys.py": ("pi's agent folder and the pi binary (the server's)",
        {"shutil.which", "subprocess.run"}),
    "services/jobs/workspace_measure.py": ("the quota's measure: fwalk with descriptors, no link followed; shadow repositories (piweb's folder)",
        {"open", "os.chmod", "os.fwalk", "os.listdir", "os.open", "os.path.isdir", "os.path.islink", "os.stat"}),
    "services/jobs/snapshot_gc.py": ("removes an unused shadow repository (piweb's folder)",
        {"os.path.isdir", "shutil.rmtree"}),
    "selectors/prompt_templates.py": ("lists the agent folder's shared prompts (the server's); project prompts go through safefs",
        {"os.listdir", "os.path.realpath"}),
    "management/commands/configuration_table.py": ("writes docs/configuration.md (the repository's own file)",
        {".read_text", ".write_text"}),
    "views/sync.py": ("serves the sync client, a file of piweb's own",
        {"open"}),
    "services/resources.py": ("free disk above the reserve (statvfs of piweb's folders)",
        {"os.path.exists", "os.stat", "os.statvfs"}),
    "management/commands/export_dataset.py": ("an admin's output path (-o FILE)",
        {"open"}),
    "templatetags/icon_tags.py": ("the vendored icons in static/ (piweb's own files)",
        {".read_text"}),
}  # fmt: skip


def file_calls(source: str) -> set[str]:
    """The file functions and process starts called in ``source``."""
    found = set()
    for node in ast.walk(ast.parse(source)):
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


@pytest.mark.parametrize(
    "module, source",
    [
        ("views/pages.py", "def f(p):\n    return open(p).read()\n"),
        ("selectors/sessions.py", "import os\ndef f(p):\n    return os.listdir(p)\n"),
        ("services/chat.py", "import subprocess\nsubprocess.run(['git', 'clone', 'x'])\n"),
        ("services/fork.py", "import shutil\nshutil.copytree('a', 'b')\n"),
        ("services/manage.py", "from pathlib import Path\nPath('x').read_text()\n"),
        ("services/resources.py", "import shutil\nshutil.copyfile('a', 'b')\n"),  # a new kind
    ],
)
def test_a_deliberate_violation_fails_the_check(module, source):
    assert breaks({module: source}) != []
