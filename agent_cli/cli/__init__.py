"""The command line (the top layer). main.py is the entry point (it answers `--help` and
`--version` itself, without typer); app.py is the typer app, which knows the subcommands by name
(catalog.py) and loads each one's module only when it runs; common.py holds what they share.
Nothing below imports this package."""
