"""`agent-cli log verify` and `agent-cli log list`: integrity and an index of saved sessions."""

from pathlib import Path
from typing import Annotated, Any, Optional

import typer

EXIT_OK = 0
EXIT_FAULT = 1


def verify_report(file: Path) -> int:
    """`log verify` of one file: warnings on stderr, the verdict and the trust line on stdout;
    returns the exit code (0 intact, 1 a fault). A file that cannot be read raises LogError
    with exit code 2."""
    from agent_cli.errors import LogError
    from agent_cli.log.keys import log_key
    from agent_cli.log.verify import verify

    try:
        key = log_key(create=False)
        result = verify(file, key=key)
    except LogError as e:
        e.exit_code = 2
        raise
    # (Rich after the check: on a long log its import overlaps the second half's check)
    from rich.console import Console
    from rich.text import Text

    from agent_cli.log.trust import judge
    from agent_cli.ui.safe_rich import safe

    out = Console(highlight=False)
    err = Console(stderr=True, highlight=False)
    for warning in result.warnings:
        err.print(Text("warning: ", style="yellow") + safe(warning), soft_wrap=True)
    if result.fault is not None:
        out.print(Text("FAIL ", style="bold red") + safe(f"{file}: {result.fault}"),
                  soft_wrap=True)
        return EXIT_FAULT
    out.print(Text("OK ", style="bold green")
              + safe(f"{file}: {result.count} events, hash chain intact "
                     f"(head {result.head})"), soft_wrap=True)
    trust = judge(result) if key is not None else None
    if trust is not None and trust.trusted:
        out.print(safe("Signed with your log key throughout: --reuse-approvals and undo "
                       "may act on it.", "green"), soft_wrap=True)
    else:
        out.print(safe("Not trusted for --reuse-approvals or undo: " + (
            trust.reason if trust is not None else "there is no log key on this machine."),
            "yellow"), soft_wrap=True)
    return EXIT_OK


def register(app: typer.Typer) -> None:
    from agent_cli.cli.common import Common, guarded, with_options
    from agent_cli.cli.help import App

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
        from agent_cli.log.store import resolve

        file = resolve(log_arg, common.settings())
        raise typer.Exit(verify_report(file))

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
        from agent_cli.log.show import list_sessions
        from agent_cli.log.store import log_id, sessions_dir
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
            if name == "log":  # the id is what a user copies: it never wraps, the rest gives way
                kw = {"no_wrap": True, "min_width": max(len(s.path.name) for s in sessions)}
            table.add_column(name, **{"overflow": "fold", **kw})
        for s in sessions:
            started = time.strftime("%Y-%m-%d %H:%M", time.gmtime(s.started)) if s.started \
                else "?"
            table.add_row(safe(started), safe(s.kind), safe(one_line(s.workspace)),
                          safe(one_line(s.first_prompt, 60)), f"{s.calls:d}", f"{s.approved:d}",
                          f"{s.denied:d}", safe(s.path.name))
        console.print(table)
        console.print(safe(f"LOG (for replay, chat --resume, log verify): a path, a name above, "
                           f"or its id (the 6 characters before .jsonl, e.g. "
                           f"{log_id(sessions[0].path)}). Folder: {sessions_dir(settings)}",
                           "dim"))
        from agent_cli.undo.prune import size_line

        console.print(safe(size_line(), "dim"))

    @log_app.command("prune")
    @guarded
    def prune_cmd(
        older_than: Annotated[str, typer.Option(
            "--older-than", metavar="AGE", help="Remove logs not written for this long: 30d, "
            "12h, 90m.")],
        config: Annotated[Optional[Path], typer.Option(  # noqa: UP045 (typer needs Optional)
            "--config", metavar="FILE", help="Settings file (TOML).")] = None,
    ) -> None:
        """Remove old session logs and the undo snapshots only they reference (what they
        recorded can no longer be undone)."""
        from rich.console import Console

        from agent_cli.config import load_settings
        from agent_cli.ui.safe_rich import safe
        from agent_cli.undo.prune import parse_age, prune, size_line

        seconds = parse_age(older_than)
        done = prune(load_settings(config, {}), seconds)
        console = Console(highlight=False)
        console.print(safe(f"Removed {done.logs:,} logs and {done.objects:,} snapshot objects "
                           f"({done.bytes / (1024 * 1024):,.1f} MB). {size_line()}."))

    app.add_typer(log_app, name="log")


