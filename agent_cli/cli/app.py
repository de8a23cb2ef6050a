"""The command line: parse, build a Session, hand over. Thin on purpose.

`app` knows each subcommand by name, module and one-line summary only (catalog.SUBCOMMANDS): a
subcommand's module (and whatever it imports) is loaded when that subcommand runs or prints its
own help. Only main.py imports this module (lazily, after answering `--help` and `--version`
itself, without typer); the subcommand modules import common.py and help.py, never this one.
"""

from __future__ import annotations

import importlib
from typing import Annotated, Any

import typer

from agent_cli.cli.catalog import APP_HELP, SUBCOMMANDS, VERSION_HELP
from agent_cli.cli.help import App, PlainGroup, plain_everywhere


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
    help=APP_HELP,
    no_args_is_help=True,
    add_completion=True,
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
        help=VERSION_HELP)] = False,
) -> None:
    """A terminal agent: the model proposes tool calls, you approve each one that has effects."""
