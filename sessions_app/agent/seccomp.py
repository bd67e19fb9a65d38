"""A seccomp filter that keeps setuid and setgid bits out of every file a sandbox makes.

bubblewrap loads it (``--seccomp FD``) just before it runs the command; every process of
the command inherits it and cannot drop it. A sandboxed command runs as uid 1000, which
is whoever runs the worker on the host: a setuid file planted in a workspace would be a
setuid file of that host account. The filter answers ``EPERM`` to:

- ``chmod``, ``fchmod``, ``fchmodat``, ``fchmodat2`` whose mode has S_ISUID or S_ISGID;
- ``open``, ``openat``, ``creat``, ``mknod``, ``mknodat`` creating a file with those bits
  (O_CREAT or O_TMPFILE with such a mode);
- ``openat2`` (its mode sits behind a pointer the filter cannot read) and io_uring,
  whose requests bypass syscall filtering altogether, with ``ENOSYS`` so that programs
  fall back to the plain calls;
- every syscall of another ABI than the ones described here (x32, or a 32-bit ABI we
  have no table for), since their numbers would slip past the table.

The program is classic BPF, assembled here: it needs no library and no compiler, and
its bytes are what ``seccomp_export_bpf`` would write. No Django here.
"""

from __future__ import annotations

import errno
import functools
import os
import platform
import stat
import struct
from dataclasses import dataclass

# Classic BPF opcodes (linux/filter.h) and seccomp return values (linux/seccomp.h).
_LD_W_ABS = 0x20
_JEQ_K = 0x15
_JGE_K = 0x35
_JSET_K = 0x45
_RET_K = 0x06
RET_ALLOW = 0x7FFF0000
RET_ERRNO = 0x00050000

# struct seccomp_data: int nr; __u32 arch; __u64 instruction_pointer; __u64 args[6].
_NR_OFFSET = 0
_ARCH_OFFSET = 4
_ARGS_OFFSET = 16

SUID_BITS = stat.S_ISUID | stat.S_ISGID
_O_CREAT = 0o100  # the same value on x86 and arm64
_O_TMPFILE_BIT = 0o20000000  # __O_TMPFILE
_X32_BIT = 0x40000000


@dataclass(frozen=True)
class ModeRule:
    """Syscall ``nr`` is refused when argument ``mode_arg`` has a setuid/setgid bit
    (and, when ``flags_arg`` is set, only if that argument asks to create a file)."""

    nr: int
    mode_arg: int
    flags_arg: int | None = None


@dataclass(frozen=True)
class Abi:
    audit_arch: int
    rules: tuple[ModeRule, ...]
    disabled: tuple[int, ...]  # answered with ENOSYS
    x32_bit: bool = False  # x86_64: syscalls with this bit are x32's


X86_64 = Abi(
    audit_arch=0xC000003E,
    rules=(
        ModeRule(90, 1),  # chmod(path, mode)
        ModeRule(91, 1),  # fchmod(fd, mode)
        ModeRule(268, 2),  # fchmodat(dirfd, path, mode)
        ModeRule(452, 2),  # fchmodat2(dirfd, path, mode, flags)
        ModeRule(2, 2, flags_arg=1),  # open(path, flags, mode)
        ModeRule(257, 3, flags_arg=2),  # openat(dirfd, path, flags, mode)
        ModeRule(85, 1),  # creat(path, mode)
        ModeRule(133, 1),  # mknod(path, mode, dev)
        ModeRule(259, 2),  # mknodat(dirfd, path, mode, dev)
    ),
    disabled=(437, 425, 426, 427),  # openat2, io_uring_setup, _enter, _register
    x32_bit=True,
)
I386 = Abi(
    audit_arch=0x40000003,
    rules=(
        ModeRule(15, 1),  # chmod
        ModeRule(94, 1),  # fchmod
        ModeRule(306, 2),  # fchmodat
        ModeRule(452, 2),  # fchmodat2
        ModeRule(5, 2, flags_arg=1),  # open
        ModeRule(295, 3, flags_arg=2),  # openat
        ModeRule(8, 1),  # creat
        ModeRule(14, 1),  # mknod
        ModeRule(297, 2),  # mknodat
    ),
    disabled=(437, 425, 426, 427),
)
AARCH64 = Abi(
    audit_arch=0xC00000B7,
    rules=(
        ModeRule(52, 1),  # fchmod
        ModeRule(53, 2),  # fchmodat
        ModeRule(452, 2),  # fchmodat2
        ModeRule(56, 3, flags_arg=2),  # openat
        ModeRule(33, 2),  # mknodat
    ),
    disabled=(437, 425, 426, 427),
)

