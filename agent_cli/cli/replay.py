"""`agent-cli replay LOG`: show a session again (never runs anything), or `--rerun` it."""

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

if TYPE_CHECKING:
    from collections.abc import Callable

    from rich.console import Console

    from agent_cli.log.verify import VerifyResult

EXIT_OK = 0
EXIT_DRIFT = 1
EXIT_USAGE = 2


def bad_line_reporter(err: "Console") -> "Callable[[str], None]":
    """What a replay says about a line it leaves out."""

    def on_bad(message: str) -> None:
        from agent_cli.ui.safe_rich import safe

        err.print(safe(f"warning: {message}; skipped", "yellow"))

    return on_bad


def warn_if_chain_fails(log_file: Path, err: "Console",
                        result: "VerifyResult | None" = None) -> None:
    """A replay of a log whose chain does not verify starts with a warning: what follows may
    have been edited."""
    from agent_cli.errors import LogError
    from agent_cli.log.verify import verify
    from agent_cli.ui.safe_rich import safe

    if result is None:
        try:
            result = verify(log_file)
        except LogError:
            return
    if result.fault is not None:
        err.print(safe(f"warning: the hash chain of this log does not verify "
                       f"({result.fault}); what follows may have been edited. Run "
                       f"`agent-cli log verify {log_file}` for details.", "bold yellow"),
                  soft_wrap=True)


def replay_jsonl(log_file: Path, err: "Console",
                 on_bad: "Callable[[str], None]") -> int:
    """The whole log as JSONL, verified and printed in one pass (log.jsonl.jsonl_in_one_pass).
    The output waits in a spool (memory, then a temporary file: flat) until the chain is known,
    so a log that does not verify still gets its warning before any record; that log is then
    shown the ordinary way."""
    import shutil
    import tempfile

    from agent_cli.errors import LogError
    from agent_cli.log.jsonl import jsonl_in_one_pass

    with tempfile.SpooledTemporaryFile(max_size=4 << 20) as spool:
        try:
            result, bad = jsonl_in_one_pass(log_file, spool.write)
        except LogError:
            result = None
        if result is not None and result.fault is None:
            for message in bad:
                on_bad(message)
            spool.seek(0)
            sys.stdout.flush()
            shutil.copyfileobj(spool, sys.stdout.buffer, 1 << 20)
            sys.stdout.flush()
            return EXIT_OK
    from agent_cli.log import show as rp

    warn_if_chain_fails(log_file, err, result)
    rp.show(log_file, rp.JsonlView(sys.stdout.write), on_bad=on_bad)
    sys.stdout.flush()
    return EXIT_OK


