"""The program's entry point (the `agent-cli` script and `python -m agent_cli`).

`agent-cli --help` is answered here without importing typer: the top-level help is laid out
from the same table app.py builds its group from (catalog.py), in the layout click gives it.
This is the one second path kept for speed (issue 32, docs/benchmarks.md "One way into each
command"): the goal `--help` <= 0.08 s is met only this way (typer's path: about 0.11 s, 2.4x).
tests/cli/test_cli_package.py compares the two page for page at several widths, so they cannot
drift apart. Every other command line goes to the typer app; `chat` on a terminal gets its
prompt drawn first (`_early_prompt`, ui/startup.py: the key-echo goal).
"""

from __future__ import annotations

import os
import shutil
import sys
import textwrap
from pathlib import Path

from agent_cli.cli.catalog import (
    APP_HELP,
    HELP_HELP,
    INSTALL_COMPLETION_HELP,
    SHOW_COMPLETION_HELP,
    SUBCOMMANDS,
    VERSION_HELP,
)

EXIT_INTERRUPTED = 130


def program_name() -> str:
    """What the usage line calls the program: the script's name, or `python -m PACKAGE`."""
    package = getattr(sys.modules.get("__main__"), "__package__", None)
    if package:
        stem = Path(sys.argv[0]).stem
        return f"python -m {package if stem == '__main__' else f'{package}.{stem}'}"
    return os.path.basename(sys.argv[0])


def _fill(text: str, width: int, indent: int) -> str:
    """Each paragraph (blank-line separated) wrapped to `width`, indented by `indent` plus its
    own leading spaces."""
    out = []
    for paragraph in text.split("\n\n"):
        own = len(paragraph) - len(paragraph.lstrip(" "))
        pad = " " * (indent + own)
        wrapper = textwrap.TextWrapper(width, initial_indent=pad, subsequent_indent=pad,
                                       replace_whitespace=False, break_on_hyphens=True)
        out.append(wrapper.fill(" ".join(paragraph.split("\n")).strip()))
    return "\n\n".join(out)


def _rows(heading: str, rows: list[tuple[str, str]], width: int) -> list[str]:
    """A section: the heading, then two columns, the second wrapped beside the first."""
    lines = [f"{heading}:"]
    first = max(len(name) for name, _ in rows) + 2
    for name, text in rows:
        wrapped = textwrap.wrap(text, max(width - first - 2, 10), replace_whitespace=False)
        lines.append(f"  {name}{' ' * (first - len(name))}{wrapped[0]}")
        lines.extend(" " * (first + 2) + more for more in wrapped[1:])
    return lines


def top_help(prog: str, columns: int) -> str | None:
    """The page `agent-cli --help` prints at this terminal width; None when the layout would
    need a case this short version does not handle (then typer prints it)."""
    width = max(min(columns, 80) - 2, 50)
    usage = f"Usage: {prog} [OPTIONS] COMMAND [ARGS]..."
    if len(usage) > width or max(len(n) for n in SUBCOMMANDS) > 28:
        return None
    options = [("-V, --version", VERSION_HELP), ("--install-completion", INSTALL_COMPLETION_HELP),
               ("--show-completion", SHOW_COMPLETION_HELP), ("-h, --help", HELP_HELP)]
    lines = [usage, "", _fill(APP_HELP, width, 2), ""]
    lines += [*_rows("Options", options, width), ""]
    lines += _rows("Commands", [(n, summary) for n, (_, summary) in SUBCOMMANDS.items()], width)
    return "\n".join(lines) + "\n"


def quick_answer(args: list[str]) -> str | None:
    """The whole output for `--help` alone, or None for everything else."""
    if args in (["--help"], ["-h"]):
        return top_help(program_name(), shutil.get_terminal_size().columns)
    return None


def _help_only(args: list[str]) -> bool:
    """True for the start-up path that only prints (no arguments, --help, --version)."""
    words = args[: args.index("--")] if "--" in args else args
    return not words or any(w in ("--help", "-h", "--version") for w in words)


def main() -> None:
    args = sys.argv[1:]
    page = quick_answer(args)
    if page is not None:
        sys.stdout.write(page)
        sys.stdout.flush()
        return
    if not _help_only(args):
        # Before anything else runs: no process started later can read our secrets from /proc.
        from agent_cli.sandbox.selfguard import guard_self

        guard_self()
        prompt = _early_prompt(args)
        if prompt is not None:
            sys.exit(_chat_after_early_frame(prompt))
    from agent_cli.cli.app import app

    try:
        app()
    except KeyboardInterrupt:
        sys.exit(EXIT_INTERRUPTED)


def _early_prompt(args: list[str]) -> str | None:
    """The prompt `agent-cli chat ...` will start with, when it can be drawn before typer parses
    the command line: on a terminal (in and out), not for --help, --resume or --continue (they
    print first). A guess from the words alone: the chat checks it (`startup.take_early`) and
    draws its own when it differs."""
    if args[0] != "chat" or not _on_terminal():
        return None
    for word in args[1:]:
        if word == "--":
            break
        if word in ("--help", "--resume", "--continue", "--last") or word.startswith(
                ("--help=", "--resume=")):
            return None
        if word.startswith("-") and not word.startswith("--") and "h" in word:
            return None  # -h, alone or in a cluster of short options
    from agent_cli.ui.line_editor import PROMPT

    return f"read-only {PROMPT}" if "--read-only" in args[1:] else PROMPT


def _on_terminal() -> bool:
    try:
        return sys.stdin.isatty() and sys.stdout.isatty()
    except (AttributeError, ValueError):
        return False


def _chat_after_early_frame(prompt: str) -> int:
    """Draw the chat's prompt, then let typer parse and run the command, with whatever typer
    would print itself (a usage error, "Aborted!") printed here instead, once the frame has given
    way. The exit code is typer's."""
    from agent_cli.ui import startup

    startup.draw_early(prompt)
    try:
        from agent_cli.cli.app import app

        result = app(standalone_mode=False)
    except KeyboardInterrupt:
        startup.give_way()
        return EXIT_INTERRUPTED
    except BaseException as e:
        startup.give_way()
        show = getattr(e, "show", None)
        if callable(show) and isinstance(getattr(e, "exit_code", None), int):
            show()  # a usage error (click's ClickException), as typer shows it
            return int(e.exit_code)  # type: ignore[attr-defined]
        if type(e).__name__ == "Abort":
            sys.stderr.write("Aborted!\n")
            return 1
        raise
    startup.give_way()  # (the chat took it, unless it never started)
    return result if isinstance(result, int) else 0
