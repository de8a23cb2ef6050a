"""The command line: parse, build a Session, hand over. Thin on purpose.

`app` knows each subcommand by name, module and one-line summary only: a subcommand's module
(and whatever it imports) is loaded when that subcommand runs or prints its own help, so
`agent-cli --help` imports typer and this file, nothing else of agent-cli. Every module of this
package imports downwards only (common, help), never this one.
"""

from __future__ import annotations

import importlib
import sys
from typing import Annotated, Any

import typer

from agent_cli.cli.common import EXIT_INTERRUPTED
from agent_cli.cli.help import App, PlainGroup, plain_everywhere

SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "chat": ("agent_cli.cli.chat",
             "Chat with the model in a REPL; write calls ask for your yes, one by one."),
    "run": ("agent_cli.cli.run", "Do one task headless and exit."),
    "tools": ("agent_cli.cli.tools", "List the tools: name, effect class, source file, schema "
              "hash, arguments and full description (what the model is told)."),
    "replay": ("agent_cli.cli.replay", "Show a saved session again: user turns, model text, "
               "each approval panel with the decision taken, and the results."),
    "undo": ("agent_cli.cli.undo", "Restore what approved calls changed: shows the diff it "
             "would apply and asks [y/N]."),
    "eval": ("agent_cli.cli.eval", "Run the tasks of a task file, each in a fresh copy of its "
             "workspace, through the same loop as a chat, with the task's answers for "
             "approvals."),
    "trust": ("agent_cli.cli.trust", "Trust plugin, skill or project instruction files as they "
              "are now (after you changed them); shows what changed since each was last "
              "trusted."),
    "log": ("agent_cli.cli.log", "Check and list session logs."),
    "mcp": ("agent_cli.cli.mcp", "MCP servers: their state, tools, and changed tool "
            "definitions."),
}
"""name -> (module with a `register(app)` function, the summary `agent-cli --help` shows).
The summary is the command's own first sentence; tests/test_cli_package.py checks they agree."""


def load_subcommand(name: str) -> Any:
    """The click command (or group) of one subcommand, built from its module's `register`."""
    module = importlib.import_module(SUBCOMMANDS[name][0])
    holder = App(rich_markup_mode=None)
    module.register(holder)
    plain_everywhere(holder)
    return typer.main.get_group(holder).commands[name]


class LazyGroup(PlainGroup):
    """The top-level group: subcommands are listed from SUBCOMMANDS and loaded when used."""

    def list_commands(self, ctx: Any) -> list[str]:
        return [*super().list_commands(ctx), *(n for n in SUBCOMMANDS if n not in self.commands)]

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        if cmd_name not in self.commands and cmd_name in SUBCOMMANDS:
            self.commands[cmd_name] = load_subcommand(cmd_name)
        return super().get_command(ctx, cmd_name)

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        """The summaries from the table: printing the list loads no subcommand."""
        rows = [(name, SUBCOMMANDS[name][1]) for name in self.list_commands(ctx)]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


app = App(
    name="agent-cli",
    cls=LazyGroup,
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