def register(app: typer.Typer) -> None:
    from agent_cli.cli.common import Common, fail, guarded, with_options

    @app.command()
    @with_options("workspace", "tools_dir", "config")
    @guarded
    def replay(
        common: Common,
        log_arg: Annotated[Optional[str], typer.Argument(  # noqa: UP045 (typer needs Optional)
            metavar="LOG", help="The session log: a path, a file name from `agent-cli log "
            "list`, or its id.")] = None,
        last: Annotated[bool, typer.Option(
            "--last", help="The newest session of this workspace (--workspace DIR, default "
            "the current folder).")] = False,
        turns: Annotated[Optional[str], typer.Option(  # noqa: UP045 (typer needs Optional)
            "--turns", metavar="N-M",
            help="Only these turns: N, N-M, N- or -M (turn N starts at the Nth "
            "user message).")] = None,
        tools_only: Annotated[bool, typer.Option(
            "--tools-only", help="Only tool calls: panels, decisions and results.")] = False,
        output: Annotated[str, typer.Option(
            "--output", "-o", metavar="FORMAT",
            help="text: as the terminal showed it; markdown: a readable export; jsonl: the "
            "records themselves; html: one self-contained page to share (inert: no script, no "
            "links, no network).")] = "text",
        rerun: Annotated[bool, typer.Option(
            "--rerun", help="Feed the recorded model replies back and run the tools again in "
            "--workspace (write calls ask again); report results that differ. Exit 1 on "
            "drift.")] = False,
        reuse_approvals: Annotated[bool, typer.Option(
            "--reuse-approvals", help="With --rerun: approve a call without asking only when "
            "you approved the byte-identical call in the recording.")] = False,
        rerun_log: Annotated[Optional[Path], typer.Option(  # noqa: UP045
            "--rerun-log", metavar="FILE", help="With --rerun: where the rerun's own session "
            "log goes (default: a new log in the sessions folder).")] = None,
    ) -> None:
        """Show a saved session again: user turns, model text, each approval panel with the
        decision taken, and the results. Never runs a tool or calls a model (unless --rerun)."""
        from rich.console import Console

        from agent_cli.log import show as rp
        from agent_cli.log import store as log_store

        settings = common.settings()
        log_file = log_store.resolve_optional(log_arg, last, settings, common.workspace_dir())
        common.log = rerun_log
        if output not in ("text", "markdown", "jsonl", "html"):
            raise fail("--output must be text, markdown, jsonl or html.", EXIT_USAGE)
        if reuse_approvals and not rerun:
            raise fail("--reuse-approvals only makes sense with --rerun.", EXIT_USAGE)
        if rerun:
            if common.workspace is None:
                raise fail("--rerun runs the tools again: name the folder with --workspace DIR "
                           "(a copy of the original workspace is best).", EXIT_USAGE)
            if common.log is not None and common.log.resolve() == log_file.resolve():
                raise fail("--rerun-log must name a new file for the rerun's own log, not the "
                           "recording.", EXIT_USAGE)
            if turns is not None or tools_only or output != "text":
                raise fail("--rerun replays whole sessions; drop --turns, --tools-only and "
                           "--output.", EXIT_USAGE)
            raise typer.Exit(_rerun(common, log_file, reuse_approvals))
        span = rp.parse_turns(turns)
        err = Console(stderr=True, highlight=False)
        on_bad = bad_line_reporter(err)
        if output == "jsonl" and span is None and not tools_only:
            raise typer.Exit(replay_jsonl(log_file, err, on_bad))
        checked = _checked(log_file)
        warn_if_chain_fails(log_file, err, checked[0] if checked is not None else None)
        if span is not None:
            total = rp.count_turns(log_file)
            if span[0] > total:
                raise fail(f"--turns {turns}: this log has {total} turn"
                           f"{'' if total == 1 else 's'} (1-{total}).", EXIT_USAGE)

        if output == "html":
            from agent_cli.log.html_export import export

            page = export(log_file, turns=span, tools_only=tools_only,
                          prices=common.settings().prices, on_bad=on_bad)
            from agent_cli.write_faults import writing_stdout

            with writing_stdout("the HTML export"):
                sys.stdout.buffer.write(page.encode("utf-8", "replace"))
                sys.stdout.flush()
            raise typer.Exit(EXIT_OK)
        view: rp.View
        if output == "jsonl":
            view = rp.JsonlView(sys.stdout.write)
        elif output == "markdown":
            view = rp.MarkdownView(sys.stdout.write, log_file)
        else:
            from agent_cli.ui.views.replay import TextView

            out = Console(highlight=False)
            if checked is not None:
                _signature_banner(out, *checked)
            view = TextView(out, log_file)
        rp.show(log_file, view, turns=span, tools_only=tools_only, on_bad=on_bad)
        sys.stdout.flush()
        raise typer.Exit(EXIT_OK)

    def _checked(log_file: Path) -> "tuple[VerifyResult, bytes | None] | None":
        """The log verified once with this user's key (None when it cannot be read)."""
        from agent_cli.errors import LogError
        from agent_cli.log.keys import log_key
        from agent_cli.log.verify import verify

        try:
            key = log_key(create=False)
            return verify(log_file, key=key), key
        except LogError:
            return None

    def _signature_banner(out: "Console", result: "VerifyResult", key: bytes | None) -> None:
        """The replay's first line: whose key signed the whole file (log/trust.signature, the
        claim the HTML export's header makes too)."""
        from agent_cli.log.trust import signature
        from agent_cli.ui.safe_rich import safe

        signed = signature(result, key)
        out.print(safe(signed.sentence[0].upper() + signed.sentence[1:] + ".",
                       "dim" if signed.throughout else "bold yellow"), soft_wrap=True)

    def _rerun(common: Common, log: Path, reuse: bool) -> int:
        from rich.console import Console

        from agent_cli import rerun as rr
        from agent_cli.session import load_registry
        from agent_cli.signals import TerminationSignals
        from agent_cli.ui.render import Renderer
        from agent_cli.ui.terminal import Terminal
        from agent_cli.ui.turns import TerminalTurns
        from agent_cli.ui.views.rerun_report import RerunReportView, turn_echo

        console = Console(highlight=False)
        signals = TerminationSignals()
        # The turns run on their own thread; this one draws them, asks at the panels and
        # turns Ctrl-C and the signals into a cancel (ui/turns.py).
        front = TerminalTurns(Renderer(console), Terminal.detect().approver(console),
                              signals=signals)
        settings = common.settings()
        registry, load = load_registry(settings, common.tools_dir)
        with signals:
            report = rr.rerun(log, settings=settings, workspace=common.workspace_dir(),
                              registry=registry, front=front, on_turn=turn_echo(console),
                              reuse_approvals=reuse, log_path=common.log,
                              load_errors=load.errors)
        console.print(RerunReportView(report))
        return EXIT_DRIFT if report.drift else EXIT_OK
