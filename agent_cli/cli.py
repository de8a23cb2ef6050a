"""The command line: parse, build a Session, hand over. Thin on purpose.

Heavy imports (the anthropic SDK, prompt-toolkit, the session machinery) happen inside the
commands, so `agent-cli --help` stays fast.
"""

from __future__ import annotations

import functools
import inspect
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer

if TYPE_CHECKING:
    from rich.console import Console

    from agent_cli.approval import Approver
    from agent_cli.config import Settings
    from agent_cli.session import Session, Sink
    from agent_cli.tools.scope import Scope as ToolScope

from agent_cli.commands.help import App, PlainCommand, plain_everywhere

app = App(
    name="agent-cli",
    help=(
        "A terminal agent: the model proposes tool calls, you approve each one that has "
        "effects.\n\nTry it offline, no key needed:\n\n"
        "  agent-cli chat --demo\n\n"
        "  agent-cli chat --provider scripted --script examples/demo_script.json\n\n"
        "With Claude: export ANTHROPIC_API_KEY=... then agent-cli chat"
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        from agent_cli import __version__

        typer.echo(f"agent-cli {__version__}")
        raise typer.Exit(0)


@app.callback()
def _main_options(
    version: Annotated[bool, typer.Option(
        "--version", "-V", is_eager=True, callback=_version,
        help="Print the version (agent-cli X.Y.Z) and exit.")] = False,
) -> None:
    """A terminal agent: the model proposes tool calls, you approve each one that has effects."""


# Exit codes of `agent-cli run` (documented in README).
EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_LIMIT = 3
EXIT_PROVIDER = 4
EXIT_REPEATED = 5
EXIT_MAX_TOKENS = 6
EXIT_DENIED = 7
"""The model finished, but one or more write calls were denied (so the task may be undone)."""
EXIT_BUDGET = 8
"""The session's budget (max_tool_calls, max_cost_usd) was used up."""
EXIT_REFUSAL = 9
"""The model refused (stop reason `refusal`)."""
EXIT_INTERRUPTED = 130
EXIT_NOT_FOUND = 2
"""A LOG or other named file that does not exist: a usage error, the same for every command."""
TURN_EXIT = {
    "end_turn": EXIT_OK, "stop_sequence": EXIT_OK, "max_turns": EXIT_LIMIT,
    "error": EXIT_PROVIDER, "repeated_failure": EXIT_REPEATED, "max_tokens": EXIT_MAX_TOKENS,
    "refusal": EXIT_REFUSAL, "budget": EXIT_BUDGET, "interrupted": EXIT_INTERRUPTED,
}


INSTRUCTIONS_HELP = ("Project instruction file (e.g. AGENTS.md) to pass to the model as the "
                     "project's words; repeat for more. Pinned: a changed file needs "
                     "`agent-cli trust FILE` or your yes.")


@dataclass
class Common:
    """The options every session command takes (after the subcommand)."""

    workspace: Path | None = None
    tools_dir: list[Path] = field(default_factory=list)
    config: Path | None = None
    log: Path | None = None
    model: str | None = None
    provider: str | None = None
    base_url: str | None = None
    script: Path | None = None
    max_turns: int | None = None
    sandbox: str | None = None
    tools: list[str] | None = None
    exclude_tools: list[str] | None = None
    read_only: bool | None = None
    tool_choice: str | None = None
    max_tool_calls: int | None = None
    max_cost_usd: float | None = None

    def settings(self) -> Settings:
        from agent_cli.config import load_settings
        from agent_cli.tools.scope import split_globs

        flags: dict[str, Any] = {"model": self.model, "provider": self.provider,
                                 "base_url": self.base_url, "max_turns": self.max_turns,
                                 "script": str(self.script) if self.script else None,
                                 "sandbox": self.sandbox,
                                 "tools": split_globs(self.tools) if self.tools else None,
                                 "exclude_tools": split_globs(self.exclude_tools)
                                 if self.exclude_tools else None,
                                 "read_only": True if self.read_only else None,
                                 "tool_choice": self.tool_choice,
                                 "max_tool_calls": self.max_tool_calls,
                                 "max_cost_usd": self.max_cost_usd}
        if self.script and not self.provider:
            flags["provider"] = "scripted"
        return load_settings(self.config, flags)

    def workspace_dir(self) -> Path:
        ws = (self.workspace or Path.cwd()).expanduser()
        if not ws.is_dir():
            raise typer.BadParameter(f"{ws} is not a folder.", param_hint="--workspace")
        return ws.resolve()


_COMMON_OPTIONS: dict[str, Any] = {
    "workspace": Annotated[Optional[Path], typer.Option(  # noqa: UP045 (typer needs Optional)
        "--workspace", "-w", metavar="DIR",
        help="Folder the tools may touch (default: the current folder).")],
    "tools_dir": Annotated[Optional[list[Path]], typer.Option(  # noqa: UP045
        "--tools-dir", metavar="DIR",
        help="Extra plugin folder; repeat for more. Never loaded implicitly.")],
    "config": Annotated[Optional[Path], typer.Option(  # noqa: UP045
        "--config", metavar="FILE",
        help="Settings file (TOML) on top of AGENT_CLI_HOME/config.toml.")],
    "log": Annotated[Optional[Path], typer.Option(  # noqa: UP045
        "--log", metavar="FILE",
        help="Session log file; an existing one is appended to, its chain continued.")],
    "model": Annotated[Optional[str], typer.Option(  # noqa: UP045
        "--model", metavar="NAME", help="Model name, e.g. claude-sonnet-5-5.")],
    "provider": Annotated[Optional[str], typer.Option(  # noqa: UP045
        "--provider", metavar="NAME", help="anthropic | openai | scripted.")],
    "base_url": Annotated[Optional[str], typer.Option(  # noqa: UP045
        "--base-url", metavar="URL",
        help="API endpoint (ANTHROPIC_BASE_URL / OPENAI_BASE_URL also work).")],
    "script": Annotated[Optional[Path], typer.Option(  # noqa: UP045
        "--script", metavar="FILE",
        help="JSON array of model replies for the scripted provider (offline).")],
    "max_turns": Annotated[Optional[int], typer.Option(  # noqa: UP045
        "--max-turns", metavar="N",
        help="Model requests allowed within one user turn (at least 1; default 25).")],
    "sandbox": Annotated[Optional[str], typer.Option(  # noqa: UP045
        "--sandbox", metavar="MODE",
        help="workspace (default): approved commands and MCP servers may write only in the "
        "workspace and a temporary folder, no network; off: they run with all your rights.")],
    "tools": Annotated[Optional[list[str]], typer.Option(  # noqa: UP045
        "--tools", metavar="NAMES",
        help="Offer only these tools: names or globs, comma-separated or repeated "
        "(--tools read_file,list_dir,'git__*').")],
    "exclude_tools": Annotated[Optional[list[str]], typer.Option(  # noqa: UP045
        "--exclude-tools", metavar="NAMES",
        help="Never offer these tools (names or globs, comma-separated or repeated).")],
    "read_only": Annotated[Optional[bool], typer.Option(  # noqa: UP045
        "--read-only",
        help="Offer only read tools; every write call is refused before a panel.")],
    "tool_choice": Annotated[Optional[str], typer.Option(  # noqa: UP045
        "--tool-choice", metavar="auto|any|none|TOOL",
        help="Whether the model may, must or must not call tools, or must call TOOL.")],
    "max_tool_calls": Annotated[Optional[int], typer.Option(  # noqa: UP045
        "--max-tool-calls", metavar="N", min=1,
        help="Tool calls allowed in the whole session; it ends when they are used up.")],
    "max_cost_usd": Annotated[Optional[float], typer.Option(  # noqa: UP045
        "--max-cost-usd", metavar="USD", min=0.0,
        help="Dollars the session may spend (needs config prices); it ends when reached.")],
}


def with_common(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Give a command the common options; it receives them as one `common: Common` argument."""
    return with_options(*_COMMON_OPTIONS)(fn)


def with_options(*names: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Like `with_common`, with only the named common options, so a command's --help lists only
    what applies to it (`replay` has no --model; `log list` no --tools-dir)."""
    unknown = set(names) - set(_COMMON_OPTIONS)
    assert not unknown, unknown

    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        sig = inspect.signature(fn, eval_str=True)
        own = [p for p in sig.parameters.values() if p.name != "common"]
        extra = [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=None,
                                   annotation=_COMMON_OPTIONS[name]) for name in names]

        @functools.wraps(fn)
        def wrapper(**kwargs: Any) -> Any:
            values = {name: kwargs.pop(name, None) for name in names}
            values["tools_dir"] = values.get("tools_dir") or []
            return fn(common=Common(**values), **kwargs)

        wrapper.__signature__ = sig.replace(parameters=own + extra)  # type: ignore[attr-defined]
        return wrapper

    return decorate


def fail(message: str, code: int = 1) -> typer.Exit:
    from rich.console import Console

    Console(stderr=True).print(f"[bold red]error:[/] {_escape(message)}")
    return typer.Exit(code)


def _escape(text: str) -> str:
    from rich.markup import escape

    from agent_cli.safe_text import sanitize

    return escape(sanitize(text))


def guarded(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Errors a user can meet become one sentence and an exit code, not a traceback."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        from agent_cli.errors import AgentError

        try:
            return fn(*args, **kwargs)
        except AgentError as e:
            raise fail(str(e), e.exit_code) from None

    return wrapper


def build_session(
    common: Common,
    *,
    console: Console,
    approver: Approver,
    sinks: list[Sink],
    history: list[dict[str, Any]] | None = None,
    continues: str | None = None,
    log_path: Path | None = None,
    scope: ToolScope | None = None,
) -> Session:
    """The tools offered are those in the settings' scope (`tools`, `exclude_tools`,
    `read_only`), narrowed further by `scope` (an eval task's); the scoped registry is the one
    MCP tools join later, so they are held to it too."""
    from agent_cli.session import Session, load_registry, make_provider, session_scope

    settings = common.settings()
    workspace = common.workspace_dir()
    provider = make_provider(settings)
    registry, report = load_registry(settings, common.tools_dir)
    registry = session_scope(settings, registry, scope)
    session = Session(settings, workspace=workspace, provider=provider, registry=registry,
                      approver=approver, sinks=sinks, log_path=log_path or common.log,
                      history=history, continues=continues, load_report=report)
    if settings.mcp.get("servers"):
        from agent_cli.tools.mcp_bridge import attach

        attach(session)  # servers start in the background; their tools join when ready
    return session


def _interactive() -> bool:
    return sys.stdin.isatty()


class _ChatCommand(PlainCommand):
    bare_options = ("--resume",)


_PLAIN = Annotated[bool, typer.Option(
    "--plain", help="Show answers as the raw text the model wrote (no Markdown rendering, no "
    "spinner); config: render = \"plain\".")]


@app.command(cls=_ChatCommand)
@with_common
@guarded
def chat(
    common: Common,
    resume: Annotated[Optional[str], typer.Option(  # noqa: UP045
        "--resume", metavar="LOG",
        help="Continue a saved session: a path, a file name from `agent-cli log list`, or its "
        "id. Alone: pick one of this workspace's recent sessions.")] = None,
    continue_: Annotated[bool, typer.Option(
        "--continue", "--last", help="Continue the latest session of this workspace.")] = False,
    plain: _PLAIN = False,
    demo: Annotated[bool, typer.Option(
        "--demo", help="The offline demo: a scripted model (no key, no network) in a fresh "
        "copy of the demo workspace.")] = False,
    instructions: Annotated[Optional[list[Path]], typer.Option(  # noqa: UP045
        "--instructions", metavar="FILE", help=INSTRUCTIONS_HELP)] = None,
) -> None:
    """Chat with the model in a REPL; write calls ask for your yes, one by one."""
    from rich.console import Console

    from agent_cli.config import home
    from agent_cli.ui.keys import EscWatcher, PausingApprover
    from agent_cli.ui.panel import TerminalApprover
    from agent_cli.ui.render import Renderer
    from agent_cli.ui.repl import as_shown, make_prompt, prompt_text, run_repl
    from agent_cli.ui.status import TerminalView

    console = Console(highlight=False)
    if demo:
        _demo_setup(common, console)
    history, continues, notes, said = _resumed_history(common, resume, continue_, console)
    keys = EscWatcher() if _interactive() else None
    approver: Approver
    if _interactive():
        approver = TerminalApprover(console)
        if keys is not None:
            approver = PausingApprover(approver, keys)
    else:
        from agent_cli.approval import NonInteractiveApprover

        approver = NonInteractiveApprover()
    from agent_cli.signals import EndingApprover, Terminated, TerminationSignals

    signals = TerminationSignals()
    markdown = not plain and common.settings().render != "plain"
    view = TerminalView(Renderer(console), console, markdown=markdown, spinner=markdown)
    session = build_session(common, console=console, approver=EndingApprover(approver, signals),
                            sinks=[view], history=history, continues=continues)
    if _interactive():
        prompt_read = make_prompt(home() / "history", session.log.redactor,
                                  lambda: prompt_text(session))
    else:
        def prompt_read() -> str:
            line = sys.stdin.readline()
            if not line:
                raise EOFError
            return line.rstrip("\n")

    def read() -> str:
        # After SIGTERM/SIGHUP the REPL ends as on Ctrl-D, once the turn was settled.
        if signals.received is not None:
            raise EOFError
        try:
            return prompt_read()
        except Terminated:
            raise EOFError from None

    with signals:
        try:
            session.start()
            _attach_instructions(session, instructions,
                                 _terminal_confirm(console) if _interactive() else None)
            warm_up = getattr(session.provider, "warm_up", None)
            if callable(warm_up) and _interactive():
                warm_up()
            for note in notes:
                from agent_cli.events import Notice

                session.emit(Notice(message=note, kind="resume"))
            for thing in said:
                console.print(as_shown(thing))
            run_repl(session, console, read, keys=keys, view=view)
        except Terminated:
            pass  # between the steps that handle it: the session still closes below
        finally:
            view.stop()
            session.close(signals.reason)
    if signals.exit_code is not None:
        raise typer.Exit(signals.exit_code)


def _terminal_confirm(console: Console) -> Any:
    from agent_cli.ui.instructions_prompt import terminal_confirm

    return terminal_confirm(console)


def _attach_instructions(session: Session, given: list[Path] | None, confirm: Any) -> None:
    """Project instructions named in config `instructions` or with --instructions (opt-in only;
    see agent_cli/instructions.py)."""
    from agent_cli import instructions as ins

    files = ins.resolve(session.settings.instructions, given or [], session.workspace)
    if not files:
        return
    try:
        outcome = ins.load(files, confirm)
    except BaseException:
        session.close("error")
        raise
    ins.attach(session, outcome)


def _demo_setup(common: Common, console: Console) -> None:
    """--demo: the shipped demo script on the scripted provider, in a fresh workspace copy."""
    from rich.text import Text

    from agent_cli import demo
    from agent_cli.ui.safe_rich import safe

    if common.provider not in (None, "scripted") or common.script is not None:
        raise fail("--demo brings its own scripted model; leave out --provider and --script.",
                   EXIT_USAGE)
    common.provider = "scripted"
    common.script = demo.demo_script()
    if common.workspace is None:
        common.workspace = demo.fresh_workspace()
    console.print(Text("Demo: a scripted model (no key, no network), workspace ", style="dim")
                  + safe(str(common.workspace), "dim"))
    console.print(Text("Type this request: ", style="dim") + safe(demo.REQUEST, "bold"))


def _resumed_history(common: Common, resume: str | None, continue_: bool, console: Console
                     ) -> tuple[list[dict[str, Any]] | None, str | None, list[str], list[Any]]:
    """The conversation to continue, the notes to log, and what to print (recap, workspace)."""
    if resume is None and not continue_:
        return None, None, [], []
    if resume is not None and continue_:
        raise fail("Use --resume LOG or --continue, not both.", EXIT_USAGE)
    from agent_cli.commands import sessions
    from agent_cli.log import resume as rs
    from agent_cli.log import store as log_store
    from agent_cli.ui.safe_rich import safe

    settings = common.settings()
    here = common.workspace_dir()
    if continue_:
        path = log_store.latest_for(settings, here)
    elif resume == sessions.PICK:
        if not _interactive():
            raise fail("--resume without a LOG opens a picker, which needs a terminal; name the "
                       "log (`agent-cli log list` shows them) or use --continue.", EXIT_USAGE)
        path = sessions.pick(settings, here, console)
    else:
        assert resume is not None
        path = log_store.resolve(resume, settings)
    history, notes = rs.resume_notes(path)
    said: list[Any] = []
    start = log_store.first_start(path)
    use, sentence = sessions.workspace_note(start.workspace if start else None, common.workspace
                                            and here, Path.cwd())
    if use is not None and common.workspace is None:
        common.workspace = use
    if sentence:
        said.append(safe(sentence, "yellow"))
    said.append(sessions.recap(history))
    return history, str(path.resolve()), notes, said


@app.command()
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
    plain: _PLAIN = False,
    instructions: Annotated[Optional[list[Path]], typer.Option(  # noqa: UP045
        "--instructions", metavar="FILE", help=INSTRUCTIONS_HELP)] = None,
) -> None:
    """Do one task headless and exit. Exit codes: 0 done, 1 error, 2 usage, 3 turn limit,
    4 model/API error, 5 repeated tool call, 6 output limit (max_tokens), 7 done but write
    calls were denied, 8 session budget used up, 9 the model refused, 130 interrupted,
    143/129 ended by SIGTERM/SIGHUP.

    Write calls ask on the terminal; with no terminal they are denied, never approved."""
    from agent_cli.commands.headless import run_headless

    raise typer.Exit(run_headless(common, prompt, output, plain, instructions))


@app.command()
@with_options("workspace", "tools_dir", "config", "tools", "exclude_tools", "read_only")
@guarded
def tools(
    common: Common,
    trust: Annotated[Optional[list[Path]], typer.Option(  # noqa: UP045
        "--trust", metavar="FILE", help="Trust this plugin file as it is now (after you changed "
        "it); repeat for more. Shows what changed since it was last trusted.")] = None,
) -> None:
    """List the tools: name, effect class, source file, schema hash, arguments and full
    description (what the model is told). Exits 1 if a plugin failed to load."""
    from rich.console import Console
    from rich.padding import Padding
    from rich.text import Text

    from agent_cli.session import load_registry
    from agent_cli.ui.safe_rich import safe

    console = Console(highlight=False)
    if trust:
        from agent_cli.tools.trust import PluginPins

        pins = PluginPins()
        for file in trust:
            if not file.is_file():
                raise fail(f"{file} is not a file; give the path of the plugin file to trust.",
                           EXIT_USAGE)
            console.print(safe(pins.trust(file)))
        return
    from agent_cli.session import session_scope

    settings = common.settings()
    loaded, report = load_registry(settings, common.tools_dir)
    registry = session_scope(settings, loaded)
    for tool in registry:
        console.print(Text.assemble(safe(tool.name, "bold"), "  ",
                                    safe(tool.effect, "green" if tool.effect == "read" else "red"),
                                    ("  schema ", "dim"), safe(tool.schema_hash(), "dim")))
        console.print(Text("  source: ", style="dim") + safe(tool.source, "dim"))
        console.print(Text("  args: ", style="dim") + safe(_args_summary(tool.schema())))
        for example in tool.input_examples:
            console.print(Text("  example: ", style="dim")
                          + safe(json.dumps(example, ensure_ascii=False)))
        console.print(Padding(safe(tool.description), (0, 0, 0, 2)))
    for tool, why in registry.hidden():
        console.print(Text("not offered: ", style="yellow") + safe(tool.name, "bold")
                      + safe(f" ({why})", "dim"))

    from agent_cli.commands.mcp_cmd import print_tools

    mcp_ok = print_tools(console, common.settings(), common.workspace_dir())
    for problem in report.errors:
        console.print(Text("plugin error: ", style="bold red") + safe(problem))
    if report.errors or not mcp_ok:
        raise typer.Exit(EXIT_ERROR)


def _schema_type(prop: dict[str, Any]) -> str:
    if "anyOf" in prop:
        return " | ".join(_schema_type(p) for p in prop["anyOf"])
    kind = str(prop.get("type", "?"))
    if kind == "array" and isinstance(prop.get("items"), dict):
        return f"{kind}[{_schema_type(prop['items'])}]"
    return kind


CONSTRAINT_KEYS = ("enum", "const", "minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum",
                   "minLength", "maxLength", "pattern", "format", "minItems", "maxItems")
"""Schema keywords that narrow what a value may be; `agent-cli tools` shows them, since the
model is held to them and a call that breaks one is rejected."""


def _constraints(prop: dict[str, Any]) -> list[str]:
    found = [f"{key} {json.dumps(prop[key], ensure_ascii=False)}"
             for key in CONSTRAINT_KEYS if key in prop]
    for option in prop.get("anyOf", []):
        if isinstance(option, dict):
            found += _constraints(option)
    if isinstance(prop.get("items"), dict):
        found += [f"items {c}" for c in _constraints(prop["items"])]
    return found


def _args_summary(schema: dict[str, Any]) -> str:
    """`name: type` for each argument, with its constraints (enum, min/max, pattern...);
    optional ones show their default."""
    required = set(schema.get("required", []))
    parts = []
    for name, prop in schema.get("properties", {}).items():
        text = f"{name}: {_schema_type(prop)}"
        if name not in required and "default" in prop:
            text += f" = {json.dumps(prop['default'])}"
        limits = _constraints(prop)
        if limits:
            text += f" [{', '.join(limits)}]"
        parts.append(text)
    return ", ".join(parts) or "(none)"


from agent_cli.commands import (  # noqa: E402 (after the core commands)
    log_cmd,
    mcp_cmd,
    replay_cmd,
    undo_cmd,
)

log_cmd.register(app)
replay_cmd.register(app)
mcp_cmd.register(app)
undo_cmd.register(app)

from agent_cli.commands import eval_cmd  # noqa: E402

eval_cmd.register(app)

from agent_cli.commands import trust_cmd  # noqa: E402

trust_cmd.register(app)


plain_everywhere(app)  # also the sub-apps' commands: plain metavars, whole summaries


def _help_only(args: list[str]) -> bool:
    """True for the start-up path that only prints (no arguments, --help, --version)."""
    words = args[: args.index("--")] if "--" in args else args
    return not words or any(w in ("--help", "-h", "--version") for w in words)


def main() -> None:
    if not _help_only(sys.argv[1:]):
        # Before anything else runs: no process started later can read our secrets from /proc.
        from agent_cli.sandbox.selfguard import guard_self

        guard_self()
    try:
        app()
    except KeyboardInterrupt:
        sys.exit(EXIT_INTERRUPTED)
