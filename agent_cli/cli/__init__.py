"""Subcommands beyond the core ones, each in its own module with a `register(app)` function so
cli.py stays thin and imports nothing heavy at start-up."""
