"""Landlock through its three system calls, with ctypes: no dependency, nothing compiled.

The kernel interface is small: `landlock_create_ruleset` (444) makes a ruleset fd that says which
kinds of access are *handled* (denied unless a rule allows them), `landlock_add_rule` (445) adds
"beneath this folder, allow these" rules, and `landlock_restrict_self` (446) turns the ruleset
into a domain for the calling thread and everything it later starts. The numbers are the same on
every Linux architecture that has the calls. Each ABI version handles more kinds of access; a
ruleset that names a right the kernel does not know is refused, so the masks are cut to the ABI.

Rulesets are built once per session and network choice. Both PR_SET_NO_NEW_PRIVS and
landlock_restrict_self apply to the calling *thread* and what it starts, which the session's
spawner threads rely on (agent_cli.sandbox.spawner).

Nothing here runs at import time except the ctypes declarations; this module is imported only
when a session first needs it (never on the `--help` path).
"""

from __future__ import annotations

import ctypes
import os
import stat
import sys
from collections.abc import Iterable

SYS_CREATE_RULESET = 444
SYS_ADD_RULE = 445
SYS_RESTRICT_SELF = 446
CREATE_RULESET_VERSION = 1 << 0
RULE_PATH_BENEATH = 1
RULE_NET_PORT = 2
PR_SET_NO_NEW_PRIVS = 38
PR_SET_DUMPABLE = 4

# Filesystem rights, by the ABI that introduced them.
FS_EXECUTE = 1 << 0
FS_WRITE_FILE = 1 << 1
FS_READ_FILE = 1 << 2
FS_READ_DIR = 1 << 3
FS_REMOVE_DIR = 1 << 4
FS_REMOVE_FILE = 1 << 5
FS_MAKE_CHAR = 1 << 6
FS_MAKE_DIR = 1 << 7
FS_MAKE_REG = 1 << 8
FS_MAKE_SOCK = 1 << 9
FS_MAKE_FIFO = 1 << 10
FS_MAKE_BLOCK = 1 << 11
FS_MAKE_SYM = 1 << 12
FS_REFER = 1 << 13  # ABI 2
FS_TRUNCATE = 1 << 14  # ABI 3
FS_IOCTL_DEV = 1 << 15  # ABI 5
NET_BIND_TCP = 1 << 0  # ABI 4
NET_CONNECT_TCP = 1 << 1  # ABI 4
SCOPE_ABSTRACT_UNIX_SOCKET = 1 << 0  # ABI 6
SCOPE_SIGNAL = 1 << 1  # ABI 6

FS_ABI1 = (1 << 13) - 1
READ_RIGHTS = FS_EXECUTE | FS_READ_FILE | FS_READ_DIR
FILE_RIGHTS = FS_EXECUTE | FS_WRITE_FILE | FS_READ_FILE | FS_TRUNCATE | FS_IOCTL_DEV
"""The only rights a rule on a file (not a folder) may name."""


def fs_handled(abi: int) -> int:
    """Every filesystem right this ABI knows: all of them are denied unless a rule allows."""
    mask = FS_ABI1
    if abi >= 2:
        mask |= FS_REFER
    if abi >= 3:
        mask |= FS_TRUNCATE
    if abi >= 5:
        mask |= FS_IOCTL_DEV
    return mask


def net_handled(abi: int, network: bool) -> int:
    """TCP bind and connect are denied (no rules: no port is allowed) unless the call asked for
    network; before ABI 4 the kernel cannot say anything about the network."""
    return 0 if network or abi < 4 else NET_BIND_TCP | NET_CONNECT_TCP


def scoped(abi: int) -> int:
    """No signals to, and no abstract unix socket connections with, processes outside the
    domain (ABI 6)."""
    return SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL if abi >= 6 else 0


class RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]


class PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


_libc: ctypes.CDLL | None = None


def libc() -> ctypes.CDLL:
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
    return _libc


def _L(value: int) -> ctypes.c_long:
    """syscall(2) and prctl(2) are variadic and read longs: pass every argument as one."""
    return ctypes.c_long(value)


def _check(result: int, what: str) -> int:
    if result < 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")
    return result


def abi_version() -> int:
    """The Landlock ABI of the running kernel; 0 when it has none (not built in, or disabled at
    boot) or this is not Linux."""
    if not sys.platform.startswith("linux"):
        return 0
    res = libc().syscall(_L(SYS_CREATE_RULESET), None, _L(0), _L(CREATE_RULESET_VERSION))
    return int(res) if res > 0 else 0


