"""MCP servers run confined: the SDK spawns them itself, so their command is wrapped.

A server may write only inside its working folder (`cwd`), the paths its config grants
(`writable = [...]`) and a private temporary folder of its own; it reads everything but
agent-cli's own state and the credential stores; it has no sockets unless its config says
`network = true`. `sandbox = "off"` runs one server unconfined, with a bold warning
(`capabilities.off_warning`) at its start and on its panels. Its capability record is kept by the
session's Sandbox (`Sandbox.server`), shown at its start and logged with each of its calls.
Outside a session (the `agent-cli mcp` commands) servers are confined too, with a sandbox of
their own.
"""

from __future__ import annotations

import errno
import os
import shutil
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from agent_cli.sandbox.policy import Sandbox, current

if TYPE_CHECKING:
    from agent_cli.sandbox.capabilities import Capabilities

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


def confine_server(params: Any, *, name: str, network: bool, writable: Sequence[str] = (),
                   sandbox: str = "workspace") -> Any:
    """`params` (mcp's StdioServerParameters) with the command run through the exec wrapper,
    confined to its cwd and `writable`; unchanged when the sandbox is off (for the session, or
    `sandbox = "off"` for this server) or the kernel cannot confine."""
    box = _sandbox()
    off = sandbox == "off"
    cwd = str(params.cwd) if params.cwd else os.getcwd()
    if off or not box.enforced:
        box.wrap([params.command], writable=cwd, network=network, name=name, off=off)
        return params
    argv, _tmp = box.wrap([_resolve(params.command, params.env, cwd), *params.args],
                          writable=[cwd, *writable], network=network, name=name)
    return params.model_copy(update={"command": argv[0], "args": argv[1:]})


def capabilities(name: str) -> Capabilities | None:
    """The record of server `name` as it was last started here (None: not started)."""
    return _sandbox().server(name)


def start_line(name: str) -> str | None:
    """What the start of server `name` and `mcp list` say about its confinement."""
    caps = capabilities(name)
    if caps is None:
        return None
    return f"MCP server {name}: " + "; ".join(caps.server_lines())
