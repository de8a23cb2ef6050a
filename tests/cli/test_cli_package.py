"""The command-line package (issue 14): subcommands load only when used, the session is composed
in one place (Session.create) with the loop's request hooks given at construction, and
ui/terminal.py decides once whether a person can be asked."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import click
import pytest
import typer
from rich.console import Console

from agent_cli.approval import NonInteractiveApprover, ScriptedApprover
from agent_cli.cli.app import app, load_subcommand
from agent_cli.cli.catalog import SUBCOMMANDS
from agent_cli.config import Settings
from agent_cli.loop import Limits, Loop
from agent_cli.providers.base import ModelRequest
from agent_cli.providers.scripted import FunctionProvider
from agent_cli.session import Session
from agent_cli.tools.base import ToolContext
from agent_cli.tools.registry import Registry
from agent_cli.ui.panel import TerminalApprover
from agent_cli.ui.terminal import Terminal

REPO = Path(__file__).resolve().parents[2]


def done(text: str = "Done.") -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "stop_reason": "end_turn"}


def loaded_after(code: str) -> list[str]:
    """The modules a fresh interpreter holds after running `code`."""
    probe = (f"import sys\n{code}\n"
             "import json; print(json.dumps(sorted(sys.modules)))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         timeout=120, cwd=REPO, check=False)
    return list(json.loads(out.stdout.strip().splitlines()[-1]))


# ------------------------------------------------------------------------ lazy subcommands


def test_help_loads_no_subcommand_module() -> None:
    code = ("sys.argv = ['agent-cli', '--help']\nfrom agent_cli.cli.main import main\n"
            "try:\n    main()\nexcept SystemExit:\n    pass")
    mods = loaded_after(code)
    assert "agent_cli.cli.main" in mods
    assert not [m for m in mods if m.split(".")[-1] in SUBCOMMANDS and m.startswith(
        "agent_cli.cli.")], mods
    assert "agent_cli.session" not in mods and "agent_cli.config" not in mods
    assert "typer" not in mods and "agent_cli.cli.app" not in mods  # the quick path


def typer_page(args: list[str], prog: str, columns: int) -> tuple[int, str]:
    """What the typer app itself prints (no quick path), in a fresh process at this width."""
    code = ("import sys; from agent_cli.cli.app import app; "
            f"app(args={args!r}, prog_name={prog!r})")
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"} | {"COLUMNS": str(columns)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, cwd=REPO, env=env, check=False)
    return out.returncode, out.stdout


@pytest.mark.parametrize("columns", [40, 50, 79, 80, 100, 200])
@pytest.mark.parametrize("prog", ["agent-cli", "python -m agent_cli"])
def test_the_quick_help_is_the_page_typer_prints(columns: int, prog: str) -> None:
    """Page for page; where the usage line would have to wrap (a long program name in a narrow
    terminal) the quick path declines and typer prints the page."""
    from agent_cli.cli.main import top_help

    page = top_help(prog, columns)
    if prog == "agent-cli" or columns >= 79:
        assert page is not None
    if page is not None:
        assert typer_page(["--help"], prog, columns) == (0, page)
    else:
        assert len(f"Usage: {prog} [OPTIONS] COMMAND [ARGS]...") > max(min(columns, 80) - 2, 50)


@pytest.mark.parametrize("argv", [["-m", "agent_cli"], ["-c", "import sys; sys.argv[0] = "
                                  "'agent-cli'; from agent_cli.cli.main import main; main()"]])
@pytest.mark.parametrize("flag", ["--help", "-h", "--version", "-V"])
def test_the_program_prints_the_typer_page(argv: list[str], flag: str) -> None:
    prog = "python -m agent_cli" if argv[0] == "-m" else "agent-cli"
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"} | {"COLUMNS": "80"}
    shown = subprocess.run([sys.executable, *argv, flag], capture_output=True, text=True,
                           timeout=120, cwd=REPO, env=env, check=False)
    assert (shown.returncode, shown.stdout) == typer_page([flag], prog, 80)
    assert shown.stderr == ""


def test_a_subcommand_loads_only_its_own_module() -> None:
    code = ("sys.argv = ['agent-cli', 'trust', '--help']\nfrom agent_cli.cli.main import main\n"
            "try:\n    main()\nexcept SystemExit:\n    pass")
    mods = loaded_after(code)
    assert "agent_cli.cli.trust" in mods
    assert "agent_cli.cli.chat" not in mods and "agent_cli.cli.mcp" not in mods


@pytest.mark.parametrize("name", list(SUBCOMMANDS))
def test_the_listed_summary_is_the_commands_own(name: str) -> None:
    """--help prints the table's summaries without loading the commands: they must be the
    commands' own first sentences, or the help would drift from the docstrings."""
    command = load_subcommand(name)
    assert command.get_short_help_str(limit=10_000) == SUBCOMMANDS[name][1]


