"""Say it: when a confined process fails the way the sandbox makes things fail, one line that
names the sandbox, the denied path when the output shows it, and the setting that would allow it.

Two steps, each in one place. `sandbox_cause(text)` only reads text: whether it holds a denial
the sandbox may have caused (Python's `PermissionError: [Errno 13] Permission denied: '/x'`,
Node's `EACCES: permission denied, open '/x'`, git's `Unable to create '/x/.git/index.lock':
Permission denied`, SQLite's `unable to open database file`, a refused or unreachable connect),
of which kind, and on which path. `explain(text, caps)` holds that against the process's
capability record: a "Permission denied" on a path the record allows is the file's own
permissions, not the sandbox, and gets no line. run_command puts the line after its result (so
the model is told too); an MCP server's start failure and failed results get the same line, so
the words and the settings named are the same for commands and servers.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence

from agent_cli.sandbox.capabilities import Capabilities

WRITE = "write"
"""A file operation (a write, a create, or a read of a denied path) was refused."""
NETWORK = "network"
"""A connection was refused or could not be made: the fix is network for that process."""

_NETWORK_RE = re.compile(
    r"connect(?:ion)?\b[^\n]{0,80}?(?:EACCES|EPERM|Permission denied|Operation not permitted)"
    r"|(?:EACCES|EPERM|Permission denied|Operation not permitted)[^\n]{0,40}?\bconnect"
    r"|Connection refused|ECONNREFUSED|Network is unreachable|ENETUNREACH"
    r"|Temporary failure in name resolution|Name or service not known|EAI_AGAIN"
    r"|getaddrinfo\s+E[A-Z]+|ConnectError|Failed to establish a new connection"
    r"|Could not resolve host|Failed to create socket",
    re.IGNORECASE)
_DENIED_RE = re.compile(
    r"EACCES|EPERM|EROFS|Permission denied|Operation not permitted|Read-only file system"
    r"|unable to open database file|attempt to write a readonly database|\[Errno 13\]",
    re.IGNORECASE)
_SOCKET_RE = re.compile(r"sock_?\.?connect|create_connection|socket\.py|urlopen|httpx|urllib3"
                        r"|requests/|aiohttp", re.IGNORECASE)
"""Words of a traceback whose pathless EACCES came from a socket (Python's PermissionError of a
file always names the file; that of a refused socket names nothing)."""
_ERRNO_RE = re.compile(r"EACCES|EPERM|Permission denied|Operation not permitted|Errno 13",
                       re.IGNORECASE)
_QUOTED_PATH = re.compile(r"""['"`‘“]((?:/|~/)[^'"`’”\n]*)['"`’”]""")
_BARE_PATH = re.compile(r"(?:^|(?<=[\s'\"`(=,\[]))((?:/|~/)[^\s:'\"]+)\s*:\s*"
                        r"(?:Permission denied|Read-only file system"
                        r"|Operation not permitted)", re.IGNORECASE)
_NEARBY_PATH = re.compile(r"""(?:^|\s)path:?\s+['"]?((?:/|~/)[^\s'"]+)""", re.IGNORECASE)
"""A path that a tool names on a line of its own beside the error code (npm: `npm error code
EACCES` / `npm error path /home/u/.npm/_cacache/tmp/x`; Node's `path: '/x'`)."""
_ANY_PATH = re.compile(r"""(?:^|[\s'"`(=:,\[])(~?/[^\s'"`:,;)\]]+)""")
_READING = re.compile(r"cannot open directory|\bls:|\bcat:|\bread(?:ing)?\b|opendir|scandir|"
                      r"listdir|cannot access", re.IGNORECASE)
"""A denial line that tells of a read: reads are confined only around agent-cli's state and
the credential stores, so any other refused path outside the writable roots was a write."""


def sandbox_cause(text: str) -> tuple[str, str | None] | None:
    """(kind, path) when `text` holds a denial the sandbox may have caused, else None.

    `kind` is WRITE or NETWORK; `path` is the file or folder named on the matching line, when
    one is. A network failure is checked first: Landlock refuses a TCP connect with the same
    EACCES as a write."""
    found = _cause(text)
    return None if found is None else found[:2]


def _cause(text: str) -> tuple[str, str | None, str] | None:
    """`sandbox_cause` with the matching line (which says whether it was a write)."""
    if not text:
        return None
    lines = text.splitlines()
    for line in lines:
        if _NETWORK_RE.search(line):
            return NETWORK, None, line
    for i, line in enumerate(lines):
        if _DENIED_RE.search(line):
            path = (_path_in(line) or _wrapped_path(lines[i:i + 8])
                    or _nearby_path(lines[max(0, i - 3):i + 6]))
            if path is None and _ERRNO_RE.search(line) \
                    and _SOCKET_RE.search("\n".join(lines[max(0, i - 40):i + 1])):
                return NETWORK, None, line  # a pathless EACCES under a socket call
            return WRITE, path, line
    return None


def _wrapped_path(lines: list[str]) -> str | None:
    """A quoted path that a log formatter wrapped across lines (Rich tracebacks break
    `Permission denied: '/a/long/path'` at its width, padding each piece)."""
    quoted = _QUOTED_PATH.findall("".join(line.strip() for line in lines))
    return str(quoted[0]).rstrip("/") or "/" if quoted else None


def _nearby_path(lines: list[str]) -> str | None:
    """The path named on a `path ...` line next to a pathless denial line."""
    for line in lines:
        m = _NEARBY_PATH.search(line)
        if m:
            return m.group(1)
    return None


def _path_in(line: str) -> str | None:
    """The path a denial line names: a quoted absolute (or ~) path first, then `/x: Permission
    denied`, then any absolute path on the line."""
    quoted = _QUOTED_PATH.findall(line)
    if quoted:
        return str(quoted[-1]).rstrip("/") or "/"
    bare = _BARE_PATH.search(line)
    if bare:
        return bare.group(1)
    loose = _ANY_PATH.findall(line)
    return loose[0] if loose else None


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _toml_list(items: Sequence[str]) -> str:
    return "[" + ", ".join(f'"{i}"' for i in items) + "]"


def explain(text: str, caps: Capabilities | None, *, path_hint: str | None = None,
            grants: Sequence[str] = ()) -> str | None:
    """The one line for output `text` of a process confined by `caps`; None when nothing in it
    looks like the sandbox's doing (or the process was not confined).

    For a server (`caps.name`), the settings named are its own table's; `grants` are its
    `writable` entries as configured (kept in the proposed list), `path_hint` the path its
    arguments name when the output names none (SQLite's "unable to open database file")."""
    if caps is None or caps.kind != "workspace" or not text:
        return None
    cause = _cause(text)
    if cause is None:
        return None
    kind, path, line = cause
    server = caps.name
    where = f"[mcp.servers.{server}]" if server else ""
    if kind == NETWORK:
        if caps.network:
            return None
        how = (f"network = true in {where} would allow it" if server else
               "a run_command call with network: true (shown on its panel) would allow it")
        return ("sandbox: the process has no network (no sockets: the kernel sandbox refuses "
                f"them); {how}.")
    path = path or path_hint
    if path is None:
        return ("sandbox: the process ran confined by the kernel sandbox (writes only in "
                f"{', '.join(caps.write) or 'nothing'}; no reads of agent-cli's state or "
                f"credential stores{'' if caps.network else '; no network'}); the refusal "
                "above may be the sandbox's.")
    path = os.path.normpath(os.path.expanduser(path))
    real = os.path.realpath(path)
    denied = [d for d in caps.read_denied if _inside(real, d) or _inside(path, d)]
    allowed_again = [a for a in caps.read[1:] if _inside(real, a)]
    if denied and not allowed_again:
        return (f"sandbox: {path} is out of reach of confined processes (agent-cli's own "
                "state or a credential store, denied by the kernel sandbox); "
                f"sandbox_read_allow = [\"{path}\"] in your config would allow reading it.")
    if any(_inside(real, w) or _inside(path, w) for w in caps.write):
        return None  # a path the record allows: the file's own permissions, not the sandbox
    folder = path if os.path.isdir(real) else os.path.dirname(path) or path
    if server:
        how = f"writable = {_toml_list([*grants, folder])} in {where} would allow it"
    else:
        how = ("commands may write only in the workspace and TMPDIR; --sandbox off "
               "(or sandbox = \"off\") runs them unconfined")
    verb = "access to" if _READING.search(line) else "writing"
    return (f"sandbox: {verb} {path} was refused by the kernel sandbox (it may write "
            f"only in {', '.join(caps.write) or 'nothing'}); {how}.")


LAYER_FULL = ("undo: this command's writes were held in memory until it ended (its undo layer, a "
              "tmpfs of at most half the RAM), and they filled it: \"No space left on device\" "
              "came from there, not from your disk. For a build that writes that much, set "
              "`undo = false` in config (its writes then go straight to the workspace), or run "
              "it yourself with `!` at the prompt.")


def layer_full(text: str, on_layer: bool) -> str | None:
    """The line for a command that ran out of room in its overlay layer (held in memory), so the
    user and the model do not look for a full disk; None otherwise."""
    if on_layer and "No space left on device" in text:
        return LAYER_FULL
    return None

