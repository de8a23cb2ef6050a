"""A call's path arguments, checked by the path guard before anything is shown or run.

A panel that asks "Run write_file on ~/.local/share/agent-cli/config.toml?" and then refuses after
the yes wastes the person's attention and teaches them that a yes may not mean anything. So every
path argument of a call (the arguments `approval.path_arg_names` names: `path`, `*_path`, ...,
or marked `"format": "path"` by a plugin) goes through the one guard (tools/paths.py) right
after validation, for built-in and plugin tools alike: a path that leaves the workspace, goes
through a link that leaves it, or reaches agent-cli's own state (also through a hard link) is
refused there, before any preview, panel or run. MCP tools are not checked here: their paths are
the server's, resolved in its own folder, and the sandbox confines the server.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from agent_cli.calls import Call
from agent_cli.errors import PathRefused
from agent_cli.tools.paths import refuse_protected_fd, resolve_in_workspace

REFUSED_BY_GUARD = "refused by the path guard before any panel"
"""How a refusal here begins (the model and the log see it; `_denial_text` keeps it whole)."""


def _path_values(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [v for v in value if isinstance(v, str)]
    return []


def path_refusal(call: Call) -> str | None:
    """Why the guard refuses one of the call's path arguments (a sentence), or None."""
    if not call.workspace or not call.path_args or call.source.startswith("mcp:"):
        return None
    workspace = Path(call.workspace)
    for name in call.path_args:
        for raw in _path_values(call.args.get(name)):
            if not raw.strip():
                continue  # an empty optional path: the tool's own default applies
            try:
                real = resolve_in_workspace(workspace, raw)
                try:
                    st = os.stat(real)  # (no link is left in `real`)
                except OSError:
                    continue  # not there yet: a file to create
                refuse_protected_fd(st, raw)
            except PathRefused as e:
                return f"{REFUSED_BY_GUARD} ({name}): {str(e).rstrip('.')}"
    return None
