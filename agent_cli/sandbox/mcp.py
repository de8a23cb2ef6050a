"""MCP servers run confined: the SDK spawns them itself, so their command is wrapped.

A server may write only inside its working folder (`cwd`) and a private temporary folder of its
own, and has no TCP unless its config says `network = true`. Outside a session (the
`agent-cli mcp` commands) servers are confined too, with a sandbox of their own.
"""

from __future__ import annotations

import os
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


def confine_server(params: Any, *, name: str, network: bool) -> Any:
    """`params` (mcp's StdioServerParameters) with the command run through the exec wrapper;
    unchanged when the sandbox is off or the kernel cannot confine."""
    box = _sandbox()
    if not box.enforced:
        return params
    cwd = str(params.cwd) if params.cwd else os.getcwd()
    argv, _tmp = box.wrap([params.command, *params.args], writable=cwd, network=network,
                          name=name)
    return params.model_copy(update={"command": argv[0], "args": argv[1:]})
