"""An ACP session/new or session/load as an agent-cli Session: the same Session.create as chat
and run (so the log, undo, sandbox and redaction are the REPL's), with the client's cwd as the
workspace and the client's MCP servers joined to the configured ones as data (servers.py)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent_cli.acp import wire
from agent_cli.acp.wire import RpcError

if TYPE_CHECKING:
    from agent_cli.config import Settings
    from agent_cli.conversation import History
    from agent_cli.session import Session, Sink


@dataclass
class Options:
    """The command line's part of every session (the common options)."""

    settings: Callable[[], Settings]
    workspace: Path | None = None
    """--workspace: wins over the client's cwd (said in a notice when they differ)."""
    tools_dirs: list[Path] = field(default_factory=list)
    log: Path | None = None


def open_session(options: Options, params: dict[str, Any], *, sink: Sink,
                 client: str, history: History | None, continues: str | None
                 ) -> tuple[Session, list[str]]:
    """The session and the sentences to log and show once it started."""
    from agent_cli.acp.servers import client_servers
    from agent_cli.session import Session
    from agent_cli.tools.mcp.state import configured_servers

    settings = options.settings()
    workspace, notes = _workspace(options, params.get("cwd"))
    configured = configured_servers(settings)
    extra, said = client_servers(params.get("mcpServers"), configured, client)
    notes += said
    if extra:
        mcp = dict(settings.mcp)
        mcp["servers"] = {**configured, **extra}
        settings = settings.model_copy(update={"mcp": mcp})
    # No approver: a call that needs a yes is announced to the sink (ApprovalNeeded) and waits
    # for Session.answer, which the client's answer to session/request_permission gives.
    session = Session.create(settings, workspace=workspace, sinks=[sink],
                             tools_dirs=options.tools_dirs, log_path=options.log,
                             history=history, continues=continues)
    return session, notes


def _workspace(options: Options, cwd: Any) -> tuple[Path, list[str]]:
    if options.workspace is not None:
        ws = options.workspace.expanduser().resolve()
        if isinstance(cwd, str) and cwd and Path(cwd).resolve() != ws:
            return ws, [f"The workspace is {ws} (--workspace), not the editor's folder {cwd}."]
        return ws, []
    if not isinstance(cwd, str) or not Path(cwd).is_absolute():
        raise RpcError(wire.INVALID_PARAMS, "cwd must be an absolute path: the folder the "
                       "tools may touch")
    path = Path(cwd)
    if not path.is_dir():
        raise RpcError(wire.INVALID_PARAMS, f"cwd {cwd} is not a folder")
    return path.resolve(), []
