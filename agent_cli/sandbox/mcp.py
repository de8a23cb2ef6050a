"""MCP servers run confined: the SDK spawns them itself, so their command is wrapped.

A server may write only inside its working folder (`cwd`) and a private temporary folder of its
own, and has no TCP unless its config says `network = true`. Outside a session (the
`agent-cli mcp` commands) servers are confined too, with a sandbox of their own.
"""

from __future__ import annotations

import errno
import os
import shutil
from typing import Any

from agent_cli.sandbox.policy import Sandbox, current

_FALLBACK: Sandbox | None = None


def _sandbox() -> Sandbox:
    global _FALLBACK
    box = current()
    if box is not None:
        return box
    if _FALLBACK is None:
        from pathlib import Path

        _FALLBACK = Sandbox("workspace", Path.cwd())
    return _FALLBACK


def _resolve(command: str, env: dict[str, str] | None, cwd: str) -> str:
    """The program's absolute path, found as the SDK would (PATH of the server's environment,
    else ours; a relative path from its cwd). A program that is not there is reported as the
    SDK reports it ("command not found"), not as a wrapper that exited."""
    if os.sep in command:
        path = os.path.join(cwd, command)
        found = path if os.path.isfile(path) and os.access(path, os.X_OK) else None
    else:
        search = (env or {}).get("PATH") or os.environ.get("PATH", os.defpath)
        found = shutil.which(command, path=search)
    if found is None:
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), command)
    return os.path.abspath(found)


def confine_server(params: Any, *, name: str, network: bool) -> Any:
    """`params` (mcp's StdioServerParameters) with the command run through the exec wrapper;
    unchanged when the sandbox is off or the kernel cannot confine."""
    box = _sandbox()
    if not box.enforced:
        return params
    cwd = str(params.cwd) if params.cwd else os.getcwd()
    argv, _tmp = box.wrap([_resolve(params.command, params.env, cwd), *params.args],
                          writable=cwd, network=network, name=name)
    return params.model_copy(update={"command": argv[0], "args": argv[1:]})
