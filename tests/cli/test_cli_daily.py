"""The command line as scripts use it: --version and -h, help pages with plain metavars, `run -`,
`run --output json`, the answer alone on a piped stdout, exit 7 when writes were denied, and LOG
arguments (path, name from `log list`, id, --last) meaning the same file for every command."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agent_cli import __version__
from agent_cli.cli.app import app
from tests.conftest import REPO

runner = CliRunner()


def text(t: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": t}], "stop_reason": "end_turn"}


def tool_use(call_id: str, name: str, args: dict[str, Any], say: str = "") -> dict[str, Any]:
    content: list[dict[str, Any]] = [{"type": "text", "text": say}] if say else []
    content.append({"type": "tool_use", "id": call_id, "name": name, "input": args})
    return {"content": content, "stop_reason": "tool_use"}


def script(tmp_path: Path, replies: list[dict[str, Any]], name: str = "s.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(replies), encoding="utf-8")
    return path


def cli(args: list[str], *, stdin: str | None = None,
        cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["COLUMNS"] = "100"
    return subprocess.run([sys.executable, "-m", "agent_cli", *args], input=stdin,
                          stdin=None if stdin is not None else subprocess.DEVNULL,
                          capture_output=True, text=True, env=env, cwd=cwd, timeout=120)


def sessions() -> Path:
    return Path(os.environ["AGENT_CLI_HOME"]) / "sessions"


# --------------------------------------------------------------------------- version and help


def test_version() -> None:
    for flag in ("--version", "-V"):
        proc = cli([flag])
        assert proc.returncode == 0
        assert proc.stdout == f"agent-cli {__version__}\n"
        assert re.fullmatch(r"agent-cli \d+\.\d+\.\d+\n", proc.stdout)


COMMANDS = [["chat"], ["run"], ["replay"], ["tools"], ["log", "verify"], ["log", "list"], ["log"]]


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_help_pages_are_plain(command: list[str]) -> None:
    for flag in ("-h", "--help"):
        result = runner.invoke(app, [*command, flag], terminal_width=100)
        assert result.exit_code == 0, result.output
        page = result.output
        assert "Usage: agent-cli" in page
        # no Python types, no click range syntax, no braces around arguments
        for noise in ("<path>", "<str>", "<int", "list[", "[x>=", "{", "Path]", "TEXT",
                      "INTEGER"):
            assert noise not in page, (noise, page)


def test_top_level_help_keeps_whole_summaries() -> None:
    page = runner.invoke(app, ["-h"], terminal_width=100).output
    assert "..." not in page.split("Commands:")[1]
    assert "Chat with the model in a REPL; write calls ask for your yes, one by one." in \
        " ".join(page.split())
    assert "--version" in page


def test_each_command_lists_only_its_options() -> None:
    def options(*command: str) -> set[str]:
        page = runner.invoke(app, [*command, "-h"], terminal_width=100).output
        return set(re.findall(r"(?<![\w-])--[a-z][a-z-]+", page))

    replay = options("replay")
    assert "--log" not in replay, "replay has a LOG argument; a second --log only confused"
    assert {"--last", "--turns", "--rerun", "--rerun-log", "--workspace"} <= replay
    assert not {"--model", "--provider", "--base-url", "--script", "--max-turns"} & replay
    assert options("log", "list") & {"--model", "--tools-dir", "--script"} == set()
    assert "--workspace" in options("log", "list")
    assert options("tools") & {"--model", "--log", "--max-turns"} == set()
    assert {"--model", "--script", "--max-turns", "--plain", "--output"} <= options("run")
    assert {"--resume", "--continue", "--plain", "--model"} <= options("chat")


# --------------------------------------------------------------------------- run


def test_run_reads_the_prompt_from_stdin_and_prints_one_json_object(tmp_path: Path,
                                                                    workspace: Path) -> None:
    s = script(tmp_path, [tool_use("toolu_r", "list_dir", {"path": "."}, "Looking."),
                          text("Nothing here.")])
    proc = cli(["run", "-", "--script", str(s), "--workspace", str(workspace), "--output",
                "json"], stdin="what is in this folder?\n")
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)  # stdout is exactly one JSON object
    assert set(result) == {"answer", "stop_reason", "exit_code", "log", "usage", "denied"}
    assert result["answer"] == "Nothing here."
    assert result["stop_reason"] == "end_turn" and result["exit_code"] == 0
    assert result["denied"] == [] and isinstance(result["usage"], dict)
    log = Path(result["log"])
    records = [json.loads(line) for line in log.read_text().splitlines()]
    [user] = [r for r in records if r["type"] == "user_message"]
    assert user["text"] == "what is in this folder?\n"  # the prompt came from stdin
    assert "list_dir" in proc.stderr  # the way there, on stderr


def test_run_with_denied_writes_says_so_and_exits_7(tmp_path: Path, workspace: Path) -> None:
    s = script(tmp_path, [tool_use("toolu_w", "write_file", {"path": "a.txt", "content": "x"}),
                          text("Tried.")])
    proc = cli(["run", "write a", "--script", str(s), "--workspace", str(workspace), "-o",
                "json"])
    assert proc.returncode == 7
    result = json.loads(proc.stdout)
    assert result["denied"] == ["toolu_w"] and result["exit_code"] == 7
    assert "1 write call(s) were denied" in proc.stderr
    assert not (workspace / "a.txt").exists()
    # the same run as text: only the answer on stdout, exit 7 too
    proc = cli(["run", "write a", "--script", str(s), "--workspace", str(workspace)])
    assert proc.returncode == 7
    assert proc.stdout == "Tried.\n"


def test_run_tells_a_refusal_by_a_deny_rule_from_a_call_nobody_could_approve(
        tmp_path: Path, workspace: Path) -> None:
    """A write a deny rule matches is refused whatever anyone answers: the summary says so (and
    where to read why) and does not send the user to a terminal to approve it; a write nobody
    could be asked about is still counted as such. Exit 7, as for any denial."""
    config = tmp_path / "config.toml"
    config.write_text('[[deny]]\ntool = "write_file"\nargs = { path = "secret*" }\n')
    s = script(tmp_path, [
        tool_use("toolu_rule", "write_file", {"path": "secret.txt", "content": "x"}),
        tool_use("toolu_in", "write_file", {"path": "a.txt", "content": "x"}), text("Tried.")])
    proc = cli(["run", "write", "--script", str(s), "--workspace", str(workspace), "--config",
                str(config), "-o", "json"])
    assert proc.returncode == 7, proc.stderr
    result = json.loads(proc.stdout)
    assert result["denied"] == ["toolu_rule", "toolu_in"]
    err = " ".join(proc.stderr.split())
    assert "1 write call(s) were denied (no terminal to ask)" in err
    assert "1 call(s) were refused by a deny rule" in err and result["log"] in err
    assert not (workspace / "secret.txt").exists() and not (workspace / "a.txt").exists()


def test_piped_answer_is_not_hard_wrapped_and_is_sanitised(tmp_path: Path,
                                                           workspace: Path) -> None:
    long_line = "word " * 60 + "end"
    s = script(tmp_path, [text(f"# Title\n\n{long_line}\n\x1b[2J tail")])
    proc = cli(["run", "go", "--script", str(s), "--workspace", str(workspace)])
    assert proc.returncode == 0
    assert proc.stdout == f"# Title\n\n{long_line}\n\\x1b[2J tail\n"  # raw text, one line each


def test_run_dash_with_empty_stdin_is_a_usage_error(tmp_path: Path, workspace: Path) -> None:
    s = script(tmp_path, [text("never")])
    proc = cli(["run", "-", "--script", str(s), "--workspace", str(workspace)], stdin="")
    assert proc.returncode == 2
    assert "stdin was empty" in " ".join(proc.stderr.split())


def test_run_rejects_an_unknown_output(tmp_path: Path, workspace: Path) -> None:
    s = script(tmp_path, [text("never")])
    result = runner.invoke(app, ["run", "x", "--script", str(s), "-w", str(workspace), "-o",
                                 "yaml"])
    assert result.exit_code == 2 and "text, json or jsonl" in result.output


# --------------------------------------------------------------------------- LOG arguments


def make_session(tmp_path: Path, workspace: Path, prompts: list[str],
                 name: str = "s.json") -> Path:
    s = script(tmp_path, [text(f"answer {i}") for i in range(len(prompts))], name)
    before = set(sessions().glob("*.jsonl")) if sessions().is_dir() else set()
    result = runner.invoke(app, ["chat", "--script", str(s), "-w", str(workspace)],
                           input="".join(p + "\n" for p in prompts))
    assert result.exit_code == 0, result.output
    [new] = set(sessions().glob("*.jsonl")) - before
    return new


def test_log_by_path_name_id_and_last(tmp_path: Path, workspace: Path) -> None:
    old = make_session(tmp_path, workspace, ["first session"])
    new = make_session(tmp_path, workspace, ["second session", "more"], "t.json")
    os.utime(old, (1, 1))  # the newest by time is `new`
    log_id = new.name.removesuffix(".jsonl").rsplit("-", 1)[-1]
    for arg in (str(new), new.name, new.name.removesuffix(".jsonl"), log_id):
        result = runner.invoke(app, ["replay", arg])
        assert result.exit_code == 0, (arg, result.output)
        assert "second session" in result.output and "first session" not in result.output
        assert runner.invoke(app, ["log", "verify", arg]).exit_code == 0
    last = runner.invoke(app, ["replay", "--last", "-w", str(workspace)])
    assert last.exit_code == 0 and "second session" in last.output
    # text replay numbers the turns
    assert "── turn 1 ──" in last.output and "── turn 2 ──" in last.output
    listing = runner.invoke(app, ["log", "list"], env={"COLUMNS": "200"}).output
    assert new.name in listing and log_id in listing


def test_a_missing_log_is_exit_2_for_replay_and_log_verify(tmp_path: Path) -> None:
    for command in (["replay"], ["log", "verify"]):
        result = runner.invoke(app, [*command, str(tmp_path / "gone.jsonl")])
        assert result.exit_code == 2, (command, result.output)
        said = " ".join(result.output.split())
        assert "not found" in said and "Traceback" not in said
        result = runner.invoke(app, [*command, "abcdef"])
        assert result.exit_code == 2


def test_replay_needs_a_log_or_last_not_both(tmp_path: Path, workspace: Path) -> None:
    log = make_session(tmp_path, workspace, ["hi"])
    assert runner.invoke(app, ["replay"]).exit_code == 2
    both = runner.invoke(app, ["replay", str(log), "--last", "-w", str(workspace)])
    assert both.exit_code == 2 and "not both" in both.output


def test_turns_out_of_range_says_how_many_exist(tmp_path: Path, workspace: Path) -> None:
    log = make_session(tmp_path, workspace, ["one", "two"])
    result = runner.invoke(app, ["replay", str(log), "--turns", "5"])
    assert result.exit_code == 2
    assert "this log has 2 turns" in " ".join(result.output.split())
    ok = runner.invoke(app, ["replay", str(log), "--turns", "2"])
    assert ok.exit_code == 0 and "── turn 2 ──" in ok.output and "› one" not in ok.output


def test_replay_of_a_log_whose_chain_fails_warns_at_the_top(tmp_path: Path,
                                                            workspace: Path) -> None:
    log = make_session(tmp_path, workspace, ["original words"])
    log.write_text(log.read_text().replace("original words", "edited words"))
    result = runner.invoke(app, ["replay", str(log)])
    assert result.exit_code == 0
    first = result.output.splitlines()[0]
    assert first.startswith("warning: the hash chain of this log does not verify"), first
    assert "agent-cli log verify" in " ".join(result.output.split())


def test_resumed_sessions_show_as_such_in_log_list(tmp_path: Path, workspace: Path) -> None:
    first = make_session(tmp_path, workspace, ["start here"])
    s = script(tmp_path, [text("continued")], "r.json")
    result = runner.invoke(app, ["chat", "--resume", first.name, "--script", str(s), "-w",
                                 str(workspace)], input="go on\n")
    assert result.exit_code == 0, result.output
    said = " ".join(result.output.split())
    assert "Recap of the last 1 turn(s):" in said and "you: start here" in said
    assert "model: answer 0" in said
    listing = runner.invoke(app, ["log", "list"], env={"COLUMNS": "200"}).output
    kinds = [line.split()[2] for line in listing.splitlines()
             if line.strip()[:1].isdigit() and ".jsonl" in line]
    assert sorted(kinds) == ["new", "resumed"], listing


def test_resume_from_another_folder_uses_the_recorded_workspace(tmp_path: Path,
                                                                workspace: Path) -> None:
    first = make_session(tmp_path, workspace, ["start here"])
    s = script(tmp_path, [tool_use("toolu_l", "list_dir", {"path": "."}), text("listed")],
               "r.json")
    (workspace / "marker.txt").write_text("x")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    proc = cli(["chat", "--resume", str(first), "--script", str(s)], stdin="list it\n",
               cwd=elsewhere)
    assert proc.returncode == 0, proc.stderr
    said = " ".join(proc.stdout.split())
    assert f"Workspace: {workspace}" in said and "recorded in the log" in said
    assert "marker.txt" in said  # list_dir ran in the recorded workspace
    # the recorded workspace is gone: it says so and stays here
    import shutil

    shutil.rmtree(workspace)
    proc = cli(["chat", "--resume", str(first), "--script", str(s)], stdin="list it\n",
               cwd=elsewhere)
    said = " ".join(proc.stdout.split())
    assert "no longer exists" in said and str(elsewhere) in said


def test_resume_without_a_log_needs_a_terminal_for_the_picker(tmp_path: Path,
                                                              workspace: Path) -> None:
    s = script(tmp_path, [text("x")])
    result = runner.invoke(app, ["chat", "--resume", "--script", str(s), "-w", str(workspace)],
                           input="")
    assert result.exit_code == 2
    assert "picker" in result.output and "needs a terminal" in " ".join(result.output.split())


def test_a_rerun_shows_as_such_in_log_list(tmp_path: Path, workspace: Path) -> None:
    recording = REPO / "tests" / "data" / "session_edit.jsonl"
    ws = tmp_path / "rerun-ws"
    ws.mkdir()
    own = tmp_path / "rerun.jsonl"
    result = runner.invoke(app, ["replay", str(recording), "--rerun", "--workspace", str(ws),
                                 "--rerun-log", str(own)], env={"COLUMNS": "200"})
    assert result.exit_code in (0, 1), result.output
    assert own.is_file()
    from agent_cli.log.show import summarize

    assert summarize(own).kind == "rerun"
    assert summarize(recording).kind == "new"


@pytest.mark.parametrize("columns", ["60", "120"])
def test_log_list_never_wraps_the_log_name(tmp_path: Path, workspace: Path, columns: str) -> None:
    """The log name is what a user copies into replay: broken across lines it cannot be."""
    new = make_session(tmp_path, workspace, ["a prompt " * 20])
    listing = runner.invoke(app, ["log", "list"], env={"COLUMNS": columns}).output
    assert any(new.name in line for line in listing.splitlines()), listing
