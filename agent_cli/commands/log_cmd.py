"""`agent-cli log verify` and `agent-cli log list`: integrity and an index of saved sessions."""

from typing import Annotated, Any

import typer

EXIT_OK = 0
EXIT_FAULT = 1


def register(app: typer.Typer) -> None:
    from agent_cli.cli import Common, guarded, with_options
    from agent_cli.commands.help import App

    log_app = App(help="Check and list session logs.", no_args_is_help=True,
                          add_completion=False, rich_markup_mode=None)

    @log_app.command("verify")
    @guarded
    @with_options("config")
    def verify_cmd(
        common: Common,
        log_arg: Annotated[str, typer.Argument(
            metavar="LOG", help="The session log to check: a path, a file name from `agent-cli "
            "log list`, or its id.")],
    ) -> None:
        """Check the hash chain of a log. Exit 0: intact (a torn last line from a crash is only a
        warning); 1: a line was edited, dropped, inserted or reordered; 2: the file cannot be
        read."""
        from rich.console import Console
        from rich.text import Text

        from agent_cli.errors import LogError
        from agent_cli.session_log import verify
        from agent_cli.ui.safe_rich import safe

        out = Console(highlight=False)
        err = Console(stderr=True, highlight=False)
        from agent_cli.log_store import resolve

        file = resolve(log_arg, common.settings())
        try:
            result = verify(file)
        except LogError as e:
            e.exit_code = 2
            raise
        for warning in result.warnings:
            err.print(Text("warning: ", style="yellow") + safe(warning), soft_wrap=True)
        if result.fault is not None:
            out.print(Text("FAIL ", style="bold red") + safe(f"{file}: {result.fault}"),
                      soft_wrap=True)
            raise typer.Exit(EXIT_FAULT)
        out.print(Text("OK ", style="bold green")
                  + safe(f"{file}: {result.count} events, hash chain intact "
                         f"(head {result.head})"), soft_wrap=True)
        raise typer.Exit(EXIT_OK)

    @log_app.command("list")
    @with_options("workspace", "config")
    @guarded
    def list_cmd(
        common: Common,
        limit: Annotated[int, typer.Option("--limit", "-n", metavar="N",
                                           help="How many sessions to show.")] = 20,
    ) -> None:
        """Recent sessions, newest first: start time, workspace, first prompt, and counts of
        calls, approvals (by you) and denials. --workspace DIR shows only that workspace's."""
        import time

        from rich.console import Console
        from rich.table import Table

        from agent_cli.errors import UsageError
        from agent_cli.log_store import log_id, sessions_dir
        from agent_cli.replay import list_sessions
        from agent_cli.safe_text import one_line
        from agent_cli.ui.safe_rich import safe

        if limit < 1:
            raise UsageError("--limit takes a number of sessions, 1 or more.")
        console = Console(highlight=False)
        settings = common.settings()
        workspace = common.workspace_dir() if common.workspace is not None else None
        sessions = list_sessions(settings, workspace, limit)
        if not sessions:
            console.print(safe(f"No sessions in {sessions_dir(settings)}.", "dim"))
            return
        table = Table(box=None, header_style="bold", padding=(0, 1))
        for name in ("started (UTC)", "kind", "workspace", "first prompt", "calls",
                     "approved", "denied", "log"):
            kw: dict[str, Any] = {"justify": "right"} if name in ("calls", "approved",
                                                                  "denied") else {}
            table.add_column(name, overflow="fold", **kw)
        for s in sessions:
            started = time.strftime("%Y-%m-%d %H:%M", time.gmtime(s.started)) if s.started \
                else "?"
            table.add_row(started, s.kind, safe(one_line(s.workspace)),
                          safe(one_line(s.first_prompt, 60)), str(s.calls), str(s.approved),
                          str(s.denied), safe(s.path.name))
        console.print(table)
        console.print(safe(f"LOG (for replay, chat --resume, log verify): a path, a name above, "
                           f"or its id (the 6 characters before .jsonl, e.g. "
                           f"{log_id(sessions[0].path)}). Folder: {sessions_dir(settings)}",
                           "dim"))

    app.add_typer(log_app, name="log")


