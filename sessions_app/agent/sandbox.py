"""The one sandbox every command of a session runs in (bubblewrap).

:func:`launch` turns a shell command into the argv (and file descriptors) that run it
inside ``bwrap`` with:

- new user, PID, IPC, UTS, network (unless ``network``) and cgroup namespaces, an
  unprivileged uid/gid (1000) inside whoever runs the worker, no capabilities;
- ``/usr`` (and the ``/bin``, ``/lib``... links or directories) read-only, a short list of
  ``/etc`` entries tools need (dynamic linker cache, CA certificates, alternatives,
  locale and time zone data, git's system config), generated ``/etc/passwd``,
  ``/etc/group``, ``/etc/hosts`` and ``/etc/hostname``; fresh ``/proc`` and ``/dev``;
  a private, size-capped ``/tmp``;
- the workspace bound read-write at its real path (through an already opened directory
  file descriptor, so a path swapped for a symlink after the check cannot redirect the
  mount) and nothing else of the host;
- per-process limits set by the shell before the command runs (CPU seconds, address
  space, processes, file size, no core files), hard and soft, so the command cannot
  raise them back;
- ``--die-with-parent``: when the worker kills bwrap (Stop, timeout) the kernel tears
  down the PID namespace and with it every process the command started.

RLIMIT_NPROC is not enforced for processes whose real uid is the host's root, which is
what a sandbox run by a root worker maps to. For that case (and whenever it is writable)
each command also gets its own pids cgroup with ``pids.max``: see :class:`PidsCgroup`.

No Django here: the service layer builds a :class:`SandboxConfig` from settings.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import signal
import stat
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass

from . import safefs, seccomp
from .paths import make_private_dir

SANDBOX_UID = 1000
SANDBOX_GID = 1000
SANDBOX_USER = "piweb"
SANDBOX_HOSTNAME = "piweb-sandbox"
SANDBOX_PATH = "/usr/local/bin:/usr/bin:/bin"
SETPRIV = "/usr/bin/setpriv"  # util-linux: drops a root worker's commands to host_uid

# /etc entries copied in read-only when they exist. Everything else in /etc (shadow,
# ssl/private, the host's passwd and hosts, service configs) stays out: when the worker
# runs as root, root-owned files look like the sandbox user's own inside.
ETC_ENTRIES = (
    "alternatives",
    "ca-certificates",
    "ca-certificates.conf",
    "debian_version",
    "gai.conf",
    "gitconfig",
    "host.conf",
    "inputrc",
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "locale.alias",
    "localtime",
    "magic",
    "mime.types",
    "nsswitch.conf",
    "os-release",
    "protocols",
    "services",
    "ssl/certs",
    "ssl/openssl.cnf",
    "timezone",
)
# Only with network on: name resolution of the host.
ETC_NETWORK_ENTRIES = ("resolv.conf",)
ROOT_LINKS = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")

# Exit statuses of a shell whose child died of a limit's signal.
SIGXCPU_STATUS = 128 + signal.SIGXCPU
SIGXFSZ_STATUS = 128 + signal.SIGXFSZ
SIGKILL_STATUS = 128 + signal.SIGKILL  # the hard CPU limit (nothing else kills inside)


class SandboxUnavailable(RuntimeError):
    """The sandbox is required but cannot run here; the message says how to fix it."""


@dataclass(frozen=True)
class SandboxConfig:
    """How commands are isolated (see docs/security.md, "Sandbox")."""

    mode: str = "bwrap"  # "bwrap" or "off" (single-user machines only)
    bwrap: str = "bwrap"
    network: bool = False
    cpu_seconds: int = 600
    memory_mb: int = 3072  # address space of each process (RLIMIT_AS)
    total_memory_mb: int = 3072  # all of a command's processes together (memory cgroup)
    max_processes: int = 256
    file_size_mb: int = 1024
    tmp_size_mb: int = 512
    stage_dir: str = ""  # where the sandbox's /etc is prepared (default: a private temp dir)
    # The host account commands run as when the worker is root (None: as the worker).
    host_uid: int | None = None

    @property
    def enabled(self) -> bool:
        return self.mode != "off"

    @property
    def command_owner(self) -> tuple[int, int] | None:
        """Host uid/gid of sandboxed commands when they are not the worker's own: a root
        worker hands them an unprivileged account, since the sandbox's uid 1000 would
        otherwise be host root and anything it left behind root's."""
        if not self.enabled or self.host_uid is None or os.geteuid() != 0:
            return None
        return (self.host_uid, self.host_uid)


