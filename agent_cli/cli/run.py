"""`agent-cli run`: one task, no REPL, made for scripts and pipes.

stdout carries only the result (the answer as text, one JSON object, or the event stream); what
happened on the way (tool calls, notices, errors) goes to stderr, so `agent-cli run ... > out.md`
or `| jq` get clean data. The prompt may come from stdin (`agent-cli run -`).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from agent_cli import events as ev
from agent_cli.cli.common import (
    EXIT_DENIED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_USAGE,
    INSTRUCTIONS_HELP,
    PLAIN,
    TURN_EXIT,
    Common,
    attach_instructions,
    fail,
    guarded,
    open_session,
    with_common,
)
from agent_cli.conversation import has_tool_use
from agent_cli.errors import UsageError

if TYPE_CHECKING:
    from agent_cli.session import Sink

OUTPUTS = ("text", "json", "jsonl")


def register(app: typer.Typer) -> None:
    app.command()(run)


@with_common
@guarded
def run(
    common: Common,
    prompt: Annotated[str, typer.Argument(
        metavar="PROMPT", help="The task, in words; - reads it from stdin.")],
    output: Annotated[str, typer.Option(
        "--output", "-o", metavar="FORMAT",
        help="text: the answer (only the answer on stdout when it is not a terminal; tool calls "
        "go to stderr); json: one object at the end (answer, stop_reason, exit_code, log, "
        "usage, denied); jsonl: every event, one per line (the session-log format).")] = "text",
    plain: PLAIN = False,
    instructions: Annotated[Optional[list[Path]], typer.Option(  # noqa: UP045
        "--instructions", metavar="FILE", help=INSTRUCTIONS_HELP)] = None,
) -> None:
    """Do one task headless and exit. Exit codes: 0 done, 1 error, 2 usage, 3 turn limit,
    4 model/API error, 5 repeated tool call, 6 output limit (max_tokens), 7 done but write
    calls were denied, 8 session budget used up, 9 the model refused, 130 interrupted,
    143/129 ended by SIGTERM/SIGHUP.

    Write calls ask on the terminal; with no terminal they are denied, never approved."""
    raise typer.Exit(run_headless(common, prompt, output, plain, instructions))


class Outcome:
    """What the scripts want to know at the end: denied call ids and the turn's usage."""

    def __init__(self) -> None:
        self.denied: list[str] = []
        self.by_rule: list[str] = []
        """Of those, the ones a deny rule refused (whatever anyone would have answered)."""
        self.usage: dict[str, int] = {}

    def __call__(self, event: ev.AnyEvent) -> None:
        if isinstance(event, ev.Approval) and event.decision == "denied":
            self.denied.append(event.id)
            if event.by == "rule":
                self.by_rule.append(event.id)
        elif isinstance(event, ev.TurnEnd):
            self.usage = dict(event.usage)


def without_text(sink: Sink) -> Sink:
    """A renderer for stderr: everything but the answer (that goes to stdout, once). Text the
    model wrote along with tool calls ("Let me look at the tests") is a trace: it stays."""
    held: list[ev.AnyEvent] = []

    def forward(event: ev.AnyEvent) -> None:
        if isinstance(event, ev.TextDelta):
            held.append(event)
            return
        if isinstance(event, ev.ModelReply):
            if has_tool_use(event.content):
                for delta in held:
                    sink(delta)
            held.clear()
        sink(event)

    return forward


def _fan_out(sinks: list[Sink]) -> Sink:
    """One sink for the terminal's thread that hands each event to `sinks`, in order."""

    def deliver(event: ev.AnyEvent) -> None:
        for sink in sinks:
            sink(event)

    return deliver


def read_prompt(prompt: str) -> str:
    if prompt != "-":
        return prompt
    text = sys.stdin.read()
    if not text.strip():
        raise UsageError("`agent-cli run -` reads the prompt from stdin, and stdin was empty; "
                         "pipe the task in (echo 'fix the tests' | agent-cli run -).")
    return text


