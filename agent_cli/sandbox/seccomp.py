"""No network means no sockets: a seccomp filter, installed with ctypes, for processes without
network.

Landlock (ABI 4 and later) rules only TCP. UDP, ICMP, named unix sockets (a path outside the
sandbox), abstract unix sockets and other families (vsock to a VM host, for one) are not
filesystem or TCP operations, so this filter closes the door they share: `socket()` itself.
A process without network may create no socket except the kernel's own route netlink (which
`getaddrinfo` uses to look at local interfaces); a stream or seqpacket `socketpair()` (an
anonymous connected pair, reaching nobody) still works, so pipes between a program's own
processes, asyncio and Node's child processes keep working. A datagram pair is refused: a unix
datagram socket can be pointed at any named socket later (connect, sendto). io_uring, which
can open sockets without the socket system call, is refused too, and so are the 32-bit socket
calls of a compat process.

The refusal is EACCES, which programs report as "Permission denied" (what `diagnose` looks
for). The filter applies to the thread that installs it and everything it starts (no TSYNC),
which the spawner relies on; it needs no-new-privs, which Landlock sets first.
"""

from __future__ import annotations

import ctypes
import errno
import os

PR_SET_NO_NEW_PRIVS = 38
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2
RET_ALLOW = 0x7FFF0000
RET_DENY = 0x00050000 | errno.EACCES
LD_ABS = 0x20  # BPF_LD | BPF_W | BPF_ABS
JEQ = 0x15  # BPF_JMP | BPF_JEQ | BPF_K
JGE = 0x35  # BPF_JMP | BPF_JGE | BPF_K
AND = 0x54  # BPF_ALU | BPF_AND | BPF_K
RET = 0x06  # BPF_RET | BPF_K
OFF_NR, OFF_ARCH, OFF_ARG0, OFF_ARG1, OFF_ARG2 = 0, 4, 16, 24, 32
SOCK_TYPE_MASK, SOCK_STREAM, SOCK_SEQPACKET = 0xF, 1, 5
AF_NETLINK, NETLINK_ROUTE = 16, 0
X32_BIT = 0x40000000

# (audit arch, socket, socketpair, io_uring_setup)
_NATIVE = {
    "x86_64": (0xC000003E, 41, 53, 425),
    "aarch64": (0xC00000B7, 198, 199, 425),
}
# The compat (32-bit) calls refused outright: i386 socketcall, socket, socketpair,
# io_uring_setup; arm socket, socketpair, io_uring_setup.
_COMPAT = {
    "x86_64": (0x40000003, (102, 359, 360, 425)),
    "aarch64": (0x40000028, (281, 288, 425)),
}


class SockFilter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8),
                ("k", ctypes.c_uint32)]


class SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(SockFilter))]


def supported() -> bool:
    """True when this machine's architecture has a filter here."""
    return os.uname().machine in _NATIVE


def program() -> list[tuple[int, int, int, int]]:
    """The filter as (code, jt, jf, k) instructions (jumps relative, as BPF wants)."""
    machine = os.uname().machine
    arch, sys_socket, sys_pair, sys_uring = _NATIVE[machine]
    compat_arch, compat_calls = _COMPAT[machine]
    # (label or None, code, k, jt label, jf label); "" means the next instruction.
    src: list[tuple[str | None, int, int, str, str]] = [
        (None, LD_ABS, OFF_ARCH, "", ""),
        (None, JEQ, arch, "", "compat"),
        (None, LD_ABS, OFF_NR, "", ""),
    ]
    if machine == "x86_64":
        src.append((None, JGE, X32_BIT, "deny", ""))
    src += [
        (None, JEQ, sys_uring, "deny", ""),
        (None, JEQ, sys_pair, "pair", ""),
        (None, JEQ, sys_socket, "", "allow"),
        (None, LD_ABS, OFF_ARG0, "", ""),
        (None, JEQ, AF_NETLINK, "", "deny"),
        (None, LD_ABS, OFF_ARG2, "", ""),
        (None, JEQ, NETLINK_ROUTE, "allow", "deny"),
        ("pair", LD_ABS, OFF_ARG1, "", ""),
        (None, AND, SOCK_TYPE_MASK, "", ""),
        (None, JEQ, SOCK_STREAM, "allow", ""),
        (None, JEQ, SOCK_SEQPACKET, "allow", "deny"),
        ("compat", JEQ, compat_arch, "", "allow"),
        (None, LD_ABS, OFF_NR, "", ""),
        *[(None, JEQ, nr, "deny", "") for nr in compat_calls],
        ("allow", RET, RET_ALLOW, "", ""),
        ("deny", RET, RET_DENY, "", ""),
    ]
    where = {label: i for i, (label, *_rest) in enumerate(src) if label}

    def rel(i: int, target: str) -> int:
        return 0 if not target else where[target] - i - 1

    return [(code, rel(i, jt), rel(i, jf), k)
            for i, (_label, code, k, jt, jf) in enumerate(src)]


_PROGRAM: tuple[SockFprog, ctypes.Array[SockFilter]] | None = None
"""The filter, made once (every command's start installs it)."""


def install() -> None:
    """Install the filter on the calling thread (and what it starts). Raises OSError."""
    global _PROGRAM
    from agent_cli.sandbox.landlock import libc as _libc

    libc = _libc()
    if _PROGRAM is None:
        insns = program()
        array = (SockFilter * len(insns))(*[SockFilter(*i) for i in insns])
        _PROGRAM = (SockFprog(len(insns), array), array)
    fprog = _PROGRAM[0]
    L = ctypes.c_long
    if libc.prctl(L(PR_SET_NO_NEW_PRIVS), L(1), L(0), L(0), L(0)) != 0:
        err = ctypes.get_errno()
        raise OSError(err, "prctl(PR_SET_NO_NEW_PRIVS)")
    if libc.prctl(L(PR_SET_SECCOMP), L(SECCOMP_MODE_FILTER), ctypes.byref(fprog), L(0),
                  L(0)) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"seccomp filter: {errno.errorcode.get(err, err)}")
