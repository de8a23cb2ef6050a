"""The command line (the top layer): `app` (app.py) knows the subcommands by name and loads each
one's module only when it runs; common.py holds what they share. Nothing below imports this
package."""