def bwrap_binary(config: SandboxConfig) -> str | None:
    return shutil.which(config.bwrap)


INSTALL_HINT = "sudo apt-get install bubblewrap"


MIN_BWRAP_VERSION = (0, 8, 0)  # --bind-fd and --size first appeared in 0.8.0
_versions: dict[str, tuple[int, ...] | None] = {}


def bwrap_version(binary: str) -> tuple[int, ...] | None:
    """``bwrap --version`` as a tuple (cached per binary), None when it cannot be read."""
    if binary not in _versions:
        try:
            out = subprocess.run(
                [binary, "--version"], capture_output=True, text=True, timeout=10
            ).stdout
            _versions[binary] = tuple(int(p) for p in out.split()[-1].split("."))
        except (OSError, ValueError, IndexError, subprocess.SubprocessError):
            _versions[binary] = None
    return _versions[binary]


def require(config: SandboxConfig) -> str | None:
    """The bwrap binary to use (None when the sandbox is off); SandboxUnavailable if it is
    missing or too old."""
    if not config.enabled:
        return None
    binary = bwrap_binary(config)
    if binary is None:
        raise SandboxUnavailable(
            f"Commands are refused: the sandbox (bubblewrap) is not installed, so "
            f"{config.bwrap!r} was not found. An administrator must install it "
            f"(`{INSTALL_HINT}`) and restart piweb. Setting PIWEB_SANDBOX=off instead "
            "runs commands unsandboxed, which is only acceptable on a single-user machine."
        )
    version = bwrap_version(binary)
    if version is None or version < MIN_BWRAP_VERSION:
        found = ".".join(map(str, version)) if version else "unknown"
        raise SandboxUnavailable(
            f"Commands are refused: {binary} is bubblewrap {found}, and piweb needs "
            f"{'.'.join(map(str, MIN_BWRAP_VERSION))} or newer (Debian 12, Ubuntu 24.04). "
            "An administrator must install a newer bubblewrap and restart piweb."
        )
    if config.command_owner is not None and not os.access(SETPRIV, os.X_OK):
        raise SandboxUnavailable(
            f"Commands are refused: the worker runs as root and needs {SETPRIV} (util-linux) "
            "to run them as PIWEB_SANDBOX_HOST_UID. Install util-linux, or run the worker "
            'as an unprivileged account (docs/security.md, "Running as a non-root account").'
        )
    try:
        seccomp.host_filter()
    except seccomp.UnsupportedMachine as exc:
        raise SandboxUnavailable(f"Commands are refused: {exc}.") from exc
    return binary


def status_line(config: SandboxConfig) -> str:
    """One line for the startup banner: is every command isolated, and how."""
    if not config.enabled:
        return (
            "Sandbox: OFF (PIWEB_SANDBOX=off). Commands run unsandboxed as the worker's user "
            "and can read the secret key, the database and every workspace: only for a "
            "single-user machine."
        )
    binary = bwrap_binary(config)
    if binary is None:
        return (
            f"Sandbox: bwrap NOT FOUND: every command will be refused. Install it with "
            f"`{INSTALL_HINT}` (or set PIWEB_SANDBOX=off on a single-user machine)."
        )
    try:
        require(config)
    except SandboxUnavailable as exc:
        return f"Sandbox: UNUSABLE, every command will be refused. {exc}"
    network = "ON (commands can reach the network and the host's services)"
    network = network if config.network else "off"
    pids = "pids cgroup" if PidsCgroup.available() else "RLIMIT_NPROC"
    if PidsCgroup.available() and PidsCgroup.memory_available():
        total = f"{config.total_memory_mb} MB of memory in all (memory cgroup)"
    else:
        total = f"{config.total_memory_mb} MB of memory in all (watched by the worker)"
    account, root_note = "the worker's account", ""
    if config.command_owner is not None:
        account = f"host uid {config.command_owner[0]} (the worker is root)"
    elif os.geteuid() == 0:
        account = "host root (PIWEB_SANDBOX_HOST_UID=off: not recommended)"
        if not PidsCgroup.available():
            root_note = (
                " WARNING: running as root without a writable pids cgroup, so the process "
                "limit is not enforced; run workers as an unprivileged user."
            )
    return (
        f"Sandbox: bubblewrap ({binary}); commands run as {account}, no setuid files; "
        f"network {network}; per command: "
        f"{config.cpu_seconds}s CPU, {config.memory_mb} MB address space per process, {total}, "
        f"{config.max_processes} processes ({pids}), {config.file_size_mb} MB per file." + root_note
    )


