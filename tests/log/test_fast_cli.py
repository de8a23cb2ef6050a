"""`log verify LOG` and `replay LOG --output jsonl` answered without typer (cli/fast_log.py) say and
exit exactly as typer's path does, on every kind of input; and they are really answered there.

Each case runs twice as a real process: the program (`python -m agent_cli ...`, which asks
fast_log first) and typer's app called directly (the path the program took before). Both get
the same AGENT_CLI_HOME, folder and arguments; stdout, stderr and the exit code must match.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.scripts import run_session, text, tool_use

TYPER_PATH = ("import sys; from agent_cli.cli.app import app; "
              "sys.argv[0] = 'agent-cli'; app()")
PROBE = ("import sys; sys.argv = ['agent-cli', *sys.argv[1:]]\n"
         "from agent_cli.cli.main import main\n"
         "try:\n    main()\nexcept SystemExit:\n    pass\n"
         "sys.stderr.write('MODULES ' + ' '.join(sorted(m for m in ('typer', 'click', "
         "'agent_cli.events', 'agent_cli.config', 'pydantic.main') if m in sys.modules)) + '\\n')")


def run(args: list[str], home: Path, cwd: Path, *, typer_path: bool,
        env: dict[str, str] | None = None) -> tuple[int, str, str]:
    argv = ([sys.executable, "-c", TYPER_PATH] if typer_path
            else [sys.executable, "-m", "agent_cli"]) + args
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("AGENT_CLI_")}
    full_env.update(AGENT_CLI_HOME=str(home), PYTHONPATH=str(Path(__file__).parents[2]),
                    **(env or {}))
    done = subprocess.run(argv, cwd=cwd, env=full_env, capture_output=True, text=True,
                          timeout=120)
    return done.returncode, done.stdout, done.stderr


def both(args: list[str], home: Path, cwd: Path,
         env: dict[str, str] | None = None) -> tuple[int, str, str]:
    fast = run(args, home, cwd, typer_path=False, env=env)
    slow = run(args, home, cwd, typer_path=True, env=env)
    assert fast == slow, (args, fast, slow)
    return fast


@pytest.fixture
def logs(workspace: Path, tmp_path: Path) -> dict[str, Path]:
    """A signed session log, and rewrites of it: edited, torn, unsigned, with a bad line."""
    from tests.scripts import PLUGIN

    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "echo_write.py").write_text(PLUGIN, encoding="utf-8")
    good = tmp_path / "good.jsonl"
    run_session(workspace, good, prompt="caf\u00e9 \u2028 \x1b[31m", tools_dir=tools, replies=[
        tool_use("toolu_1", "echo_write", {"text": "a"}, "One."), text("Done.")],
        answers=["y"])
    lines = good.read_bytes().split(b"\n")[:-1]
    out = {"good": good}
    edited = lines[:]
    edited[1] = edited[1].replace(b'"v":1,', b'"v": 1,', 1)
    out["edited"] = tmp_path / "edited.jsonl"
    out["torn"] = tmp_path / "torn.jsonl"
    out["dropped"] = tmp_path / "dropped.jsonl"
    out["junk"] = tmp_path / "junk.jsonl"
    out["edited"].write_bytes(b"".join(x + b"\n" for x in edited))
    out["torn"].write_bytes(b"".join(x + b"\n" for x in lines) + lines[-1][:20])
    out["dropped"].write_bytes(b"".join(x + b"\n" for x in lines[:2] + lines[3:]))
    out["junk"].write_bytes(b"".join(x + b"\n" for x in [*lines[:2], b"not json", *lines[2:]]))
    return out


CASES = ["good", "edited", "torn", "dropped", "junk"]


@pytest.mark.parametrize("case", CASES)
def test_log_verify_says_and_exits_as_typers_path(case: str, logs: dict[str, Path],
                                                  tmp_path: Path) -> None:
    code, out, _err = both(["log", "verify", str(logs[case])], tmp_path / "home", tmp_path)
    assert code == (0 if case in ("good", "torn") else 1)
    assert (out.startswith("OK ") if code == 0 else out.startswith("FAIL "))


@pytest.mark.parametrize("case", CASES)
def test_replay_jsonl_says_and_exits_as_typers_path(case: str, logs: dict[str, Path],
                                                    tmp_path: Path) -> None:
    for form in (["replay", str(logs[case]), "--output", "jsonl"],
                 ["replay", "-o", "jsonl", str(logs[case])],
                 ["replay", str(logs[case]), "--output=jsonl"]):
        code, out, _err = both(form, tmp_path / "home", tmp_path)
        assert code == 0 and out.count("\n") >= 3


def test_the_same_with_the_key_that_signed_it_and_without_any(logs: dict[str, Path],
                                                               tmp_path: Path) -> None:
    home = tmp_path / "home"  # (run_session's home: the conftest's AGENT_CLI_HOME)
    signed_home = Path(os.environ["AGENT_CLI_HOME"])
    assert (signed_home / "log.key").is_file()
    for h in (signed_home, home):
        code, out, _ = both(["log", "verify", str(logs["good"])], h, tmp_path)
        assert code == 0
        assert ("Signed with your log key" in out) is (h == signed_home)
        both(["replay", str(logs["junk"]), "--output", "jsonl"], h, tmp_path)


def test_errors_are_the_same_sentence_and_code(logs: dict[str, Path], tmp_path: Path) -> None:
    home = tmp_path / "home"
    fifo = tmp_path / "fifo.jsonl"
    os.mkfifo(fifo)
    for target in ("missing.jsonl", str(tmp_path), str(fifo), "abc123"):
        for args in (["log", "verify", target], ["replay", target, "--output", "jsonl"]):
            code, _out, err = both(args, home, tmp_path)
            assert code == 2 and "error:" in err
    # a settings file or variable that does not validate fails first, on both paths
    home.mkdir(exist_ok=True)
    (home / "config.toml").write_text("max_turns = 'many'\n", encoding="utf-8")
    for args in (["log", "verify", str(logs["good"])],
                 ["replay", str(logs["good"]), "--output", "jsonl"]):
        code, _out, err = both(args, home, tmp_path)
        assert code != 0 and "max_turns" in err
    (home / "config.toml").write_text("max_turns = 3\n", encoding="utf-8")
    assert both(["log", "verify", str(logs["good"])], home, tmp_path)[0] == 0
    (home / "config.toml").unlink()
    code, _out, err = both(["log", "verify", str(logs["good"])], home, tmp_path,
                           env={"AGENT_CLI_MAX_TURNS": "x"})
    assert code != 0 and "max_turns" in err


def test_a_closed_pipe_ends_replay_quietly_as_typers_path(logs: dict[str, Path],
                                                          tmp_path: Path) -> None:
    big = tmp_path / "big.jsonl"
    lines = logs["good"].read_bytes()
    big.write_bytes(lines)
    results = []
    for typer_path in (False, True):
        argv = ([sys.executable, "-c", TYPER_PATH] if typer_path
                else [sys.executable, "-m", "agent_cli"]) + ["replay", str(big), "-o", "jsonl"]
        env = dict(os.environ, PYTHONPATH=str(Path(__file__).parents[2]))
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        assert proc.stdout is not None and proc.stderr is not None
        proc.stdout.close()  # the reader went away before the first byte
        err = proc.stderr.read()
        results.append((proc.wait(timeout=120), err))
    assert results[0] == results[1]


@pytest.mark.parametrize("args", [["log", "verify", "{log}"],
                                  ["replay", "{log}", "--output", "jsonl"]])
def test_they_are_answered_without_typer_settings_or_event_models(
        args: list[str], logs: dict[str, Path], tmp_path: Path) -> None:
    argv = [a.replace("{log}", str(logs["good"])) for a in args]
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).parents[2]))
    done = subprocess.run([sys.executable, "-c", PROBE, *argv], env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.stderr.strip().splitlines()[-1] == "MODULES", done.stderr
    if args[0] == "replay":
        assert [json.loads(line)["seq"] for line in done.stdout.splitlines()][:2] == [1, 2]


def test_other_command_lines_still_go_to_typer(logs: dict[str, Path], tmp_path: Path) -> None:
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).parents[2]))
    for argv in (["log", "verify", "--config", str(tmp_path / "none.toml"), str(logs["good"])],
                 ["replay", str(logs["good"])], ["replay", str(logs["good"]), "-o", "html"]):
        done = subprocess.run([sys.executable, "-c", PROBE, *argv], env=env,
                              capture_output=True, text=True, timeout=120)
        assert "typer" in done.stderr.strip().splitlines()[-1], (argv, done.stderr)
