"""`agent-cli replay`: the session shown again exactly as the terminal showed it (same renderer,
panel and sanitiser), never executing anything; exports; and `--rerun` with its drift report.

tests/data/session_edit.jsonl is a recorded session kept as a regression test: it is replayed
and rerun in a fresh workspace built from WORKSPACE_FILES below. Re-record it (after a deliberate
format change) with `python -m tests.log.test_replay`.
"""

from __future__ import annotations

import io
import json
import re
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from typer.testing import CliRunner

from agent_cli import rerun as rr
from agent_cli.approval import Approved, DenyRule, ScriptedApprover
from agent_cli.calls import Call
from agent_cli.cli.app import app
from agent_cli.config import Settings
from agent_cli.log import show as rp
from agent_cli.log.reader import read_events
from agent_cli.log.verify import verify
from agent_cli.providers.scripted import ScriptedProvider
from agent_cli.session import Session, load_registry
from agent_cli.tools.base import canonical_json, sha256_json
from agent_cli.ui.panel import TerminalApprover
from agent_cli.ui.render import Renderer
from agent_cli.ui.views.replay import TextView
from tests.conftest import REPO
from tests.logtools import sign_as_mine
from tests.scripts import PLUGIN, split_runner, text, tool_use

DATA = Path(__file__).resolve().parents[1] / "data"
runner = CliRunner()
stdout_runner = split_runner()  # result.stdout without the warnings on stderr

WORKSPACE_FILES = {
    "notes.txt": "alpha\nbeta \x1b[31mred\x1b[0m\ngamma\n",
    "src/app.py": "print('hello')\n",
}

EDIT_SCRIPT: list[dict[str, Any]] = [
    tool_use("toolu_01", "read_file", {"path": "notes.txt"}, "Reading the notes."),
    tool_use("toolu_02", "write_file", {"path": "summary.txt", "content": "3 lines\n"},
             "Writing a summary."),
    text("Summary written."),
    tool_use("toolu_03", "list_dir", {"path": "."}),
    tool_use("toolu_04", "write_file", {"path": "notes.txt", "content": "gone\n"}),
    tool_use("toolu_05", "multiply", {"a": 6, "b": 7}, "Then arithmetic."),
    text("Left notes.txt alone. 6 x 7 = 42. [bold]not markup[/bold]"),
]
EDIT_PROMPTS = ["summarise notes.txt into summary.txt", "now overwrite notes.txt"]
EDIT_ANSWERS = ["y", "n keep my notes"]


