"""What every subcommand shares: the common options (`Common`), the exit codes, the one-sentence
error path (`fail`, `guarded`), and `open_session`, which turns the options into a Session.

Imports only typer at module level: every subcommand module imports this one, and `agent-cli
--help` imports none of them.
"""

from __future__ import annotations

import functools
import inspect
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer

if TYPE_CHECKING:
    from agent_cli.approval import Approver
    from agent_cli.config import Settings
    from agent_cli.conversation import History
    from agent_cli.session import Session, Sink

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
    "log_unwritable": 10,  # (write_faults.EXIT_CODE: the session log refused a record)
}


INSTRUCTIONS_HELP = ("Project instruction file (e.g. AGENTS.md) to pass to the model as the "
                     "project's words; repeat for more. Pinned: a changed file needs "
                     "`agent-cli trust FILE` or your yes.")

PLAIN = Annotated[bool, typer.Option(
    "--plain", help="Show answers as the raw text the model wrote (no Markdown rendering, no "
    "spinner); config: render = \"plain\".")]


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
    debug: bool | None = None
    debug_file: Path | None = None

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
                                 "max_cost_usd": self.max_cost_usd,
                                 "debug_log": str(self.debug_file) if self.debug_file
                                 else "-" if self.debug else None}
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
        help="Settings file (TOML) on top of your config file (`agent-cli config path`: "
        "~/.config/agent-cli/config.toml, or $AGENT_CLI_HOME/config.toml when that is set).")],
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
    "debug": Annotated[Optional[bool], typer.Option(  # noqa: UP045
        "--debug", "-v",
        help="Print every request body and reply to stderr, redacted: the exact tool schemas "
        "and messages sent.")],
    "debug_file": Annotated[Optional[Path], typer.Option(  # noqa: UP045
        "--debug-file", metavar="FILE",
        help="Like --debug, into FILE (created 0600, appended to).")],
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


def print_error(message: str) -> None:
    """The one-sentence error line of every command (cli.common.fail prints through this)."""
    _give_way_to_output()
    from rich.console import Console
    from rich.markup import escape

    from agent_cli.safe_text import sanitize

    Console(stderr=True).print(f"[bold red]error:[/] {escape(sanitize(message))}")


def _give_way_to_output() -> None:
    """A chat's prompt drawn before the command line was parsed leaves the screen before
    anything else is printed (ui/startup.py `draw_early`)."""
    startup = sys.modules.get("agent_cli.ui.startup")
    if startup is not None:
        startup.give_way()


def fail(message: str, code: int = 1) -> typer.Exit:
    print_error(message)
    return typer.Exit(code)


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


def open_session(
    common: Common,
    *,
    approver: Approver | None = None,
    sinks: list[Sink],
    history: History | None = None,
    continues: str | None = None,
) -> Session:
    """The options as a Session (Session.create does the wiring). MCP progress lines of a
    running call go to the terminal's stderr: UI wiring, so it is done here, not in the session."""
    from agent_cli.session import Session

    session = Session.create(common.settings(), workspace=common.workspace_dir(),
                             approver=approver, sinks=sinks, tools_dirs=common.tools_dir,
                             log_path=common.log, history=history, continues=continues)
    if session.mcp is not None:
        from agent_cli.ui.mcp_progress import terminal_progress

        session.mcp.on_progress = terminal_progress()
    return session


def attach_instructions(session: Session, given: list[Path] | None,
                        confirm: Callable[..., bool] | None,
                        offer: Callable[..., bool] | None = None) -> None:
    """Project instructions named in config `instructions` or with --instructions (opt-in only;
    see agent_cli/instructions.py). `confirm` asks about a changed file (None: no terminal);
    `offer` asks once about an AGENTS.md found in the workspace (None: a notice says it is
    there)."""
    from agent_cli import instructions as ins

    files = ins.resolve(session.settings.instructions, given or [], session.workspace)
    try:
        files, found = ins.offer_found(session.workspace, files, offer)
        outcome = ins.load(files, confirm) if files else ins.Outcome([], [])
    except BaseException:
        session.close("error")
        raise
    outcome.notices[:0] = found
    ins.attach(session, outcome)
