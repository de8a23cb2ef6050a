"""`log verify LOG` and `replay LOG --output jsonl` as a script runs them (`python -m agent_cli`):
the verdict, the trust line and the exit code on every kind of log, one-sentence errors with exit
2, a config that does not validate failing first, and a closed pipe ending quietly. (These two
commands had a second, typer-free way in, kept equal to this one by a differential test; it was
folded back, issue 32: docs/benchmarks.md "One way into each command".)
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.scripts import run_session, text, tool_use


def run(args: list[str], home: Path, cwd: Path,
        env: dict[str, str] | None = None) -> tuple[int, str, str]:
    argv = [sys.executable, "-m", "agent_cli", *args]
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("AGENT_CLI_")}
    full_env.update(AGENT_CLI_HOME=str(home), PYTHONPATH=str(Path(__file__).parents[2]),
                    **(env or {}))
    done = subprocess.run(argv, cwd=cwd, env=full_env, capture_output=True, text=True,
                          timeout=120)
    return done.returncode, done.stdout, done.stderr


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
def test_log_verify_says_and_exits_by_what_it_found(case: str, logs: dict[str, Path],
                                                  tmp_path: Path) -> None:
    code, out, _err = run(["log", "verify", str(logs[case])], tmp_path / "home", tmp_path)
    assert code == (0 if case in ("good", "torn") else 1)
    assert (out.startswith("OK ") if code == 0 else out.startswith("FAIL "))


@pytest.mark.parametrize("case", CASES)
def test_replay_jsonl_prints_every_form_of_the_command_line(case: str, logs: dict[str, Path],
                                                    tmp_path: Path) -> None:
    for form in (["replay", str(logs[case]), "--output", "jsonl"],
                 ["replay", "-o", "jsonl", str(logs[case])],
                 ["replay", str(logs[case]), "--output=jsonl"]):
        code, out, _err = run(form, tmp_path / "home", tmp_path)
        assert code == 0 and out.count("\n") >= 3


def test_the_same_with_the_key_that_signed_it_and_without_any(logs: dict[str, Path],
                                                               tmp_path: Path) -> None:
    home = tmp_path / "home"  # (run_session's home: the conftest's AGENT_CLI_HOME)
    signed_home = Path(os.environ["AGENT_CLI_HOME"])
    assert (signed_home / "log.key").is_file()
    for h in (signed_home, home):
        code, out, _ = run(["log", "verify", str(logs["good"])], h, tmp_path)
        assert code == 0
        assert ("Signed with your log key" in out) is (h == signed_home)
        run(["replay", str(logs["junk"]), "--output", "jsonl"], h, tmp_path)


def test_errors_are_one_sentence_and_code_2(logs: dict[str, Path], tmp_path: Path) -> None:
    home = tmp_path / "home"
    fifo = tmp_path / "fifo.jsonl"
    os.mkfifo(fifo)
    for target in ("missing.jsonl", str(tmp_path), str(fifo), "abc123"):
        for args in (["log", "verify", target], ["replay", target, "--output", "jsonl"]):
            code, _out, err = run(args, home, tmp_path)
            assert code == 2 and "error:" in err
    # a settings file or variable that does not validate fails first, on both paths
    home.mkdir(exist_ok=True)
    (home / "config.toml").write_text("max_turns = 'many'\n", encoding="utf-8")
    for args in (["log", "verify", str(logs["good"])],
                 ["replay", str(logs["good"]), "--output", "jsonl"]):
        code, _out, err = run(args, home, tmp_path)
        assert code != 0 and "max_turns" in err
    (home / "config.toml").write_text("max_turns = 3\n", encoding="utf-8")
    assert run(["log", "verify", str(logs["good"])], home, tmp_path)[0] == 0
    (home / "config.toml").unlink()
    code, _out, err = run(["log", "verify", str(logs["good"])], home, tmp_path,
                           env={"AGENT_CLI_MAX_TURNS": "x"})
    assert code != 0 and "max_turns" in err


def test_a_closed_pipe_ends_replay_quietly(logs: dict[str, Path], tmp_path: Path) -> None:
    """`replay ... | head`: the reader went away before the first byte; no traceback."""
    argv = [sys.executable, "-m", "agent_cli", "replay", str(logs["good"]), "-o", "jsonl"]
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).parents[2]))
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    err = proc.stderr.read()
    assert proc.wait(timeout=120) in (0, 1)
    assert b"Traceback" not in err and b"Error" not in err, err