def make_workspace(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for name, content in WORKSPACE_FILES.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(content, encoding="utf-8")
    return root


def record(workspace: Path, log: Path, replies: list[dict[str, Any]], prompts: list[str],
           answers: list[str], console: Console | None = None,
           tools_dirs: Sequence[Path] = (), settings: Settings | None = None) -> Session:
    """A live session as a person would see it: the Renderer and the terminal panel on
    `console`, answers typed at the prompt."""
    console = console or Console(file=io.StringIO(), width=100)
    settings = settings or Settings(provider="scripted")
    registry, _ = load_registry(settings, list(tools_dirs))
    typed = iter(answers)
    approver = TerminalApprover(console, input_fn=lambda _msg: next(typed),
                                flush_typeahead=False)
    session = Session(settings, workspace=workspace, provider=ScriptedProvider(replies),
                      registry=registry, approver=approver, sinks=[Renderer(console)],
                      log_path=log)
    session.start()
    for prompt in prompts:
        session.send(prompt)
    session.close()
    return session


def replay_text(log: Path, **kw: Any) -> str:
    console = Console(file=io.StringIO(), width=100)
    rp.show(log, TextView(console, log), **kw)
    out = console.file.getvalue()  # type: ignore[attr-defined]
    assert isinstance(out, str)
    return out


REPLAY_ONLY = re.compile(r"^(── turn \d+ ──$|› |Run .*\? \[y/N\] ?$|(approved|denied) by user"
                         r"|\(session ended|replay of |agent-cli · )")


def test_replay_shows_what_the_live_terminal_showed(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "ws")
    live = Console(file=io.StringIO(), width=100)
    log = tmp_path / "s.jsonl"
    settings = Settings(provider="scripted",
                        deny=[DenyRule(tool="write_file", args={"path": "*.lock"})])
    replies = [*EDIT_SCRIPT[:3],
               tool_use("toolu_06", "write_file", {"path": "x.lock", "content": "1"}),
               text("Refused by a rule; fine.")]
    record(ws, log, replies, [EDIT_PROMPTS[0], "lock it"], ["y"], live, settings=settings)
    recorded_console = live.file.getvalue()  # type: ignore[attr-defined]
    shown = replay_text(log)
    lines = shown.splitlines()
    body = lines[next(i for i, line in enumerate(lines) if line.startswith("› ")):]
    kept = [line for line in body if not REPLAY_ONLY.match(line)]
    assert kept == recorded_console.splitlines()
    # what replay adds: the prompts as typed and the decision recorded at each panel
    assert "› summarise notes.txt into summary.txt" in shown
    assert re.search(r"Run write_file on summary\.txt \(CREATE, 1 line\)\? \[y/N\] ?\n"
                     r"approved by user\n", shown)
    assert "CREATE new file summary.txt" in shown  # the preview, as the panel showed it
    assert "\x1b" not in shown and "\\x1b[31m" in shown  # escapes stay visible tokens


def test_recorded_session_replays_with_panels_decisions_and_results() -> None:
    shown = replay_text(DATA / "session_edit.jsonl")
    assert shown.count("Approve call") == 2
    # The decision as recorded, never an invented answer ("n keep my notes" was not typed so).
    assert "approved by user" in shown and "denied by user: keep my notes" in shown
    assert "[y/N] y" not in shown and "[y/N] n" not in shown
    assert "→ read_file" in shown and "✓ alpha" in shown
    assert "42" in shown and "[bold]not markup[/bold]" in shown
    assert "\x1b" not in shown


def test_replay_never_runs_a_tool_nor_calls_a_model(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from agent_cli.tools import base

    def boom(*_a: object, **_k: object) -> None:
        raise AssertionError("replay touched a tool or a provider")

    monkeypatch.setattr(base.Tool, "schema", boom)
    monkeypatch.setattr(ScriptedProvider, "complete", boom)
    monkeypatch.setattr("agent_cli.session.make_provider", boom)
    for out in ("text", "markdown", "jsonl"):
        result = runner.invoke(app, ["replay", str(DATA / "session_edit.jsonl"), "-o", out])
        assert result.exit_code == 0, result.output


def test_jsonl_export_is_the_log_byte_for_byte() -> None:
    log = DATA / "session_edit.jsonl"
    result = runner.invoke(app, ["replay", str(log), "--output", "jsonl"])
    assert result.exit_code == 0
    assert result.stdout == log.read_text(encoding="ascii")


def test_turn_range_and_tools_only() -> None:
    log = DATA / "session_edit.jsonl"
    second = runner.invoke(app, ["replay", str(log), "--turns", "2", "-o", "jsonl"]).stdout
    types = [json.loads(x)["type"] for x in second.splitlines()]
    assert types[0] == "session_start" and types[-1] == "session_end"
    ids = {json.loads(x).get("id") for x in second.splitlines()}
    assert {"toolu_04", "toolu_05"} <= ids and "toolu_01" not in ids
    texts = [json.loads(x)["text"] for x in second.splitlines()
             if json.loads(x)["type"] == "user_message"]
    assert texts == [EDIT_PROMPTS[1]]
    tools_only = runner.invoke(app, ["replay", str(log), "--tools-only", "-o", "jsonl"]).stdout
    kinds = {json.loads(x)["type"] for x in tools_only.splitlines()}
    assert kinds == {"session_start", "session_end", "tool_proposed", "approval",
                     "tool_started", "tool_result"}
    shown = runner.invoke(app, ["replay", str(log), "--turns", "1-1", "--tools-only"],
                          env={"COLUMNS": "100"}).stdout
    assert "Approve call toolu_02" in shown and "toolu_04" not in shown
    assert "Summary written." not in shown and "› " not in shown
    bad = runner.invoke(app, ["replay", str(log), "--turns", "3-1"])
    assert bad.exit_code == 2


def test_markdown_export_is_sanitised_and_inert(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "ws")
    log = tmp_path / "s.jsonl"
    hostile = "```\n<img src=x onerror=alert(1)> [click](javascript:alert(1)) \x1b]52;c;AAAA\x07"
    record(ws, log, [tool_use("toolu_1", "read_file", {"path": "notes.txt"}, hostile),
                     text("ok")], [hostile], [])
    md = runner.invoke(app, ["replay", str(log), "-o", "markdown"]).stdout
    assert "\x1b" not in md and "\x07" not in md and "\\x1b]52" in md
    assert "## Turn 1" in md and "### Call read\\_file (toolu\\_1)" in md
    # every untrusted block sits in a fence longer than any backtick run inside it
    assert "````text\n```\n<img" in md
    assert "**Decision:** approved by policy" in md


def test_bad_lines_are_reported_and_skipped(tmp_path: Path) -> None:
    log = tmp_path / "s.jsonl"
    shutil.copy(DATA / "session_edit.jsonl", log)
    with open(log, "ab") as f:
        f.write(b'{"v":1,"seq":')
    result = stdout_runner.invoke(app, ["replay", str(log)])
    assert result.exit_code == 0
    assert "torn" in result.stderr and "Summary written." in result.stdout


# -- rerun -----------------------------------------------------------------------------------

def recorded_tools(log: Path) -> Any:
    """Today's tools, limited to those the recording offered (so a tool added since does not
    change an "available tools" message)."""
    settings = Settings(provider="scripted")
    registry, _ = load_registry(settings)
    start = next(e for _, e in read_events(log))
    assert start.type == "session_start"
    for name in set(registry.names()) - {t.name for t in start.tools}:
        registry.remove(name)
    return registry


def test_recorded_session_reruns_without_drift(tmp_path: Path) -> None:
    """The regression test: the recorded model turns drive the real loop and tools again."""
    ws = make_workspace(tmp_path / "rerun")
    console = Console(file=io.StringIO(), width=100)
    inner = ScriptedApprover(["n keep my notes"])  # only the call never approved is asked
    settings = Settings(provider="scripted")
    registry = recorded_tools(DATA / "session_edit.jsonl")
    mine = sign_as_mine(DATA / "session_edit.jsonl", tmp_path / "mine.jsonl")
    report = rr.rerun(mine, settings=settings, workspace=ws,
                      registry=registry, approver=inner, sinks=[Renderer(console)],
                      reuse_approvals=True, log_path=tmp_path / "rerun.jsonl")
    assert report.drift == [], report.drift
    assert report.calls == 5
    assert [r.id for r in inner.seen] == ["toolu_04"]
    assert (ws / "summary.txt").read_text() == "3 lines\n"
    events = [e for _, e in read_events(tmp_path / "rerun.jsonl")]
    by = {e.id: e.by for e in events if e.type == "approval"}
    assert by["toolu_02"] == "recording" and by["toolu_04"] == "user"
    assert verify(tmp_path / "rerun.jsonl").ok


def test_second_recording_reruns_without_drift(tmp_path: Path) -> None:
    """Search, an approved write, a failing read, an unknown tool and invalid arguments."""
    log = sign_as_mine(DATA / "session_search.jsonl", tmp_path / "mine.jsonl")
    ws = make_workspace(tmp_path / "rerun")
    inner = ScriptedApprover([])  # nothing may be asked: the only write was approved
    report = rr.rerun(log, settings=Settings(provider="scripted"), workspace=ws,
                      registry=recorded_tools(log), approver=inner,
                      sinks=[Renderer(Console(file=io.StringIO(), width=100))],
                      reuse_approvals=True,
                      log_path=tmp_path / "rerun.jsonl")
    assert report.drift == [] and inner.seen == []
    assert report.calls == 5
    assert (ws / "src" / "greet.py").read_text() == "def greet():\n    return 'hello'\n"
    # and a change in the workspace shows up as drift of exactly the calls it affects
    ws2 = make_workspace(tmp_path / "changed")
    (ws2 / "src" / "app.py").write_text("print('bye')\n")
    (ws2 / "missing.txt").write_text("here now\n")
    changed = rr.rerun(log, settings=Settings(provider="scripted"), workspace=ws2,
                       registry=recorded_tools(log), approver=ScriptedApprover([]),
                       sinks=[Renderer(Console(file=io.StringIO(), width=100))],
                      reuse_approvals=True,
                       log_path=tmp_path / "rerun2.jsonl")
    assert [(d.call_id, d.what) for d in changed.drift] == [
        ("toolu_s1", "result differs"), ("toolu_s3", "now succeeds")]


def test_rerun_after_changing_a_tool_reports_drift_and_exits_1(tmp_path: Path) -> None:
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "echo_write.py").write_text(PLUGIN, encoding="utf-8")
    ws = make_workspace(tmp_path / "ws")
    log = tmp_path / "s.jsonl"
    record(ws, log, [tool_use("toolu_e1", "echo_write", {"text": "a"}),
                     tool_use("toolu_r1", "read_file", {"path": "notes.txt"}),
                     tool_use("toolu_e2", "echo_write", {"text": "b"}), text("ok")],
           ["echo twice"], ["y", "y"], tools_dirs=[tools])
    args = ["replay", str(log), "--rerun", "--workspace", str(make_workspace(tmp_path / "w2")),
            "--tools-dir", str(tools), "--reuse-approvals"]
    same = runner.invoke(app, args, env={"COLUMNS": "200"})
    assert same.exit_code == 0, same.output
    assert "No drift" in same.output

    (tools / "echo_write.py").write_text(
        PLUGIN.replace('"echo:" + args.text', '"ECHO " + args.text.upper()')
              .replace("Echo, with effects.", "Echo loudly."), encoding="utf-8")
    # a changed plugin loads only once the user trusts the new version (tools/trust.py)
    assert runner.invoke(app, ["tools", "--trust", str(tools / "echo_write.py")]).exit_code == 0
    changed = runner.invoke(app, args, env={"COLUMNS": "200"})
    assert changed.exit_code == 1, changed.output
    out = changed.output
    assert "Drift: 2 call(s) differ" in out
    assert "toolu_e1" in out and "echo:a" in out and "ECHO A" in out
    assert "toolu_r1" not in out.split("Drift:")[1]
    assert "Tools changed since the recording" in out and "schema changed" in out


def test_rerun_without_a_terminal_denies_writes_and_reports_it(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "ws")
    result = runner.invoke(app, ["replay", str(DATA / "session_edit.jsonl"), "--rerun",
                                 "--workspace", str(ws)], env={"COLUMNS": "200"})
    assert result.exit_code == 1
    assert "now fails" in result.output and "toolu_02" in result.output
    assert not (ws / "summary.txt").exists()


def test_rerun_needs_an_explicit_workspace_and_its_own_log(tmp_path: Path) -> None:
    log = DATA / "session_edit.jsonl"
    result = runner.invoke(app, ["replay", str(log), "--rerun"])
    assert result.exit_code == 2 and "--workspace" in result.output
    before = log.read_bytes()
    same = runner.invoke(app, ["replay", str(log), "--rerun", "--workspace", str(tmp_path),
                               "--rerun-log", str(log)])
    assert same.exit_code == 2 and log.read_bytes() == before
    assert "--rerun-log must name a new file" in " ".join(same.output.split())


def test_reuse_approvals_refuses_a_log_that_fails_verification(tmp_path: Path) -> None:
    log = sign_as_mine(DATA / "session_edit.jsonl", tmp_path / "s.jsonl")
    log.write_text(log.read_text().replace("3 lines", "4 lines"))
    result = runner.invoke(app, ["replay", str(log), "--rerun", "--reuse-approvals",
                                 "--workspace", str(make_workspace(tmp_path / "ws"))])
    assert result.exit_code == 1 and "verify" in result.output
    assert not (tmp_path / "ws" / "summary.txt").exists()


class Recorder:
    def __init__(self) -> None:
        self.asked: list[Call] = []

    def decide(self, request: Call) -> Any:
        self.asked.append(request)
        from agent_cli.approval import Denied

        return Denied(request.id, "asked")


def _request(call_id: str, name: str, args: dict[str, Any]) -> Call:
    return Call(id=call_id, name=name, effect="write", args=args,
                           args_hash=sha256_json(args))


def test_reuse_approvals_approves_only_byte_identical_calls() -> None:
    args = {"path": "a.txt", "content": "x"}
    recorded = [("toolu_1", "write_file", sha256_json(args), canonical_json(args))]
    inner = Recorder()
    reuse = rr.ReuseApprovals(inner, recorded)
    others = [
        _request("toolu_1", "write_file", {"path": "a.txt", "content": "x "}),
        _request("toolu_1", "write_file", {"path": "a.txt", "content": "x", "mode": 1}),
        _request("toolu_1", "edit_file", args),
        _request("toolu_2", "write_file", args),
        Call(id="toolu_1", name="write_file", effect="write", args=args,
                        args_hash="0" * 64),
    ]
    for req in others:
        assert not isinstance(reuse.decide(req), Approved)
    assert len(inner.asked) == len(others)
    first = reuse.decide(_request("toolu_1", "write_file", dict(reversed(args.items()))))
    assert isinstance(first, Approved) and first.by == "recording"
    again = reuse.decide(_request("toolu_1", "write_file", args))  # one recorded yes, one reuse
    assert not isinstance(again, Approved)


SEARCH_SCRIPT: list[dict[str, Any]] = [
    tool_use("toolu_s1", "search_text", {"pattern": "hello", "path": "."}, "Searching."),
    tool_use("toolu_s2", "write_file", {"path": "src/greet.py",
                                        "content": "def greet():\n    return 'hello'\n"}),
    tool_use("toolu_s3", "read_file", {"path": "missing.txt"}),
    tool_use("toolu_s4", "delete_everything", {"path": "/"}),
    tool_use("toolu_s5", "multiply", {"a": "six", "b": 7}),
    text("Added src/greet.py; missing.txt does not exist."),
]


def _neutralise_paths(log: Path, replace: dict[str, str]) -> None:
    """Committed fixtures must not carry this machine's paths: rewrite them and re-chain, the
    way the writer would have written the records."""
    from agent_cli.log.keys import log_key, record_mac
    from agent_cli.log.writer import chain_hash, serialize

    def fix(value: Any) -> Any:
        if isinstance(value, str):
            for old, new in replace.items():
                value = value.replace(old, new)
            return value
        if isinstance(value, list):
            return [fix(v) for v in value]
        if isinstance(value, dict):
            return {k: fix(v) for k, v in value.items()}
        return value

    key = log_key()
    prev, lines = "", []
    for raw in log.read_text().splitlines():
        rec = fix(json.loads(raw))
        rec.pop("mac", None)
        rec["hash"] = prev = chain_hash(prev, rec)  # keeps the field where the writer put it
        if key is not None:
            rec["mac"] = record_mac(key, rec["hash"])
        lines.append(serialize(rec))
    log.write_bytes(b"\n".join(lines) + b"\n")


def _record_fixtures(out: Path) -> None:
    """Re-record tests/data (run as `python -m tests.log.test_replay`)."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        for name, replies, prompts, answers in (
                ("session_edit", EDIT_SCRIPT, EDIT_PROMPTS, EDIT_ANSWERS),
                ("session_search", SEARCH_SCRIPT, ["find hello; add a greet module"], ["y"]),
                ("session_killed", EDIT_SCRIPT[:2], [EDIT_PROMPTS[0]], ["y"])):
            ws = make_workspace(Path(tmp) / name)
            log = out / f"{name}.jsonl"
            log.unlink(missing_ok=True)
            record(ws, log, replies, prompts, answers)
            _neutralise_paths(log, {str(REPO) + "/": "", str(Path(tmp)): "/tmp/fixtures"})
            if name == "session_killed":  # what SIGKILL during the write leaves behind
                lines = log.read_bytes().split(b"\n")
                cut = next(i for i, line in enumerate(lines) if b'"tool_started"' in line
                           and b"toolu_02" in line)
                log.write_bytes(b"\n".join(lines[:cut + 1]) + b"\n" + lines[cut + 1][:60])


if __name__ == "__main__":
    _record_fixtures(DATA)


@pytest.mark.parametrize(("spec", "want"), [
    ("3", (3, 3)), ("2-4", (2, 4)), ("2-", (2, None)), ("-4", (1, 4)), (" 1 - 2 ", (1, 2))])
def test_turn_ranges(spec: str, want: tuple[int, int | None]) -> None:
    assert rp.parse_turns(spec) == want


@pytest.mark.parametrize("spec", ["", "-", "0", "4-2", "a-b", "1-2-3"])
def test_bad_turn_ranges_are_usage_errors(spec: str) -> None:
    from agent_cli.errors import UsageError

    with pytest.raises(UsageError):
        rp.parse_turns(spec)