def test_every_subcommand_is_listed_in_order() -> None:
    group = typer.main.get_command(app)
    ctx = click.Context(group)
    assert group.list_commands(ctx) == list(SUBCOMMANDS)
    assert all(group.get_command(ctx, n) is not None for n in SUBCOMMANDS)


def test_the_eval_runner_does_not_import_the_command_line() -> None:
    mods = loaded_after("import agent_cli.eval.runner")
    assert not [m for m in mods if m.startswith("agent_cli.cli")], mods


# ------------------------------------------------------------------------ request hooks


def test_loop_hooks_shape_each_request_in_order(tmp_path: Path) -> None:
    seen: list[ModelRequest] = []

    def model(request: ModelRequest) -> dict[str, Any]:
        seen.append(request)
        return done()

    def first(messages: list[dict[str, Any]], system: str | None
              ) -> tuple[list[dict[str, Any]], str | None]:
        return [*messages, {"role": "user", "content": "from first"}], f"{system}+first"

    def second(messages: list[dict[str, Any]], system: str | None
               ) -> tuple[list[dict[str, Any]], str | None]:
        return messages[-1:], f"{system}+second"

    history: list[dict[str, Any]] = []
    loop = Loop(FunctionProvider(model), Registry(), _gate(), lambda e: None,
                workspace=tmp_path, system="base", hooks=[first, second])
    assert loop.run_turn(history, "hello").reason == "end_turn"
    assert seen[0].system == "base+first+second"
    assert seen[0].messages == [{"role": "user", "content": "from first"}]
    assert loop.system == "base"  # the hooks shape what is sent, not the loop
    assert [m["role"] for m in history] == ["user", "assistant"]


def _gate() -> Any:
    from agent_cli.approval import Gate

    return Gate(ScriptedApprover([]), [])


def test_loop_has_no_mutable_prepare(tmp_path: Path) -> None:
    loop = Loop(FunctionProvider(lambda r: done()), Registry(), _gate(), lambda e: None,
                workspace=tmp_path)
    assert not hasattr(loop, "prepare") and loop.hooks == ()


def test_session_sends_instructions_through_its_hook(tmp_path: Path) -> None:
    from agent_cli.instructions import Instruction

    seen: list[ModelRequest] = []

    def model(request: ModelRequest) -> dict[str, Any]:
        seen.append(request)
        return done()

    session = Session(Settings(provider="scripted"), workspace=tmp_path,
                      provider=FunctionProvider(model), registry=Registry(),
                      approver=ScriptedApprover([]), log_path=tmp_path / "s.jsonl")
    session.start()
    session.instructions = [Instruction(tmp_path / "AGENTS.md", "AGENTS.md", "use tabs", "0" * 64)]
    session.send("hi")
    session.close()
    first = seen[0].messages[0]["content"]
    assert "use tabs" in json.dumps(first) and "hi" in json.dumps(first)
    assert "use tabs" not in json.dumps(session.history)  # sent, never written into the history


# ------------------------------------------------------------------------ Session.create


def test_session_create_builds_from_settings(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps([done("created")]))
    settings = Settings(provider="scripted", script=str(script), read_only=True)
    session = Session.create(settings, workspace=tmp_path, approver=ScriptedApprover([]),
                             log_path=tmp_path / "s.jsonl")
    try:
        assert session.read_only  # the settings' scope is applied
        assert session.registry.names() and all(
            t.effect == "read" for t in session.registry)
        assert session.mcp is None  # none configured
        session.start()
        assert session.send("go").text == "created"
    finally:
        session.close()


def test_limit_defaults_are_the_settings_defaults() -> None:
    s = Settings()
    limits = Limits()
    for name in ("max_turns", "max_tokens", "tool_timeout_s", "output_cap", "repeat_failures",
                 "max_read_bytes", "max_panels_after_denial"):
        assert getattr(limits, name) == getattr(s, name), name
    ctx = ToolContext(workspace=Path("."), timeout_s=1.0, output_cap=1000)
    assert ctx.max_read_bytes == s.max_read_bytes


# ------------------------------------------------------------------------ the terminal


def test_no_terminal_means_no_one_to_ask() -> None:
    term = Terminal(interactive=False)
    console = Console(file=io.StringIO())
    assert isinstance(term.approver(console), NonInteractiveApprover)
    assert term.confirm(console) is None and term.keys() is None


def test_a_terminal_gets_the_panel() -> None:
    term = Terminal(interactive=True)
    console = Console(file=io.StringIO())
    assert isinstance(term.approver(console), TerminalApprover)
    assert term.confirm(console) is not None


def test_detect_reads_stdin() -> None:
    code = "from agent_cli.ui.terminal import Terminal; print(Terminal.detect().interactive)"
    out = subprocess.run([sys.executable, "-c", code], stdin=subprocess.PIPE, text=True,
                         capture_output=True, timeout=120, cwd=REPO, check=True)
    assert out.stdout.strip() == "False"
