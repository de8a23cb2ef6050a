"""Say it: when a confined process fails the way the sandbox makes things fail, one line that
names the sandbox, the denied path when the output shows it, and the setting that would allow it.

`explain(text, caps)` reads a command's output (run_command puts the line after its result, so
the model is told too) or a server's stderr, against the process's capability record: a
"Permission denied" on a path the record allows is the file's own permissions, not the sandbox,
and gets no line. One function for every caller, so the words and the settings named are the
same for commands and servers.
"""

from __future__ import annotations

import os
import re

from agent_cli.sandbox.capabilities import Capabilities

_DENIED = re.compile(r"EACCES|EPERM|EROFS|permission denied|operation not permitted|"
                     r"read-only file system|PermissionError|\[Errno 13\]|\[Errno 1\]",
                     re.IGNORECASE)
_NETWORK = re.compile(r"socket|connect|network|getaddrinfo|resolve|ECONNREFUSED|urlopen|"
                      r"https?://|dns|bind\(|EAI_", re.IGNORECASE)
_WRITING = re.compile(r"touch|creat|writ|mkdir|remov|delet|unlink|renam|\.lock|read-only|EROFS|"
                      r"cp:|mv:|ln:|install", re.IGNORECASE)
_PATH = re.compile(r"""(?:^|[\s'"`(=:,\[])(~?/[^\s'"`:,;)\]]+)""")


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _paths(line: str) -> list[str]:
    return [os.path.expanduser(m) for m in _PATH.findall(line)]


def _first_denied_line(text: str) -> str | None:
    for line in text.splitlines():
        if _DENIED.search(line):
            return line
    return None


def explain(text: str, caps: Capabilities | None) -> str | None:
    """The one line for output `text` of a process confined by `caps`; None when nothing in it
    looks like the sandbox's doing (or the process was not confined)."""
    if caps is None or caps.kind != "workspace" or not text:
        return None
    line = _first_denied_line(text)
    if line is None:
        return None
    server = caps.name
    where = f"[mcp.servers.{server}]" if server else ""
    for raw in _paths(line):
        path = os.path.normpath(raw)
        real = os.path.realpath(path)
        denied = [d for d in caps.read_denied if _inside(real, d) or _inside(path, d)]
        allowed_again = [a for a in caps.read[1:] if _inside(real, a)]
        if denied and not allowed_again:
            return (f"sandbox: {path} is out of reach of confined processes (agent-cli's own "
                    f"state or a credential store, denied by the kernel sandbox); "
                    f"sandbox_read_allow = [\"{path}\"] in your config would allow reading it.")
        if not any(_inside(real, w) or _inside(path, w) for w in caps.write):
            folder = path if os.path.isdir(real) else os.path.dirname(path) or path
            if server:
                how = f"writable = [\"{folder}\"] in {where} would allow it"
            else:
                how = ("commands may write only in the workspace and TMPDIR; --sandbox off "
                       "(or sandbox = \"off\") runs them unconfined")
            verb = "writing" if _WRITING.search(line) else "access to"
            return (f"sandbox: {verb} {path} was refused by the kernel sandbox (it may write "
                    f"only in {', '.join(caps.write) or 'nothing'}); {how}.")
    if not caps.network and _NETWORK.search(text):
        how = (f"network = true in {where} would allow it" if server else
               "a run_command call with network: true (shown on its panel) would allow it")
        return ("sandbox: the process has no network (no sockets: the kernel sandbox refuses "
                f"them); {how}.")
    if any(_paths(line)):
        return None  # a path the record allows: the file's own permissions, not the sandbox
    return ("sandbox: the process ran confined by the kernel sandbox (writes only in "
            f"{', '.join(caps.write)}; no reads of agent-cli's state or credential stores"
            f"{'' if caps.network else '; no network'}); a refusal above may be the sandbox's.")
