"""Keep agent-cli's own secrets out of reach of the processes it starts.

Landlock refuses a confined child ptrace of its parent, but not a read of /proc/PPID/environ,
which shows the environment block the process was started with: agent-cli's API key included.
So, right after start:

1. the values of secret variables (by the one rule in `agent_cli.redact.is_secret_var`)
   are overwritten with NUL bytes in place, in that initial block. Python copied the environment
   into `os.environ` when it started, so the SDK still finds its key there; only the bytes the
   kernel shows (and C-level getenv, and children started with the inherited environment) lose
   it;
2. the process marks itself non-dumpable (prctl PR_SET_DUMPABLE 0): its /proc/PID files become
   root's, so no other process of the user (an unconfined child with the sandbox off included)
   can read its environ, maps or mem, or attach a debugger to it.

Side effects, on purpose: no core dumps, and no `gdb -p` / `py-spy dump` of a running agent-cli.
"""

from __future__ import annotations

import contextlib
import ctypes
import sys

_DONE = False


def guard_self() -> list[str]:
    """Hide the secrets and go non-dumpable, once per process. Returns the names hidden. Never
    raises: a kernel that refuses leaves the process as it was (Linux only; elsewhere a no-op)."""
    global _DONE
    if _DONE or not sys.platform.startswith("linux"):
        return []
    _DONE = True
    hidden: list[str] = []
    with contextlib.suppress(OSError, ValueError):
        hidden = hide_secrets()
    try:
        from agent_cli.sandbox.landlock import set_undumpable

        set_undumpable()
    except OSError:
        pass
    return hidden


def _env_block() -> tuple[int, int]:
    """Start and end address of the initial environment block (fields 50 and 51 of
    /proc/self/stat; always readable by the process itself)."""
    with open("/proc/self/stat", "rb") as f:
        raw = f.read()
    fields = raw[raw.rfind(b")") + 2:].split()
    # fields[0] is field 3 (state); env_start is field 50, env_end field 51.
    start, end = int(fields[47]), int(fields[48])
    if not 0 < start < end:
        raise ValueError("no environment block address")
    return start, end


def hide_secrets() -> list[str]:
    """Overwrite, in place, the value of every secret variable in the initial environment
    block. Returns the names whose values were hidden."""
    from agent_cli.redact import is_secret_var

    start, end = _env_block()
    block = ctypes.string_at(start, end - start)
    hidden: list[str] = []
    offset = 0
    for entry in block.split(b"\0"):
        eq = entry.find(b"=")
        if eq > 0:
            name = entry[:eq].decode("utf-8", "surrogateescape")
            value = entry[eq + 1:].decode("utf-8", "surrogateescape")
            if value and is_secret_var(name, value):
                ctypes.memset(start + offset + eq + 1, 0, len(entry) - eq - 1)
                hidden.append(name)
        offset += len(entry) + 1
    return hidden
