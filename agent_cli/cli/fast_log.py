"""`agent-cli log verify LOG` and `agent-cli replay LOG --output jsonl`, also without typer.

These two read a whole log and are run by scripts on long ones, so their start-up counts: typer
(and the pydantic it builds its parameters with), the settings and the event models were most of
the time of a short log's `log verify`. The command bodies live here, and both ways in run them:
the typer commands (cli/log.py, cli/replay.py) after parsing, and `quick_command`, which
main.py asks first. It answers only the plain forms of those two command lines, where parsing
is a comparison of words, and only when what typer's path would do first cannot fail: the
settings it loads would be the defaults (no config file, no AGENT_CLI_* variable; otherwise
they are loaded here the same way, errors and all), the LOG is an existing file (a name or id
to look up goes to typer's path), the current folder is a folder. Anything else returns None and
typer's path runs as before. tests/log/test_fast_cli.py runs both ways on the same inputs and
compares output and exit codes.
"""

from __future__ import annotations

import errno
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console
    from rich.text import Text

    from agent_cli.log.verify import VerifyResult

EXIT_OK = 0
EXIT_FAULT = 1


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


# -- log verify --------------------------------------------------------------------------------

def verify_report(file: Path) -> int:
    """`log verify` of one file: warnings on stderr, the verdict and the trust line on stdout;
    returns the exit code (0 intact, 1 a fault). A file that cannot be read raises LogError
    with exit code 2."""
    from agent_cli.errors import LogError
    from agent_cli.log.keys import log_key
    from agent_cli.log.verify import verify

    try:
        key = log_key(create=False)
        result = verify(file, key=key)
    except LogError as e:
        e.exit_code = 2
        raise
    # (Rich after the check: on a long log its import overlaps the second half's check)
    from rich.console import Console
    from rich.text import Text

    from agent_cli.log.trust import judge
    from agent_cli.ui.safe_rich import safe

    out = Console(highlight=False)
    err = Console(stderr=True, highlight=False)
    for warning in result.warnings:
        err.print(Text("warning: ", style="yellow") + safe(warning), soft_wrap=True)
    if result.fault is not None:
        out.print(Text("FAIL ", style="bold red") + safe(f"{file}: {result.fault}"),
                  soft_wrap=True)
        return EXIT_FAULT
    out.print(Text("OK ", style="bold green")
              + safe(f"{file}: {result.count} events, hash chain intact "
                     f"(head {result.head})"), soft_wrap=True)
    trust = judge(result) if key is not None else None
    if trust is not None and trust.trusted:
        out.print(safe("Signed with your log key throughout: --reuse-approvals and undo "
                       "may act on it.", "green"), soft_wrap=True)
    else:
        out.print(safe("Not trusted for --reuse-approvals or undo: " + (
            trust.reason if trust is not None else "there is no log key on this machine."),
            "yellow"), soft_wrap=True)
    return EXIT_OK


# -- replay --output jsonl ---------------------------------------------------------------------

class LazyConsole:
    """A stderr Console made when first printed to: a replay that has nothing to warn about
    does not import Rich for it."""

    def __init__(self) -> None:
        self._console: Console | None = None

    def print(self, text: Text, *, soft_wrap: bool | None = None) -> None:
        if self._console is None:
            from rich.console import Console

            self._console = Console(stderr=True, highlight=False)
        self._console.print(text, soft_wrap=soft_wrap)


def bad_line_reporter(err: Console | LazyConsole) -> Callable[[str], None]:
    """What a replay says about a line it leaves out."""

    def on_bad(message: str) -> None:
        from agent_cli.ui.safe_rich import safe

        err.print(safe(f"warning: {message}; skipped", "yellow"))

    return on_bad


def warn_if_chain_fails(log_file: Path, err: Console | LazyConsole,
                        result: VerifyResult | None = None) -> None:
    """A replay of a log whose chain does not verify starts with a warning: what follows may
    have been edited."""
    from agent_cli.errors import LogError
    from agent_cli.log.verify import verify
    from agent_cli.ui.safe_rich import safe

    if result is None:
        try:
            result = verify(log_file)
        except LogError:
            return
    if result.fault is not None:
        err.print(safe(f"warning: the hash chain of this log does not verify "
                       f"({result.fault}); what follows may have been edited. Run "
                       f"`agent-cli log verify {log_file}` for details.", "bold yellow"),
                  soft_wrap=True)