def limits_prelude(config: SandboxConfig) -> str:
    """Shell text setting hard+soft limits before the command (on the same line, so the
    command's own line numbers in error messages stay as written)."""
    # CPU: SIGXCPU at the soft limit (a clear "CPU time limit exceeded"), SIGKILL a few
    # seconds later at the hard limit for a process that ignores it.
    return (
        f"ulimit -v {config.memory_mb * 1024} -u {config.max_processes} "
        f"-f {config.file_size_mb * 1024} -c 0 && ulimit -S -t {config.cpu_seconds} "
        f"&& ulimit -H -t {config.cpu_seconds + 5} || exit 126; "
    )


def sandbox_env(
    config: SandboxConfig, cwd: str, extra: dict[str, str] | None = None
) -> dict[str, str]:
    """The whole environment inside: nothing is inherited from the worker."""
    env = {
        "PATH": SANDBOX_PATH,
        "HOME": "/tmp",
        "USER": SANDBOX_USER,
        "LOGNAME": SANDBOX_USER,
        "SHELL": "/bin/bash",
        "LANG": "C.UTF-8",
        "TERM": "dumb",
        "TMPDIR": "/tmp",
        "PWD": cwd,
        "PAGER": "cat",
        "GIT_PAGER": "cat",
        "EMAIL": f"{SANDBOX_USER}@{SANDBOX_HOSTNAME}.invalid",
    }
    if extra:
        env.update(extra)
    return env


def _generated_etc() -> dict[str, bytes]:
    user = SANDBOX_USER
    return {
        "passwd": (
            "root:x:0:0:root:/root:/usr/sbin/nologin\n"
            f"{user}:x:{SANDBOX_UID}:{SANDBOX_GID}:piweb sandbox:/tmp:/bin/bash\n"
            "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"
        ).encode(),
        "group": f"root:x:0:\n{user}:x:{SANDBOX_GID}:\nnogroup:x:65534:\n".encode(),
        "hosts": (
            f"127.0.0.1\tlocalhost {SANDBOX_HOSTNAME}\n::1\tlocalhost ip6-localhost\n"
        ).encode(),
        "hostname": f"{SANDBOX_HOSTNAME}\n".encode(),
    }


def _stage_root(config: SandboxConfig) -> str:
    if config.stage_dir:
        return config.stage_dir
    return os.path.join(tempfile.gettempdir(), f"piweb-sandbox-{os.getuid()}")


# (stage root, ((entry, mtime_ns, size, inode), ...)) -> the staged /etc
_EtcKey = tuple[str, tuple[tuple[str, int, int, int], ...]]
_staged: dict[_EtcKey, str] = {}
_stage_lock = threading.Lock()


def staged_etc(config: SandboxConfig) -> str:
    """A directory holding the sandbox's whole ``/etc``, bound read-only with one mount.

    It is a copy of the allowed host entries plus the generated files, built once per
    content (keyed by the entries' sizes and times, so an update of the CA certificates
    gives a new copy) and renamed into place atomically.
    """
    entries = ETC_ENTRIES + (ETC_NETWORK_ENTRIES if config.network else ())
    key_parts: list[tuple[str, int, int, int]] = []
    for entry in entries:
        try:
            st = os.stat("/etc/" + entry)
        except OSError:
            continue
        key_parts.append((entry, st.st_mtime_ns, st.st_size, st.st_ino))
    key: _EtcKey = (_stage_root(config), tuple(key_parts))
    with _stage_lock:
        cached = _staged.get(key)
        if cached and os.path.isdir(cached):
            return cached
        digest = hashlib.sha256(repr(key).encode()).hexdigest()[:16]
        root = key[0]
        os.makedirs(root, mode=0o700, exist_ok=True)
        owner = config.command_owner
        if owner is not None:  # its bubblewrap must pass through to the copy
            make_private_dir(root, owner[1])
        st = os.lstat(root)
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o022:
            raise SandboxUnavailable(
                f"{root} must be a directory owned by this user and writable only by it."
            )
        target = os.path.join(root, f"etc-{digest}")
        if not os.path.isdir(target):
            building = tempfile.mkdtemp(prefix="etc-build-", dir=root)
            os.chmod(building, 0o755)
            for entry, *_ in key_parts:
                source, dest = "/etc/" + entry, os.path.join(building, entry)
                os.makedirs(os.path.dirname(dest), exist_ok=True)
                if os.path.isdir(source):
                    shutil.copytree(source, dest, symlinks=True)
                else:
                    shutil.copyfile(source, dest)
            for name, data in _generated_etc().items():
                with open(os.path.join(building, name), "wb") as fh:
                    fh.write(data)
            try:
                os.rename(building, target)
            except OSError:  # another process built it first
                shutil.rmtree(building, ignore_errors=True)
        _staged[key] = target
        return target


