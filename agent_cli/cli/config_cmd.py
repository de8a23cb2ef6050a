"""`agent-cli config example` and `agent-cli config path`: the example settings file that ships
with the program (every setting, commented, with its default), and where yours is read from.

Errors about settings say "See config.example.toml"; an installed user has no checkout to look
in, so the file ships inside the package (agent_cli/data/config.example.toml, the repository's
own file) and this prints it.
"""

import sys

import typer


def example_text() -> str:
    """The shipped config.example.toml."""
    from importlib.resources import files

    return files("agent_cli").joinpath("data", "config.example.toml").read_text(
        encoding="utf-8")


def register(app: typer.Typer) -> None:
    from agent_cli.cli.help import App

    config_app = App(help="Print the example config file, or where your config file is read "
                     "from.", no_args_is_help=True, add_completion=False, rich_markup_mode=None)

    @config_app.command("example")
    def example_cmd() -> None:
        """Print config.example.toml: every setting, commented, with its default. Save it as
        your config file (`agent-cli config path` says where) and uncomment what you change."""
        sys.stdout.write(example_text())
        sys.stdout.flush()

    @config_app.command("path")
    def path_cmd() -> None:
        """Print where your config file is read from (it need not exist)."""
        from agent_cli.locations import locations

        typer.echo(str(locations().config_file))

    app.add_typer(config_app, name="config")
