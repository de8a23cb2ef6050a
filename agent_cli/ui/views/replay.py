"""The text replay: a session log drawn again as the terminal showed it (`agent-cli replay LOG`).

log.show streams the records and picks the turns; this view draws each one through the live
Renderer, and each decision a person made through the live approval panel followed by the answer
that was typed. Every string from the log goes through the output boundary (ui.safe_rich).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, assert_never

from rich.console import Console
from rich.text import Text

from agent_cli import events as ev
from agent_cli.events import call_of
from agent_cli.log.show import when
from agent_cli.ui.panel import approval_panel, prompt_line
from agent_cli.ui.render import Renderer
from agent_cli.ui.safe_rich import safe


class TextView:
    """What the terminal showed: the live Renderer for events, the live approval panel for each
    decision a person made, followed by the answer that was typed."""

    def __init__(self, console: Console, log_path: Path) -> None:
        self.console = console
        self.log_path = log_path
        self.renderer = Renderer(console)
        self.proposed: dict[str, Any] = {}
        self.sources: dict[str, str] = {}
        self.log_turn = 0
        """The number of the turn being shown (set by `show`, counted in the whole log)."""

    def __call__(self, event: ev.Event, record: dict[str, Any]) -> None:
        c = self.console
        match event:
            case ev.SessionStart():
                self.sources = {t.name: t.source for t in event.tools}
                c.print(Text.assemble(("agent-cli", "bold"), " · ")
                        + safe(f"{event.provider}:{event.model} · workspace {event.workspace}"))
                note = f"replay of {self.log_path}, recorded {when(event.ts)}"
                if event.continues:
                    note += f", continuing {event.continues}"
                c.print(safe(note + "; nothing is run again.", "dim"))
            case ev.UserMessage():
                c.print(Text(f"── turn {self.log_turn:d} ──", style="dim"))
                c.print(Text("› ", style="bold") + safe(event.text))
            case ev.ModelReply():
                for block in event.content:
                    if block.get("type") == "text" and block.get("text"):
                        self.renderer(ev.TextDelta(str(block["text"])))
                self.renderer(event)
            case ev.ToolProposed():
                self.proposed[event.id] = event.input
                self.renderer(event)
            case ev.Approval():
                self._approval(event)
                self.renderer(event)
            case ev.ToolResultEvent():
                self.proposed.pop(event.id, None)
                self.renderer(event)
            case ev.SessionEnd():
                c.print(safe(f"(session ended: {event.reason})", "dim"))
            case (ev.ToolInvalid() | ev.ToolStarted() | ev.ErrorEvent() | ev.Interrupt()
                  | ev.TurnEnd() | ev.Notice()):
                self.renderer(event)
            case ev.Effects():
                self.renderer(event)  # the line under the command's result, as live
            case ev.Undo():
                pass  # the live terminal showed nothing for these (the export lists them)
            case _:
                assert_never(event)

    def _approval(self, event: ev.Approval) -> None:
        if event.by == "recording":
            self.console.print(Text("✓ ", style="green")
                               + safe(f"{event.name}: approved again (identical to a call "
                                      "approved in the recording)", "dim"))
            return
        if event.by != "user":
            return  # read-only calls showed no panel; rule and policy denials print as live
        request = call_of(event, self.proposed.get(event.id), self.sources.get(event.name, ""))
        self.console.print(approval_panel(request))
        # The log keeps the decision and the reason, not the keys typed: the replay says what it
        # holds and invents no answer (a "sure" that denied is not "n sure"), as the HTML export.
        self.console.print(safe(prompt_line(request)))
        reason = f": {event.reason}" if event.reason else ""
        self.console.print(safe(f"{event.decision} by {event.by}{reason}",
                                "green" if event.decision == "approved" else "red"))
