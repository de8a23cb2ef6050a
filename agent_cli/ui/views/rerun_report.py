"""The report of `agent-cli replay LOG --rerun`: tools that changed since the recording, warnings
about the log, and every call whose result drifted, drawn from rerun.py's RerunReport.

Every string in it came from a log or a tool run, so each goes through the output boundary
(ui.safe_rich.safe).
"""

from __future__ import annotations

from collections.abc import Callable

from rich.console import Console, ConsoleOptions, RenderResult
from rich.table import Table
from rich.text import Text

from agent_cli.rerun import RerunReport
from agent_cli.safe_text import one_line
from agent_cli.ui.safe_rich import safe

DRIFT_CELL = 160
"""Characters of a recorded or new result line shown in the drift table (the cut is counted)."""


class RerunReportView:
    """A renderable over one RerunReport."""

    def __init__(self, report: RerunReport) -> None:
        self.report = report

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        report = self.report
        if report.tools:
            table = Table(title="Tools changed since the recording", title_justify="left")
            table.add_column("tool")
            table.add_column("change", overflow="fold")
            for t in report.tools:
                table.add_row(safe(t.tool), safe(t.what))
            yield table
        for w in report.warnings:
            yield safe(f"warning: {w}", "yellow")
        if not report.drift:
            yield Text(f"No drift: all {report.calls:d} call results match the recording.",
                       style="green")
        else:
            table = Table(title=f"Drift: {len(report.drift):d} call(s) differ from the recording",
                          title_justify="left")
            table.add_column("call", overflow="fold")
            table.add_column("tool")
            table.add_column("what")
            table.add_column("recorded", overflow="fold")
            table.add_column("now", overflow="fold")
            for d in report.drift:
                table.add_row(safe(d.call_id), safe(d.tool), safe(d.what),
                              safe(one_line(d.recorded, DRIFT_CELL)),
                              safe(one_line(d.now, DRIFT_CELL)))
            yield table
        if report.log_path is not None:
            yield safe(f"Rerun log: {report.log_path}", "dim")


def turn_echo(console: Console) -> Callable[[str], None]:
    """What a rerun prints as it sends each recorded user message again: `› text`."""

    def echo(text: str) -> None:
        console.print(Text("› ", style="bold") + safe(text))

    return echo