def run_headless(common: Common, prompt: str, output: str, plain: bool,
                 instructions: list[Path] | None = None) -> int:
    from rich.console import Console

    from agent_cli.safe_text import sanitize
    from agent_cli.ui.render import Renderer, StatusOnly
    from agent_cli.ui.safe_rich import safe
    from agent_cli.ui.terminal import Terminal

    if output not in OUTPUTS:
        raise fail("--output must be text, json or jsonl.", EXIT_USAGE)
    from_stdin = prompt == "-"
    text = read_prompt(prompt)
    to_terminal = output == "text" and sys.stdout.isatty()
    err = Console(highlight=False, stderr=True, soft_wrap=True)
    term = Terminal.detect()
    approver = term.approver(Console(highlight=False, stderr=True))
    outcome = Outcome()
    sinks: list[Sink] = []
    if to_terminal:
        from agent_cli.ui.status import TerminalView

        console = Console(highlight=False)
        sinks.append(TerminalView(Renderer(console), console, markdown=not plain))
    elif output == "jsonl":
        sinks.append(StatusOnly(err))
    else:
        sinks.append(without_text(Renderer(err)))
    from agent_cli.signals import TerminationSignals
    from agent_cli.ui.turns import TerminalTurns

    signals = TerminationSignals()
    # The turn runs on its own thread; this one draws it, asks, and turns Ctrl-C and the
    # signals into a cancel (ui/turns.py).
    turns = TerminalTurns(_fan_out(sinks), approver, signals=signals)
    session = open_session(common, sinks=[outcome, turns.outbox])
    turns.attach(session)
    if output == "jsonl":
        session.log.mirror = _print_line
    with signals:  # SIGTERM/SIGHUP cancel the turn, then exit 143/129
        try:
            with signals.held():  # the start record lands whole; a signal is looked at after
                session.start()
            if signals.received is not None:
                reason, answer, code = "interrupted", "", EXIT_INTERRUPTED
            else:
                attach_instructions(session, instructions, term.confirm(err))
                result = turns.run(text)
                reason, answer = result.reason, result.text
                code = TURN_EXIT.get(reason, EXIT_OK)
        except KeyboardInterrupt:  # before the turn began (at the instructions' question)
            reason, answer, code = "interrupted", "", EXIT_INTERRUPTED
        if signals.received is not None:
            session.close(signals.reason)
        else:
            session.close("interrupted" if code == EXIT_INTERRUPTED else "exit")
    if signals.exit_code is not None:
        code = signals.exit_code
    if asked := len(outcome.denied) - len(outcome.by_rule):
        why = ("the prompt came from stdin, so nobody could be asked" if from_stdin
               and not term.interactive else "no terminal to ask" if not term.interactive
               else "you said no")
        err.print(safe(f"{asked} write call(s) were denied ({why}); the task may "
                       "be incomplete. Run it in a terminal to approve them, or use `agent-cli "
                       "chat`.", "yellow"))
    if outcome.by_rule:
        err.print(safe(f"{len(outcome.by_rule)} call(s) were refused by a deny rule, whatever "
                       "the answer would have been; the model was told why. `agent-cli replay "
                       f"{session.log_path}` shows each reason.", "yellow"))
    if outcome.denied and code == EXIT_OK:
        code = EXIT_DENIED
    if output == "json":
        _print_line(json.dumps({"answer": answer, "stop_reason": reason, "exit_code": code,
                                "log": str(session.log_path), "usage": outcome.usage,
                                "denied": outcome.denied}) + "\n")
    elif output == "text" and not to_terminal and answer:
        _print_line(sanitize(answer, collapse_padding=False) + ("" if answer.endswith("\n")
                                                                 else "\n"))
    return code


def _print_line(line: str) -> None:
    sys.stdout.write(line)
    sys.stdout.flush()

