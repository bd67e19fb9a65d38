"""The seccomp program, run by a small classic-BPF interpreter on made-up syscalls.

The sandbox tests run it in the kernel on this machine's ABI; this checks every table,
including the ABIs the machine does not run (i386, x32, arm64).
"""

import errno
import struct

import pytest

from sessions_app.agent import seccomp

LD, JEQ, JGE, JSET, RET = 0x20, 0x15, 0x35, 0x45, 0x06
ALLOW = seccomp.RET_ALLOW
EPERM = seccomp.RET_ERRNO | errno.EPERM
ENOSYS = seccomp.RET_ERRNO | errno.ENOSYS


def run(program: bytes, arch: int, nr: int, *args: int) -> int:
    data = struct.pack("=iIQ6Q", nr, arch, 0, *(list(args) + [0] * (6 - len(args))))
    code = [struct.unpack_from("=HBBI", program, i) for i in range(0, len(program), 8)]
    pc, acc = 0, 0
    while True:
        op, jt, jf, k = code[pc]
        if op == LD:
            acc = struct.unpack_from("=I", data, k)[0]
            pc += 1
        elif op == RET:
            return k
        else:
            taken = {JEQ: acc == k, JGE: acc >= k, JSET: bool(acc & k)}[op]
            pc += 1 + (jt if taken else jf)


@pytest.fixture(scope="module")
def program():
    return seccomp.build_filter((seccomp.X86_64, seccomp.I386))


X86, I386, ARM = seccomp.X86_64.audit_arch, seccomp.I386.audit_arch, seccomp.AARCH64.audit_arch


@pytest.mark.parametrize(
    ("arch", "nr", "args"),
    [
        (X86, 90, ("path", 0o4755)),  # chmod
        (X86, 90, ("path", 0o2755)),
        (X86, 91, (3, 0o6000)),  # fchmod
        (X86, 268, (-100, "path", 0o4711)),  # fchmodat
        (X86, 452, (-100, "path", 0o4711, 0)),  # fchmodat2
        (X86, 2, ("path", 0o101, 0o4755)),  # open(O_WRONLY|O_CREAT)
        (X86, 257, (-100, "path", 0o100, 0o2700)),  # openat(O_CREAT)
        (X86, 257, (-100, ".", 0o20200001, 0o4700)),  # openat(O_TMPFILE)
        (X86, 85, ("path", 0o4755)),  # creat
        (X86, 133, ("path", 0o104755, 0)),  # mknod
        (X86, 259, (-100, "path", 0o104755, 0)),  # mknodat
        (I386, 15, ("path", 0o4755)),  # i386 chmod
        (I386, 306, (-100, "path", 0o2755)),  # i386 fchmodat
        (I386, 295, (-100, "path", 0o100, 0o4755)),  # i386 openat
    ],
)
def test_setting_the_bits_is_refused(program, arch, nr, args):
    values = [0 if isinstance(a, str) else a & 0xFFFFFFFFFFFFFFFF for a in args]
    assert run(program, arch, nr, *values) == EPERM


@pytest.mark.parametrize(
    ("arch", "nr", "args"),
    [
        (X86, 90, (0, 0o755)),
        (X86, 91, (3, 0o1777)),  # the sticky bit is harmless
        (X86, 2, (0, 0o0, 0o4755)),  # open without O_CREAT: the mode is ignored
        (X86, 257, (-100, 0, 0o2, 0o6755)),  # openat O_RDWR
        (X86, 257, (-100, 0, 0o100, 0o644)),
        (X86, 0, (0, 0, 0)),  # read
        (X86, 59, (0, 0, 0)),  # execve
        (I386, 15, (0, 0o644)),
    ],
)
def test_everything_else_is_allowed(program, arch, nr, args):
    values = [a & 0xFFFFFFFFFFFFFFFF for a in args]
    assert run(program, arch, nr, *values) == ALLOW


def test_only_the_low_32_bits_of_a_mode_count_like_the_kernel():
    program = seccomp.build_filter((seccomp.X86_64,))
    assert run(program, X86, 90, 0, (1 << 40) | 0o755) == ALLOW
    assert run(program, X86, 90, 0, (1 << 40) | 0o4755) == EPERM


@pytest.mark.parametrize("nr", [437, 425, 426, 427])  # openat2, io_uring_*
def test_calls_the_filter_cannot_inspect_are_unavailable(program, nr):
    assert run(program, X86, nr) == ENOSYS
    assert run(program, I386, nr) == ENOSYS


def test_x32_and_unknown_abis_run_nothing(program):
    assert run(program, X86, 0x40000000 | 90, 0, 0o755) == ENOSYS
    assert run(program, X86, 0x40000000 | 1) == ENOSYS
    assert run(program, ARM, 56, 0, 0, 0o100, 0o4755) == ENOSYS  # not in this program


def test_arm64_table():
    program = seccomp.build_filter((seccomp.AARCH64,))
    assert run(program, ARM, 53, 0, 0, 0o4755) == EPERM  # fchmodat
    assert run(program, ARM, 56, 0, 0, 0o100, 0o4755) == EPERM  # openat O_CREAT
    assert run(program, ARM, 56, 0, 0, 0o0, 0o4755) == ALLOW
    assert run(program, ARM, 63, 0, 0, 0) == ALLOW  # read
    assert run(program, X86, 90, 0, 0o4755) == ENOSYS


def test_the_host_filter_is_the_program_for_this_machine():
    import platform

    if platform.machine() not in seccomp.HOST_ABIS:
        with pytest.raises(seccomp.UnsupportedMachine):
            seccomp.host_filter()
        return
    assert seccomp.host_filter() == seccomp.build_filter(seccomp.HOST_ABIS[platform.machine()])
    assert len(seccomp.host_filter()) % 8 == 0