@dataclass
class Launch:
    """What Popen needs to start one sandboxed command, and what to close afterwards."""

    argv: list[str]
    env: dict[str, str]
    pass_fds: tuple[int, ...]
    cwd: str
    cgroup: PidsCgroup | None = None

    def close_fds(self) -> None:
        for fd in self.pass_fds:
            try:
                os.close(fd)
            except OSError:
                pass
        self.pass_fds = ()

    def spawning(self) -> AbstractContextManager[None]:
        return self.cgroup.spawning() if self.cgroup is not None else contextlib.nullcontext()

    def cleanup(self) -> None:
        """After the command: close our fds, kill what is left in the cgroup, remove it."""
        self.close_fds()
        if self.cgroup is not None:
            self.cgroup.destroy()
            self.cgroup = None


def open_workspace_dir(path: str) -> int:
    """An O_PATH descriptor of directory ``path`` that really is ``path`` (no symlink
    anywhere on the way, checked after opening)."""
    fd = os.open(path, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        if os.readlink(f"/proc/self/fd/{fd}") != path:
            raise SandboxUnavailable(f"The workspace {path} changed while it was being opened.")
    except BaseException:
        os.close(fd)
        raise
    return fd


def check_reachable(path: str, owner: tuple[int, int]) -> None:
    """SandboxUnavailable naming the directory when the commands' account could not pass
    through every directory above ``path`` (bubblewrap, started as that account, opens
    the workspace and the staged ``/etc`` by their paths)."""
    uid, gid = owner
    current = os.path.dirname(path)
    while True:
        st = os.stat(current)
        if st.st_uid == uid:
            allowed = st.st_mode & stat.S_IXUSR
        elif st.st_gid == gid:
            allowed = st.st_mode & stat.S_IXGRP
        else:
            allowed = st.st_mode & stat.S_IXOTH
        if not allowed:
            raise SandboxUnavailable(
                f"Commands are refused: they run as host uid {uid} (PIWEB_SANDBOX_HOST_UID), "
                f"which cannot pass through {current} to reach {path}. Give it search "
                f"access (e.g. `chgrp {gid} {current} && chmod g+x {current}`) or move the "
                "workspace roots and PIWEB_VAR_DIR elsewhere."
            )
        if current == "/":
            return
        current = os.path.dirname(current)


def hand_over(workspace_fd: int, owner: tuple[int, int]) -> None:
    """Give a workspace to the account its commands run as, the first time it runs one
    there (it was made by the worker): afterwards the tools create files as that
    account too (``Workspace.owner``), so there is nothing more to hand over."""
    if os.fstat(workspace_fd).st_uid != owner[0]:
        safefs.chown_tree(workspace_fd, *owner)


def isolation_argv(config: SandboxConfig, binary: str) -> list[str]:
    """The namespaces and the read-only system every sandboxed process starts from: no
    workspace yet, nothing of the host beyond ``/usr``, the staged ``/etc``, a fresh
    ``/proc`` and ``/dev`` and a private ``/tmp``."""
    argv = [
        binary,
        "--unshare-user",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--uid",
        str(SANDBOX_UID),
        "--gid",
        str(SANDBOX_GID),
        "--hostname",
        SANDBOX_HOSTNAME,
        "--die-with-parent",
        "--new-session",
        "--clearenv",
    ]
    if not config.network:
        argv.append("--unshare-net")
    argv += ["--ro-bind", "/usr", "/usr"]
    for name in ROOT_LINKS:
        path = "/" + name
        if os.path.islink(path):
            argv += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            argv += ["--ro-bind", path, path]
    argv += ["--proc", "/proc", "--dev", "/dev"]
    argv += ["--size", str(config.tmp_size_mb * 1024 * 1024), "--tmpfs", "/tmp"]
    etc = staged_etc(config)
    if config.command_owner is not None:
        check_reachable(etc, config.command_owner)
    argv += ["--ro-bind", etc, "/etc"]
    return argv


def _closing_argv(config: SandboxConfig, env: dict[str, str], fds: list[int]) -> list[str]:
    """After the binds: the root made read-only, the seccomp filter (no setuid/setgid file
    can be made inside; its descriptor joins ``fds``) and the whole environment."""
    argv = ["--remount-ro", "/"]  # the mount points bwrap made are not a scratch area
    filter_fd = seccomp.filter_fd()
    fds.append(filter_fd)
    argv += ["--seccomp", str(filter_fd)]
    for key, value in env.items():
        argv += ["--setenv", key, value]
    return argv


def _as_command_owner(config: SandboxConfig, argv: list[str]) -> list[str]:
    """``argv`` started as the commands' host account when the worker is root."""
    owner = config.command_owner
    if owner is None:
        return argv
    uid, gid = owner
    return [SETPRIV, f"--reuid={uid}", f"--regid={gid}", "--clear-groups", "--", *argv]


def launch(
    config: SandboxConfig,
    command: str,
    cwd: str,
    *,
    workspace: str | None = None,
    env: dict[str, str] | None = None,
    shell: str = "/bin/bash",
) -> Launch:
    """The sandboxed way to run ``shell -c command`` in ``cwd``.

    ``workspace`` (default: ``cwd``) is the one writable directory, a real absolute path
    that contains ``cwd``. ``env`` adds to the minimal environment.
    """
    binary = require(config)
    workspace = workspace or cwd
    full_env = sandbox_env(config, cwd, env)
    if binary is None:  # sandbox off: the plain shell, still with the minimal environment
        return Launch([shell, "-c", command], full_env, (), cwd)
    fds: list[int] = []
    try:
        argv = isolation_argv(config, binary)
        owner = config.command_owner
        workspace_fd = open_workspace_dir(workspace)
        fds.append(workspace_fd)
        if owner is not None:
            check_reachable(workspace, owner)
            hand_over(workspace_fd, owner)
        argv += ["--bind-fd", str(workspace_fd), workspace, "--chdir", cwd]
        argv += _closing_argv(config, full_env, fds)
        argv += ["--", shell, "-c", limits_prelude(config) + command]
        argv = _as_command_owner(config, argv)
        cgroup = PidsCgroup.create(config.max_processes, config.total_memory_mb * 1024 * 1024)
        joins = cgroup.shell_join_files() if cgroup is not None else []
        if joins:
            # Join the cgroup(s) before bwrap starts, so not one process escapes the count.
            script = " && ".join(f'echo $$ > "${i + 1}"' for i in range(len(joins)))
            join = f'{script} && shift {len(joins)} && exec "$@"'
            argv = ["/bin/sh", "-c", join, "sh", *joins, *argv]
        for fd in fds:
            os.set_inheritable(fd, True)
        return Launch(argv, {}, tuple(fds), cwd, cgroup)
    except BaseException:
        for fd in fds:
            os.close(fd)
        raise


SHADOW_MOUNT = "/.piweb-shadow"  # a workspace's shadow repository, inside the sandbox
INDEX_MOUNT = "/.piweb-index"  # a restore's own copy of that repository's index


@dataclass(frozen=True)
class GitMounts:
    """What one sandboxed git process of a shadow repository sees: the repository (real
    path ``repo``), and optionally the workspace (its work tree, at its real path) and a
    folder holding the index it works on (a restore's copy)."""

    repo: str
    repo_writable: bool = True
    workspace: str | None = None
    workspace_writable: bool = False
    index_dir: str | None = None

    def env(self, inside: bool) -> dict[str, str]:
        """GIT_DIR (and GIT_INDEX_FILE) as this process sees them."""
        env = {"GIT_DIR": SHADOW_MOUNT if inside else self.repo}
        if self.index_dir:
            env["GIT_INDEX_FILE"] = os.path.join(INDEX_MOUNT if inside else self.index_dir, "index")
        return env


@dataclass(frozen=True)
class Bind:
    """One folder of the host visible in a sandbox: ``path`` (real) at ``mount``.
    ``hand_over``: give it to the commands' account first (a workspace, a shadow
    repository), as opposed to a folder seen only for reading (a user's area)."""

    path: str
    mount: str
    writable: bool
    hand_over: bool = True


def launch_in(
    config: SandboxConfig, argv: list[str], binds: list[Bind], env: dict[str, str], chdir: str
) -> Launch:
    """The sandboxed way to run ``argv`` (no shell, no limits: piweb's own tools such as
    git) as the commands' account, seeing nothing of the host but the system and
    ``binds`` (each opened here, its real path checked, and mounted through its
    descriptor). ``env`` is its whole environment, with the sandbox's PATH and HOME."""
    binary = require(config)
    if binary is None:  # (callers run this only with the sandbox on)
        raise SandboxUnavailable("The sandbox is off: nothing can be launched inside it.")
    fds: list[int] = []
    try:
        args = isolation_argv(config, binary)
        owner = config.command_owner
        for bind in binds:
            fd = open_workspace_dir(bind.path)
            fds.append(fd)
            if owner is not None:
                check_reachable(bind.path, owner)
                if bind.hand_over:
                    hand_over(fd, owner)
            args += ["--bind-fd" if bind.writable else "--ro-bind-fd", str(fd), bind.mount]
        args += ["--chdir", chdir]
        args += _closing_argv(config, {**env, "PATH": SANDBOX_PATH, "HOME": "/tmp"}, fds)
        args += ["--", *argv]
        for fd in fds:
            os.set_inheritable(fd, True)
        return Launch(_as_command_owner(config, args), {}, tuple(fds), "/")
    except BaseException:
        for fd in fds:
            os.close(fd)
        raise


def run_in(
    launch: Launch, input: bytes | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[bytes]:
    """Run a launch to its end (killed at ``timeout`` seconds); its output and status."""
    try:
        proc = subprocess.Popen(
            launch.argv,
            env=launch.env,
            cwd=launch.cwd,
            pass_fds=launch.pass_fds,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        launch.close_fds()
        try:
            out, err = proc.communicate(input, timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
            err += f"\nstopped after {timeout:.0f} s".encode()
    finally:
        launch.cleanup()
    return subprocess.CompletedProcess(launch.argv, proc.returncode, out, err)


def launch_git(
    config: SandboxConfig, argv: list[str], mounts: GitMounts, env: dict[str, str]
) -> Launch:
    """The sandboxed way to run git on a shadow repository: as the commands' account,
    with nothing of the host but the system, that repository and (when the operation
    reads or writes files) its workspace. A workspace path swapped for a link while git
    works can then only lead git to what this one workspace's commands already see."""
    if not config.enabled:  # sandbox off: git runs as the worker, like every command then
        return Launch(argv, {**env, **mounts.env(False)}, (), mounts.workspace or mounts.repo)
    binds = [Bind(mounts.repo, SHADOW_MOUNT, mounts.repo_writable)]
    if mounts.index_dir:
        binds.append(Bind(mounts.index_dir, INDEX_MOUNT, True))
    if mounts.workspace:
        binds.append(Bind(mounts.workspace, mounts.workspace, mounts.workspace_writable))
    chdir = mounts.workspace or SHADOW_MOUNT
    return launch_in(config, argv, binds, {**env, **mounts.env(True)}, chdir)


class PidsCgroup:
    """A per-command cgroup: ``pids.max`` (pids controller) and, where the memory controller
    can be delegated too, a memory limit on all of the command's processes together
    (``memory.max`` on cgroup v2, ``memory.limit_in_bytes`` on v1; swap kept at the same
    figure where the kernel accounts it).

    Used when the worker can create one: the pids part is what bounds a fork bomb when
    the worker runs as root (RLIMIT_NPROC is not enforced for root's processes); the
    memory part is the total memory cap of a command (RLIMIT_AS is per process). On cgroup
    v1 the two live in separate hierarchies and the command joins both. ``destroy`` kills
    whatever is left and removes it. The class name stays from when it only did pids.
    """

    _parent: str | None | bool = False  # pids parent; False: not probed yet
    _memory_parent: str | None | bool = False

    def __init__(self, path: str, limit: int, memory_path: str | None = None):
        self.path = path
        self.limit = limit
        self.memory_path = memory_path
        self.procs_file = os.path.join(path, "cgroup.procs")
        # cgroup v1 lets one thread join (its ``tasks`` file): the spawning thread steps
        # in, starts bwrap (which inherits the cgroup) and steps back out, with no shell
        # in between. cgroup v2 has no such file: a tiny shell joins, then execs bwrap.
        self.per_thread = os.path.exists(os.path.join(path, "tasks"))
        self.memory_per_thread = bool(
            memory_path and os.path.exists(os.path.join(memory_path, "tasks"))
        )

    @property
    def has_memory(self) -> bool:
        return bool(self.memory_path)

    def shell_join_files(self) -> list[str]:
        """The ``cgroup.procs`` files a joining shell writes itself into (v2 parts)."""
        files = [] if self.per_thread else [self.procs_file]
        if self.memory_path and not self.memory_per_thread and self.memory_path != self.path:
            files.append(os.path.join(self.memory_path, "cgroup.procs"))
        return files

    @contextlib.contextmanager
    def spawning(self) -> Iterator[None]:
        """Around Popen: the child process starts inside this cgroup (its v1 parts)."""
        joins: list[tuple[str, str]] = []
        if self.per_thread:
            joins.append((self.path, str(self._parent)))
        if self.memory_per_thread and self.memory_path:
            joins.append((self.memory_path, str(self._memory_parent)))
        tid = str(threading.get_native_id())
        joined = []
        try:
            for path, _home in joins:
                with open(os.path.join(path, "tasks"), "w") as fh:
                    fh.write(tid)
                joined.append(_home)
            yield
        finally:
            for home in joined:
                with open(os.path.join(home, "tasks"), "w") as fh:
                    fh.write(tid)

    @staticmethod
    def _candidates(controller: str) -> list[str]:
        try:
            with open("/proc/self/cgroup") as fh:
                lines = fh.read().splitlines()
        except OSError:
            return []
        candidates = []
        for line in lines:
            _id, controllers, path = line.split(":", 2)
            if controller in controllers.split(","):
                candidates.append(os.path.join(f"/sys/fs/cgroup/{controller}", path.lstrip("/")))
            elif controllers == "":
                for base in ("/sys/fs/cgroup", "/sys/fs/cgroup/unified"):
                    directory = os.path.join(base, path.lstrip("/"))
                    try:
                        with open(os.path.join(directory, "cgroup.subtree_control")) as fh:
                            if controller in fh.read().split():
                                candidates.append(directory)
                    except OSError:
                        pass
        return candidates

    @classmethod
    def _probe(cls, controller: str = "pids") -> str | None:
        files = {"pids": [("pids.max", "10")], "memory": [("memory.max", "67108864")]}
        files_v1 = {"memory": [("memory.limit_in_bytes", "67108864")]}
        for directory in cls._candidates(controller):
            probe = os.path.join(directory, f"piweb-probe-{os.getpid()}-{os.urandom(4).hex()}")
            try:
                os.mkdir(probe)
            except OSError:
                continue
            try:
                v1 = os.path.exists(os.path.join(probe, "tasks"))
                for name, value in (files_v1 if v1 else files).get(controller, files[controller]):
                    with open(os.path.join(probe, name), "w") as fh:
                        fh.write(value + "\n")
                return directory
            except OSError:
                continue
            finally:
                try:
                    os.rmdir(probe)
                except OSError:
                    pass
        return None

    @classmethod
    def available(cls) -> bool:
        if cls._parent is False:
            cls._parent = cls._probe("pids")
            if cls._parent:
                cls._remove_stale(cls._parent)
        return bool(cls._parent)

    @classmethod
    def memory_available(cls) -> bool:
        if cls._memory_parent is False:
            cls._memory_parent = cls._probe("memory")
            if cls._memory_parent and cls._memory_parent != cls._parent:
                cls._remove_stale(cls._memory_parent)
        return bool(cls._memory_parent)

    @staticmethod
    def _remove_stale(parent: str) -> None:
        """Empty cgroups left by processes that died before their cleanup finished."""
        try:
            names = os.listdir(parent)
        except OSError:
            return
        for name in names:
            parts = name.split("-")
            if len(parts) != 4 or parts[:2] != ["piweb", "sandbox"] or not parts[2].isdigit():
                continue
            try:
                os.kill(int(parts[2]), 0)
                continue  # its process is alive: not ours to touch
            except ProcessLookupError:
                pass
            except OSError:
                continue
            try:
                os.rmdir(os.path.join(parent, name))
            except OSError:
                pass

    @staticmethod
    def _write(path: str, name: str, value: int | str) -> bool:
        try:
            with open(os.path.join(path, name), "w") as fh:
                fh.write(f"{value}\n")
            return True
        except OSError:
            return False

    @classmethod
    def _make_memory(cls, name: str, memory_bytes: int, pids_path: str | None) -> str | None:
        if not memory_bytes or not cls.memory_available():
            return None
        parent = str(cls._memory_parent)
        path = pids_path if pids_path and parent == cls._parent else os.path.join(parent, name)
        try:
            if path != pids_path:
                os.mkdir(path)
        except OSError:
            return None
        if os.path.exists(os.path.join(path, "memory.max")):  # v2
            ok = cls._write(path, "memory.max", memory_bytes)
            cls._write(path, "memory.swap.max", 0)
        else:
            ok = cls._write(path, "memory.limit_in_bytes", memory_bytes)
            cls._write(path, "memory.memsw.limit_in_bytes", memory_bytes)
        if not ok:
            if path != pids_path:
                try:
                    os.rmdir(path)
                except OSError:
                    pass
            return None
        return path

    @classmethod
    def create(cls, limit: int, memory_bytes: int = 0) -> PidsCgroup | None:
        """A cgroup for one command: pids.max = ``limit`` and, when the memory controller
        is delegated too and ``memory_bytes`` is set, that total memory limit."""
        if not cls.available() or not isinstance(parent := cls._parent, str):
            return None
        name = f"piweb-sandbox-{os.getpid()}-{os.urandom(6).hex()}"
        path = os.path.join(parent, name)
        try:
            os.mkdir(path)
            with open(os.path.join(path, "pids.max"), "w") as fh:
                fh.write(f"{limit}\n")
        except OSError:
            try:
                os.rmdir(path)
            except OSError:
                pass
            return None
        return cls(path, limit, cls._make_memory(name, memory_bytes, path))

    def limit_hits(self) -> int:
        """How many times a fork was refused because of pids.max."""
        try:
            with open(os.path.join(self.path, "pids.events")) as fh:
                for line in fh:
                    key, _, value = line.partition(" ")
                    if key == "max":
                        return int(value)
        except (OSError, ValueError):
            pass
        return 0

    def oom_kills(self) -> int:
        """How many of the command's processes the kernel killed at the memory limit."""
        if not self.memory_path:
            return 0
        for name in ("memory.events", "memory.oom_control"):
            try:
                with open(os.path.join(self.memory_path, name)) as fh:
                    for line in fh:
                        key, _, value = line.partition(" ")
                        if key == "oom_kill":
                            return int(value)
            except (OSError, ValueError):
                continue
        return 0

    def pids(self, path: str | None = None) -> list[int]:
        try:
            with open(os.path.join(path or self.path, "cgroup.procs")) as fh:
                return [int(p) for p in fh.read().split()]
        except (OSError, ValueError):
            return []

    def _kill_and_remove(self) -> bool:
        paths = [self.path]
        if self.memory_path and self.memory_path != self.path:
            paths.append(self.memory_path)
        done = True
        for path in paths:
            for pid in self.pids(path):
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
        for path in paths:
            try:
                os.rmdir(path)
            except FileNotFoundError:
                pass
            except OSError:
                done = False
        return done

    def destroy(self) -> None:
        """Kill what is left and remove the cgroup. Normally nothing is left (the PID
        namespace died with bwrap) but the last processes may still be being reaped,
        which keeps the cgroup busy for a few milliseconds: then a background thread
        finishes the job, so the command's result is not held up."""
        if self._kill_and_remove():
            return

        def finish() -> None:
            for _ in range(500):
                time.sleep(0.01)
                if self._kill_and_remove():
                    return

        threading.Thread(target=finish, name="piweb-cgroup-cleanup", daemon=True).start()


CommandCgroup = PidsCgroup


def total_memory_notice(config: SandboxConfig) -> str:
    return (
        f"Sandbox limit: all processes of a command together may use at most "
        f"{config.total_memory_mb} MB of memory; the command was over it and a process "
        "was stopped."
    )


def limit_notices(
    config: SandboxConfig,
    exit_code: int | None,
    output: str,
    pids_hits: int,
    oom_kills: int = 0,
) -> list[str]:
    """Plain words for the model and the user when a sandbox limit stopped something."""
    if not config.enabled:
        return []
    notices = []
    lowered = output.lower()
    cpu_kill = exit_code == SIGKILL_STATUS and not oom_kills
    if exit_code == SIGXCPU_STATUS or cpu_kill or "cpu time limit exceeded" in lowered:
        notices.append(
            f"Sandbox limit: a process used its {config.cpu_seconds} s of CPU time and was stopped."
        )
    if (
        exit_code == SIGXFSZ_STATUS
        or "file size limit exceeded" in lowered
        or "file too large" in lowered
    ):
        notices.append(
            f"Sandbox limit: files written by commands may be at most {config.file_size_mb} MB; "
            "a write beyond that was refused."
        )
    if oom_kills:
        notices.append(total_memory_notice(config))
    memory_markers = ("memoryerror", "cannot allocate memory", "out of memory", "bad_alloc")
    if exit_code not in (0, None) and any(m in lowered for m in memory_markers):
        notices.append(
            f"Sandbox limit: a process may use at most {config.memory_mb} MB of address space; "
            "an allocation beyond that failed."
        )
    if (
        pids_hits
        or "resource temporarily unavailable" in lowered
        and ("fork" in lowered or "blockingioerror" in lowered)
    ):
        notices.append(
            f"Sandbox limit: at most {config.max_processes} processes may run at once; "
            "starting more was refused."
        )
    return notices
