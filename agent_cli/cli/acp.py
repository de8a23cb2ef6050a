"""`agent-cli acp`: agent-cli as an Agent Client Protocol agent over stdio, for editors.

stdout carries only JSON-RPC. Before anything else runs, the protocol's two descriptors are moved
aside (duplicated to private, close-on-exec descriptors): file descriptor 1 then points at stderr
and descriptor 0 at /dev/null, so a stray print, a library's console or a child process can
neither write into the stream nor read the client's requests. Sentences go to stderr.
"""

from __future__ import annotations

import os
import sys

import typer

from agent_cli.cli.common import Common, guarded, with_common


def register(app: typer.Typer) -> None:
    app.command()(acp)


@with_common
@guarded
def acp(common: Common) -> None:
    """Serve the Agent Client Protocol on stdin/stdout, for editors (Zed, JetBrains IDEs,
    Neovim, Emacs): each write call asks in the editor, one by one.

    The workspace is the folder the editor sends (--workspace, when given, wins). Nothing but
    JSON-RPC is written to stdout; notices and errors go to stderr. docs/acp.md describes the
    methods."""
    common.settings()  # a broken config is one sentence now, not a failed session/new later
    if common.workspace is not None:
        common.workspace_dir()
    serve(common)


def serve(common: Common) -> None:
    """Speak the protocol until the client closes the stream or a signal (SIGTERM, SIGHUP,
    SIGINT) ends it: the running turn is cancelled and the log closed first."""
    from agent_cli.acp.agent import Agent
    from agent_cli.acp.opening import Options
    from agent_cli.acp.wire import Channel

    proto_in, proto_out = os.dup(0), os.dup(1)  # (new descriptors are close-on-exec)
    sys.stdout.flush()
    os.dup2(2, 1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    sys.stdout = sys.stderr
    channel = Channel(proto_in, proto_out)
    agent = Agent(channel, Options(settings=common.settings, workspace=common.workspace,
                                   tools_dirs=list(common.tools_dir), log=common.log))
    import signal
    import threading

    received: list[int] = []

    def ending(signum: int, frame: object) -> None:
        # On a thread of its own: a handler must not take the locks the main thread may hold.
        received.append(signum)
        name = "signal " + signal.Signals(signum).name  # (the session_end reason chat writes)
        threading.Thread(target=agent.stop, args=(name,), daemon=True).start()

    for signum in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(signum, ending)
    try:
        agent.run()
    finally:
        os.close(proto_in)
        os.close(proto_out)
    if received:  # 143 / 129 / 130, as chat and run exit
        raise typer.Exit(128 + received[0])