def build_ruleset(abi: int, *, rules: Iterable[tuple[str, str]],
                  write_files: Iterable[str] = (), network: bool) -> int:
    """A ruleset fd (close-on-exec) for `rules` (path, grant) as `readplan.plan` makes them:
    `read` (read and execute beneath), `list` (this folder's names only), `write` (every
    filesystem right beneath); read and write on each file of `write_files` (device files such
    as /dev/null); TCP denied unless `network`. Paths that do not exist are left out."""
    handled = fs_handled(abi)
    rights = {"read": READ_RIGHTS & handled, "list": FS_READ_DIR, "write": handled}
    fd = _create(abi, network)
    try:
        for path, grant in rules:
            _add_path(fd, path, rights[grant])
        for path in write_files:
            _add_path(fd, path, (FS_READ_FILE | FS_WRITE_FILE | FS_TRUNCATE) & handled)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _open_rule(path: str, allowed: int) -> tuple[int, int] | None:
    """(an O_PATH fd of `path`, the rights a rule on it may grant); None when it does not
    exist or the grant means nothing there (a "list" grant on a file)."""
    try:
        target = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except (FileNotFoundError, NotADirectoryError, PermissionError):
        return None
    if not stat.S_ISDIR(os.fstat(target).st_mode):
        allowed &= FILE_RIGHTS
        if not allowed:
            os.close(target)
            return None
    return target, allowed


def _add_path(ruleset_fd: int, path: str, allowed: int) -> None:
    opened = _open_rule(path, allowed)
    if opened is None:
        return
    target, allowed = opened
    try:
        rule = PathBeneathAttr(allowed, target)
        _check(libc().syscall(_L(SYS_ADD_RULE), _L(ruleset_fd), _L(RULE_PATH_BENEATH),
                              ctypes.byref(rule), _L(0)), f"landlock_add_rule({path})")
    finally:
        os.close(target)


def _create(abi: int, network: bool) -> int:
    attr = RulesetAttr(fs_handled(abi), net_handled(abi, network), scoped(abi))
    size = ctypes.sizeof(RulesetAttr) if abi >= 6 else (16 if abi >= 4 else 8)
    return _check(libc().syscall(_L(SYS_CREATE_RULESET), ctypes.byref(attr), _L(size), _L(0)),
                  "landlock_create_ruleset")


class Prepared:
    """The ruleset of a record, for commands that are confined after a mount over `inside` (an
    overlay over the workspace): the rules on paths outside it name the same files in every
    mount namespace, the ones inside name the merged view of one mount only.

    Landlock has no way to copy a ruleset, but a ruleset stays open to new rules after it made a
    domain, and each domain is made from what the ruleset holds at that moment. So the rules
    outside are added once to a ruleset kept for the session, and each command adds just the
    few inside (opened after its mount) before it restricts itself: one system call per inside
    rule, instead of one per rule (a read allow-list runs to hundreds). An inside rule of an
    earlier command stays behind, naming a merged view that is gone, so it can match nothing;
    the ruleset is made afresh after REBUILD_AFTER commands, so they do not pile up."""

    REBUILD_AFTER = 32

    def __init__(self, abi: int, *, rules: Iterable[tuple[str, str]],
                 write_files: Iterable[str] = (), network: bool, inside: str) -> None:
        import threading

        self.abi, self.network = abi, network
        handled = fs_handled(abi)
        rights = {"read": READ_RIGHTS & handled, "list": FS_READ_DIR, "write": handled}
        wanted = [(p, rights[g]) for p, g in rules]
        wanted += [(p, (FS_READ_FILE | FS_WRITE_FILE | FS_TRUNCATE) & handled)
                   for p in write_files]
        root = inside.rstrip("/") + "/"
        self.inside = [(p, a) for p, a in wanted if p == inside or p.startswith(root)]
        self.outside = [(p, a) for p, a in wanted if (p, a) not in self.inside]
        self._fd = -1
        self._uses = 0
        self._lock = threading.Lock()

    def restrict(self) -> None:
        """Confine the calling thread (already in the mount namespace of its command) with
        every rule, the inside ones opened now."""
        with self._lock:
            if self._fd < 0 or self._uses >= self.REBUILD_AFTER:
                self.close()
                fd = _create(self.abi, self.network)
                try:
                    for path, allowed in self.outside:
                        _add_path(fd, path, allowed)
                except BaseException:
                    os.close(fd)
                    raise
                self._fd, self._uses = fd, 0
            self._uses += 1
            for path, allowed in self.inside:
                _add_path(self._fd, path, allowed)
            restrict_self(self._fd)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def restrict_self(ruleset_fd: int) -> None:
    """Confine the calling thread, and every process it starts from now on, for good."""
    _check(libc().prctl(_L(PR_SET_NO_NEW_PRIVS), _L(1), _L(0), _L(0), _L(0)),
           "prctl(PR_SET_NO_NEW_PRIVS)")
    _check(libc().syscall(_L(SYS_RESTRICT_SELF), _L(ruleset_fd), _L(0)),
           "landlock_restrict_self")


def set_undumpable() -> None:
    """prctl(PR_SET_DUMPABLE, 0): other processes of the user (our own children included) can no
    longer read this one's /proc/PID/environ, mem or maps, nor ptrace it."""
    _check(libc().prctl(_L(PR_SET_DUMPABLE), _L(0), _L(0), _L(0), _L(0)),
           "prctl(PR_SET_DUMPABLE)")