# The ABIs a process on this machine can use (the native one first).
HOST_ABIS = {"x86_64": (X86_64, I386), "aarch64": (AARCH64,)}


class UnsupportedMachine(RuntimeError):
    """There is no syscall table for this processor, so no filter can be built."""


class _Program:
    """A tiny assembler: instructions with symbolic jump targets, resolved at the end."""

    def __init__(self) -> None:
        self.code: list[tuple[int, int | str, int | str, int]] = []
        self.labels: dict[str, int] = {}

    def label(self, name: str) -> None:
        self.labels[name] = len(self.code)

    def load(self, offset: int) -> None:
        self.code.append((_LD_W_ABS, 0, 0, offset))

    def jump(self, op: int, k: int, true: int | str, false: int | str) -> None:
        self.code.append((op, true, false, k))

    def ret(self, value: int) -> None:
        self.code.append((_RET_K, 0, 0, value))

    def assemble(self) -> bytes:
        out = bytearray()
        for index, (op, true, false, k) in enumerate(self.code):
            jt, jf = (self._offset(index, t) for t in (true, false))
            out += struct.pack("=HBBI", op, jt, jf, k & 0xFFFFFFFF)
        return bytes(out)

    def _offset(self, index: int, target: int | str) -> int:
        if isinstance(target, int):  # 0 = the next instruction
            return target
        distance = self.labels[target] - index - 1
        if not 0 <= distance <= 255:
            raise ValueError(f"jump to {target} out of range")
        return distance


def _arg_low(index: int) -> int:
    """Offset of the low 32 bits of argument ``index`` (little-endian machines)."""
    return _ARGS_OFFSET + 8 * index


def build_filter(abis: tuple[Abi, ...]) -> bytes:
    """The filter's BPF program for these ABIs, as bytes of ``struct sock_filter``."""
    program = _Program()
    program.load(_ARCH_OFFSET)
    for n, abi in enumerate(abis):
        program.jump(_JEQ_K, abi.audit_arch, f"abi{n}", 0)
    program.ret(RET_ERRNO | errno.ENOSYS)  # an ABI without a table: nothing runs
    for n, abi in enumerate(abis):
        program.label(f"abi{n}")
        program.load(_NR_OFFSET)
        if abi.x32_bit:
            program.jump(_JGE_K, _X32_BIT, "nosys", 0)
        for nr in abi.disabled:
            program.jump(_JEQ_K, nr, "nosys", 0)
        for r, rule in enumerate(abi.rules):
            skip = f"abi{n}-rule{r}-end"
            program.jump(_JEQ_K, rule.nr, 0, skip)
            if rule.flags_arg is not None:
                program.load(_arg_low(rule.flags_arg))
                program.jump(_JSET_K, _O_CREAT | _O_TMPFILE_BIT, 0, "allow")
            program.load(_arg_low(rule.mode_arg))
            program.jump(_JSET_K, SUID_BITS, "deny", "allow")
            program.label(skip)
        program.ret(RET_ALLOW)
    program.label("allow")
    program.ret(RET_ALLOW)
    program.label("deny")
    program.ret(RET_ERRNO | errno.EPERM)
    program.label("nosys")
    program.ret(RET_ERRNO | errno.ENOSYS)
    return program.assemble()


@functools.cache
def host_filter() -> bytes:
    """The filter for this machine's processor; UnsupportedMachine where there is none."""
    machine = platform.machine()
    abis = HOST_ABIS.get(machine)
    if abis is None or struct.pack("=H", 1) != b"\x01\x00":
        raise UnsupportedMachine(
            f"piweb's sandbox has no syscall table for {machine!r}, so it cannot keep "
            "setuid files out of workspaces there; supported: " + ", ".join(HOST_ABIS)
        )
    return build_filter(abis)


def filter_fd() -> int:
    """A readable descriptor holding the host filter, positioned at its start (for
    ``bwrap --seccomp FD``). The caller closes it."""
    fd = os.memfd_create("piweb-seccomp", os.MFD_CLOEXEC)
    try:
        os.write(fd, host_filter())
        os.lseek(fd, 0, os.SEEK_SET)
    except BaseException:
        os.close(fd)
        raise
    return fd
