"""Whether a failure reads like the sandbox's doing: the one place that matches the text.

A confined process that the kernel stops meets EACCES, EPERM or EROFS on a write (or on a TCP
connect, which Landlock refuses with EACCES), and says so in its own words: Python's
`PermissionError: [Errno 13] Permission denied: '/x'`, Node's `EACCES: permission denied, open
'/x'`, git's `Unable to create '/x/.git/index.lock': Permission denied`, SQLite's `unable to open
database file`, a refused or unreachable connect. `sandbox_cause` reads such text (a tool
result, a server's stderr) and names the kind of denial and, when the text shows it, the path;
the callers turn that into one line naming the sandbox and the setting that would allow it.

Stdlib only, no state: it only reads text. It claims nothing about the kernel: a match means
"this looks like a denial", which is why the callers say "probably" only where the process ran
confined.
"""

from __future__ import annotations

import re

WRITE = "write"
"""A write (or create, rename, remove) was refused: the fix is a writable folder."""
NETWORK = "network"
"""A connection was refused or could not be made: the fix is `network = true`."""

_NETWORK_RE = re.compile(
    r"connect(?:ion)?\b[^\n]{0,80}?(?:EACCES|EPERM|Permission denied|Operation not permitted)"
    r"|(?:EACCES|EPERM|Permission denied|Operation not permitted)[^\n]{0,40}?\bconnect"
    r"|Connection refused|ECONNREFUSED|Network is unreachable|ENETUNREACH"
    r"|Temporary failure in name resolution|Name or service not known|EAI_AGAIN"
    r"|getaddrinfo ENOTFOUND|ConnectError|Failed to establish a new connection",
    re.IGNORECASE)
_WRITE_RE = re.compile(
    r"EACCES|EPERM|EROFS|Permission denied|Operation not permitted|Read-only file system"
    r"|unable to open database file|attempt to write a readonly database",
    re.IGNORECASE)
_SOCKET_RE = re.compile(r"sock_?\.?connect|create_connection|socket\.py|urlopen|httpx|urllib3"
                        r"|requests/|aiohttp", re.IGNORECASE)
"""Words of a traceback whose pathless EACCES came from a socket (Python's PermissionError of a
file always names the file; that of a refused connect names nothing)."""
_ERRNO_RE = re.compile(r"EACCES|EPERM|Permission denied|Operation not permitted|Errno 13",
                       re.IGNORECASE)
_QUOTED_PATH = re.compile(r"""['"`‘“]((?:/|~/)[^'"`’”\n]*)['"`’”]""")
_BARE_PATH = re.compile(r"((?:/|~/)[^\s:'\"]+)\s*:\s*(?:Permission denied|Read-only file system"
                        r"|Operation not permitted)", re.IGNORECASE)


def sandbox_cause(text: str) -> tuple[str, str | None] | None:
    """(kind, path) when `text` holds a denial the sandbox may have caused, else None.

    `kind` is WRITE or NETWORK; `path` is the file or folder named on the matching line, when
    one is (None for "unable to open database file", which names none). A network failure is
    checked first: Landlock refuses a TCP connect with the same EACCES as a write."""
    if not text:
        return None
    lines = text.splitlines()
    for line in lines:
        if _NETWORK_RE.search(line):
            return NETWORK, None
    for i, line in enumerate(lines):
        if _WRITE_RE.search(line):
            path = _path_in(line) or _wrapped_path(lines[i:i + 8])
            if path is None and _ERRNO_RE.search(line) \
                    and _SOCKET_RE.search("\n".join(lines[max(0, i - 40):i])):
                return NETWORK, None  # a pathless EACCES under a socket call: a connect
            return WRITE, path
    return None


def _wrapped_path(lines: list[str]) -> str | None:
    """A quoted path that a log formatter wrapped across lines (Rich tracebacks break
    `Permission denied: '/a/long/path'` at its width, padding each piece)."""
    quoted = _QUOTED_PATH.findall("".join(line.strip() for line in lines))
    return str(quoted[0]).rstrip("/") or "/" if quoted else None


def _path_in(line: str) -> str | None:
    """The path a denial line names: a quoted absolute (or ~) path first, then `/x: Permission
    denied`."""
    quoted = _QUOTED_PATH.findall(line)
    if quoted:
        return str(quoted[-1]).rstrip("/") or "/"
    bare = _BARE_PATH.search(line)
    return bare.group(1) if bare else None
