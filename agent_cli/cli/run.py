"""`agent-cli run`: one task, no REPL, made for scripts and pipes.

stdout carries only the result (the answer as text, one JSON object, or the event stream); what
happened on the way (tool calls, notices, errors) goes to stderr, so `agent-cli run ... > out.md`
or `| jq` get clean data. The prompt may come from stdin (`agent-cli run -`, or no PROMPT at all),
and piped stdin with a PROMPT is attached to it (`git diff | agent-cli run "review this diff"`),
as `claude -p` and `codex exec` do.

Once stdin is the data it is never an answer source: it is read here, to its end or the cap, and
then replaced by an empty stream, so no confirm (ui/confirm.Asker falls back to plain `input`
when stdin is not a terminal) can ever read a `y` out of a piped file.
"""

from __future__ import annotations

import json
import os
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
from agent_cli.conversation import Attachment, has_tool_use, with_attachments
from agent_cli.errors import UsageError

if TYPE_CHECKING:
    from agent_cli.session import Sink

OUTPUTS = ("text", "json", "jsonl")
STDIN_CAP_BYTES = 512_000
"""The most of piped stdin sent to the model (about 130k tokens of code); past it the text is
cut, and a sentence at the cut and on stderr says so."""
STDIN_URI = "stdin"
"""How the attached stdin is marked for the model: `<resource uri="stdin">`."""
SLOW_STDIN_SECONDS = 5.0
"""After this long with nothing on a piped stdin, stderr says what agent-cli waits for (a
script whose stdin stays open would otherwise seem to hang)."""


def register(app: typer.Typer) -> None:
    app.command()(run)


@with_common
@guarded
def run(
    common: Common,
    prompt: Annotated[Optional[str], typer.Argument(  # noqa: UP045
        metavar="PROMPT", help="The task, in words; - (or none) reads it from stdin. With a "
        "PROMPT, piped stdin is attached to it (git diff | agent-cli run \"review this\").",
        show_default=False)] = None,
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

    Write calls ask on the terminal; with no terminal they are denied, never approved. Piped
    stdin is data (the prompt, or attached to PROMPT), never an answer."""
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


def read_prompt(prompt: str | None) -> tuple[str, list[Attachment]]:
    """The task and what is attached to it. `-` or no PROMPT: stdin is the task. A PROMPT with
    piped stdin that holds something: the PROMPT, then stdin attached (marked `stdin`). Either
    way stdin is used up here (`take_stdin`)."""
    from agent_cli.ui.terminal import stdin_is_terminal

    if prompt is not None and prompt != "-":
        if stdin_is_terminal():
            return prompt, []
        piped = take_stdin()
        return prompt, [Attachment(STDIN_URI, piped)] if piped.strip() else []
    if prompt is None and stdin_is_terminal():
        raise UsageError("`agent-cli run` needs a task: agent-cli run \"fix the tests\", or "
                         "pipe it in (echo 'fix the tests' | agent-cli run).")
    # `-` on a terminal: typed up to Ctrl-D, and the terminal still answers the panels after
    text = sys.stdin.read() if stdin_is_terminal() else take_stdin()
    if not text.strip():
        raise UsageError("`agent-cli run -` reads the prompt from stdin, and stdin was empty; "
                         "pipe the task in (echo 'fix the tests' | agent-cli run -).")
    return text, []


def take_stdin(cap: int = STDIN_CAP_BYTES) -> str:
    """Read stdin (up to `cap` bytes, then a sentence that says it was cut) and leave an empty
    stream in its place: whatever asks a question later reads EOF (a no), never the piped
    text. Bytes that are not UTF-8 become U+FFFD."""
    stream = sys.stdin
    if stream is None:
        return ""
    _say_if_slow(stream)
    source = getattr(stream, "buffer", None)
    data = source.read(cap + 1) if source is not None else \
        stream.read(cap + 1).encode("utf-8", "surrogateescape")
    sys.stdin = open(os.devnull, encoding="utf-8")  # noqa: SIM115 - lives as long as the process
    text = data[:cap].decode("utf-8", "replace")
    if len(data) <= cap:
        return text
    note = (f"[agent-cli cut stdin here: it was longer than {cap:,} bytes, and only the first "
            f"{cap:,} are sent. Pipe less (a path, a range, `| head -c {cap}`) to send it all.]")
    from rich.console import Console

    from agent_cli.ui.safe_rich import safe

    Console(stderr=True, highlight=False).print(safe(
        f"stdin is longer than {cap:,} bytes: only the first {cap:,} are sent to the model.",
        "yellow"))
    return text + "\n" + note + "\n"


def _say_if_slow(stream: object) -> None:
    """A pipe that stays open and silent (a script's inherited stdin) would look like a hang:
    after SLOW_STDIN_SECONDS, stderr says what is awaited and how to skip it."""
    try:
        import select

        fd = stream.fileno()  # type: ignore[attr-defined]
        ready, _, _ = select.select([fd], [], [], SLOW_STDIN_SECONDS)
    except (AttributeError, OSError, ValueError, ImportError):
        return  # not a real file descriptor (a test's stream), or no select here
    if not ready:
        sys.stderr.write("agent-cli run is waiting for stdin to end (it is not a terminal, so "
                         "it is read as part of the task); run with </dev/null to skip it.\n")
        sys.stderr.flush()


def run_headless(common: Common, prompt: str | None, output: str, plain: bool,
                 instructions: list[Path] | None = None) -> int:
    from rich.console import Console

    from agent_cli.safe_text import sanitize
    from agent_cli.ui.render import Renderer, StatusOnly
    from agent_cli.ui.safe_rich import safe
    from agent_cli.ui.terminal import Terminal

    if output not in OUTPUTS:
        raise fail("--output must be text, json or jsonl.", EXIT_USAGE)
    term = Terminal.detect()  # before stdin is used up: a pipe is not a terminal either way
    text, attached = read_prompt(prompt)
    from_stdin = not term.interactive and (prompt in (None, "-") or bool(attached))
    to_terminal = output == "text" and sys.stdout.isatty()
    err = Console(highlight=False, stderr=True, soft_wrap=True)
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
                result = turns.run(with_attachments(text, attached))
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
        why = ("stdin was piped in as part of the task, so nobody could be asked" if from_stdin
               else "no terminal to ask" if not term.interactive
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