def replay_jsonl(log_file: Path, err: Console | LazyConsole,
                 on_bad: Callable[[str], None]) -> int:
    """The whole log as JSONL, verified and printed in one pass (log.jsonl.jsonl_in_one_pass).
    The output waits in a spool (memory, then a temporary file: flat) until the chain is known,
    so a log that does not verify still gets its warning before any record; that log is then
    shown the ordinary way."""
    import shutil
    import tempfile

    from agent_cli.errors import LogError
    from agent_cli.log.jsonl import jsonl_in_one_pass

    with tempfile.SpooledTemporaryFile(max_size=4 << 20) as spool:
        try:
            result, bad = jsonl_in_one_pass(log_file, spool.write)
        except LogError:
            result = None
        if result is not None and result.fault is None:
            for message in bad:
                on_bad(message)
            spool.seek(0)
            sys.stdout.flush()
            shutil.copyfileobj(spool, sys.stdout.buffer, 1 << 20)
            sys.stdout.flush()
            return EXIT_OK
    from agent_cli.log import show as rp

    warn_if_chain_fails(log_file, err, result)
    rp.show(log_file, rp.JsonlView(sys.stdout.write), on_bad=on_bad)
    sys.stdout.flush()
    return EXIT_OK


# -- the typer-free way in -----------------------------------------------------------------------

def _log_word(word: str) -> bool:
    """A LOG argument click would take as the argument itself (not an option, not empty)."""
    return bool(word) and not word.startswith("-")


def parse(args: list[str]) -> tuple[str, str] | None:
    """("verify" | "jsonl", LOG) for the plain command lines answered here, else None."""
    match args:
        case ["log", "verify", log] if _log_word(log):
            return "verify", log
        case ["replay", log, "--output" | "-o", "jsonl"] if _log_word(log):
            return "jsonl", log
        case ["replay", "--output" | "-o", "jsonl", log] if _log_word(log):
            return "jsonl", log
        case ["replay", log, "--output=jsonl"] | ["replay", "--output=jsonl", log] \
                if _log_word(log):
            return "jsonl", log
    return None


def _load_settings_as_typer_would() -> None:
    """What the typer commands do first (`Common.settings()`, with no flag given), so a bad
    config file or variable fails here exactly as there. When no config file exists and no
    variable feeding the settings is set, the result is the defaults, which cannot fail and
    which these two commands do not read for a LOG given as a path: then nothing is loaded."""
    from agent_cli.locations import ENV_MAP, user_config_file

    if not user_config_file().is_file() and not any(os.environ.get(v) for v in ENV_MAP):
        return
    from agent_cli.config import load_settings

    load_settings(None, {})


class _PacifiedFlush:
    """A stream whose flush ignores a closed pipe (click's PacifyFlushWrapper, which typer's
    path installs on EPIPE): `replay ... | head` ends quietly, exit 1, as it does there."""

    def __init__(self, wrapped: Any) -> None:
        self.wrapped = wrapped

    def flush(self) -> None:
        try:
            self.wrapped.flush()
        except OSError as e:
            if e.errno != errno.EPIPE:
                raise

    def __getattr__(self, name: str) -> Any:
        return getattr(self.wrapped, name)


def quick_command(args: list[str]) -> int | None:
    """The exit code of `log verify LOG` or `replay LOG --output jsonl`, run here; None when
    this command line is not one of those plain forms or typer's path must decide it."""
    parsed = parse(args)
    if parsed is None:
        return None
    what, log_arg = parsed
    from agent_cli.errors import AgentError

    try:
        _load_settings_as_typer_would()
        if what == "jsonl":
            try:  # (Common.workspace_dir, which the replay command calls before it reads LOG)
                workspace = Path.cwd().expanduser()
                if not workspace.is_dir():
                    return None
                workspace.resolve()
            except (OSError, RuntimeError):
                return None
        given = Path(log_arg).expanduser()  # (log.store.resolve: an existing path is the file)
        if not given.is_file():
            return None
        if what == "verify":
            return verify_report(given)
        err = LazyConsole()
        return replay_jsonl(given, err, bad_line_reporter(err))
    except AgentError as e:
        print_error(str(e))
        return e.exit_code
    except OSError as e:
        if e.errno != errno.EPIPE:
            raise
        sys.stdout = _PacifiedFlush(sys.stdout)
        sys.stderr = _PacifiedFlush(sys.stderr)
        return 1
