"""MCP servers as tool sources, against the real servers published on PyPI (mcp-server-time and
mcp-server-git, installed by .ci/run), driven through the real Session/Loop with a scripted
provider and a scripted approver, and through `agent-cli` as a subprocess.

Every server started here carries a unique marker in its environment, so a test can find its
process (to kill it) and prove that none is left behind.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agent_cli import events as ev
from agent_cli.approval import ScriptedApprover
from agent_cli.config import MCPServer, Settings
from agent_cli.providers.base import ModelRequest
from agent_cli.providers.scripted import FunctionProvider, ScriptedProvider
from agent_cli.session import Session
from agent_cli.tools.base import EmptyArgs, Tool, ToolContext
from agent_cli.tools.loader import load_tools
from agent_cli.tools.mcp.hub import MCPHub
from agent_cli.tools.mcp.pins import definition_hash
from tests.scripts import calls, done, use

pytestmark = pytest.mark.mcp

PY = sys.executable
TIME_ARGS = ["-m", "mcp_server_time", "--local-timezone", "UTC"]


# --------------------------------------------------------------------------- helpers


def procs_with(marker: str) -> list[int]:
    """Live processes whose environment carries the marker (zombies have an empty environ)."""
    found = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            env = (d / "environ").read_bytes()
        except OSError:
            continue
        if marker.encode() in env:
            found.append(int(d.name))
    return found


def wait_gone(marker: str, limit_s: float = 60.0) -> list[int]:
    """Poll (not a timing assertion: just long enough for a clean shutdown) until no process
    with the marker is left; return what is left."""
    end = time.monotonic() + limit_s
    while (left := procs_with(marker)) and time.monotonic() < end:
        time.sleep(0.05)
    return left


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git repository with one commit and one staged change (git_reset unstages it)."""
    path = tmp_path / "repo"
    path.mkdir()
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid"}
    subprocess.run(["git", "init", "-q", str(path)], check=True, env=env)
    (path / "a.txt").write_text("one\n")
    subprocess.run(["git", "-C", str(path), "add", "a.txt"], check=True, env=env)
    subprocess.run(["git", "-C", str(path), "commit", "-qm", "first"], check=True, env=env)
    (path / "a.txt").write_text("one\ntwo\n")
    subprocess.run(["git", "-C", str(path), "add", "a.txt"], check=True, env=env)
    return path


def staged(repo: Path) -> list[str]:
    out = subprocess.run(["git", "-C", str(repo), "diff", "--cached", "--name-only"],
                         check=True, capture_output=True, text=True).stdout
    return out.split()


def time_server(marker: str, **kw: Any) -> MCPServer:
    return MCPServer(command=PY, args=TIME_ARGS, env={marker: "1"}, **kw)


def git_server(marker: str, repo: Path, **kw: Any) -> MCPServer:
    kw.setdefault("cwd", str(repo))  # the sandbox lets a server write only inside its cwd
    return MCPServer(command=PY, args=["-m", "mcp_server_git", "--repository", str(repo)],
                     env={marker: "1"}, **kw)


class Run:
    """One session with MCP servers attached, its events, provider and approver."""

    def __init__(self, workspace: Path, servers: dict[str, MCPServer],
                 replies: list[dict[str, Any]] | Callable[[ModelRequest], dict[str, Any]],
                 answers: list[str] = ()) -> None:  # type: ignore[assignment]
        self.events: list[ev.AnyEvent] = []
        self.approver = ScriptedApprover(answers)
        self.provider: ScriptedProvider | FunctionProvider = (
            FunctionProvider(replies) if callable(replies) else ScriptedProvider(replies))
        registry, _ = load_tools([])
        settings = Settings(provider="scripted", mcp={"servers": servers})
        self.session = Session(settings, workspace=workspace, provider=self.provider,
                               registry=registry, approver=self.approver,
                               sinks=[self.events.append], start_mcp=True)
        self.hub = self.session.mcp
        self.session.start()

    def send(self, text: str = "go") -> Any:
        return self.session.send(text)

    def close(self) -> None:
        self.session.close()

    def of(self, kind: type[Any]) -> list[Any]:
        return [e for e in self.events if isinstance(e, kind)]

    def results(self) -> dict[str, ev.ToolResultEvent]:
        return {e.id: e for e in self.of(ev.ToolResultEvent)}

    def notices(self, *kinds: str) -> list[str]:
        return [e.message for e in self.of(ev.Notice) if not kinds or e.kind in kinds]

    def offered(self, request: int) -> list[str]:
        return [t["name"] for t in self.provider.requests[request].tools]


# --------------------------------------------------------------------------- listing


def time_and_git_config(marker: str, repo: Path) -> str:
    """A trusted mcp-server-time and an untrusted mcp-server-git on `repo`, tagged with `marker`
    so the test can find (and end) exactly its own server processes."""
    return f"""
[mcp.servers.time]
command = {json.dumps(PY)}
args = {json.dumps(TIME_ARGS)}
trusted = true
env = {{ {marker} = "1" }}

[mcp.servers.git]
command = {json.dumps(PY)}
args = ["-m", "mcp_server_git", "--repository", {json.dumps(str(repo))}]
env = {{ {marker} = "1" }}
"""


def test_mcp_list_shows_servers_state_tools_effects_and_claims(tmp_path: Path, marker: str,
                                                                 repo: Path) -> None:
    cfg = tmp_path / "cfg.toml"
    cfg.write_text(time_and_git_config(marker, repo) + """
[mcp.servers.off]
command = "unused"
enabled = false
""")
    out = subprocess.run([PY, "-m", "agent_cli", "mcp", "list", "--config", str(cfg)],
                         capture_output=True, text=True, timeout=60,
                         env={**os.environ, "COLUMNS": "200"})
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    row = {ln.split()[0]: ln.split() for ln in lines if ln.strip().startswith(("time__", "git__"))}
    assert row["time__get_current_time"][1:3] == ["read", "offered"]  # trusted + readOnlyHint
    assert row["git__git_status"][1] == "write"  # read-only claim, but the server is untrusted
    assert row["git__git_reset"][1] == "write"
    reset_line = next(ln for ln in lines if "git__git_reset" in ln)
    assert "destructive" in reset_line and "(unverified)" in reset_line
    assert any(ln.startswith("time") and "ready" in ln and "trusted" in ln for ln in lines)
    assert any(ln.startswith("off") and "disabled" in ln for ln in lines)
    assert "not pinned yet" in out.stdout  # listing only looks: it pins nothing
    assert not (Path(os.environ["AGENT_CLI_HOME"]) / "mcp-pins.json").exists()
    assert wait_gone(marker) == []


# --------------------------------------------------------------------------- read calls


def test_trusted_read_only_tool_runs_without_a_panel(workspace: Path, marker: str) -> None:
    run = Run(workspace, {"time": time_server(marker, trusted=True)},
              [calls(use("t1", "time__get_current_time", {"timezone": "Europe/Paris"})),
               done()])
    try:
        assert run.send().reason == "end_turn"
        result = run.results()["t1"]
        assert not result.is_error
        assert '"timezone": "Europe/Paris"' in result.content
        assert run.approver.seen == []  # no panel at all
        approval = run.of(ev.Approval)[0]
        assert (approval.decision, approval.by, approval.effect) == ("approved", "policy", "read")
        spec = next(t for t in run.provider.requests[0].tools
                    if t["name"] == "time__get_current_time")
        assert spec["input_schema"]["required"] == ["timezone"]  # the server's schema, as given
        assert any("MCP server time ready" in n for n in run.notices("mcp"))
    finally:
        run.close()
    assert wait_gone(marker) == []


def test_untrusted_server_read_only_tool_asks_first(workspace: Path, marker: str) -> None:
    run = Run(workspace, {"time": time_server(marker)},
              [calls(use("t1", "time__get_current_time", {"timezone": "UTC"}),
                     use("t2", "time__get_current_time", {"timezone": "Asia/Tokyo"})),
               done()],
              answers=["n not now", "y"])
    try:
        run.send()
        assert [r.name for r in run.approver.seen] == ["time__get_current_time"] * 2
        panel = run.approver.seen[0]
        assert panel.effect == "write"
        assert panel.source == "mcp:time"
        assert "untrusted" in panel.panel_extra["server"]
        assert panel.panel_extra["server says"].startswith("read-only")
        assert panel.panel_extra["server says"].endswith("(unverified)")
        assert panel.args == {"timezone": "UTC"}
        res = run.results()
        assert res["t1"].is_error and "denied" in res["t1"].content and "not now" in res[
            "t1"].content
        assert not res["t2"].is_error and "Asia/Tokyo" in res["t2"].content
    finally:
        run.close()


# --------------------------------------------------------------------------- git: destructive


def test_git_reset_denied_then_approved(workspace: Path, marker: str, repo: Path) -> None:
    args = {"repo_path": str(repo)}
    run = Run(workspace, {"git": git_server(marker, repo)},
              [calls(use("r1", "git__git_reset", args)), done("left as is"),
               calls(use("r2", "git__git_reset", args)), done("reset")],
              answers=["n keep my staged work", "y"])
    try:
        run.send("reset please")
        denied = run.results()["r1"]
        assert denied.is_error and "keep my staged work" in denied.content
        assert staged(repo) == ["a.txt"]  # nothing ran
        panel = run.approver.seen[0]
        assert panel.name == "git__git_reset" and panel.effect == "write"
        assert "destructive" in panel.panel_extra["server says"]
        assert "not destructive" not in panel.panel_extra["server says"]

        run.send("ok, do it")
        approved = run.results()["r2"]
        assert not approved.is_error, approved.content
        assert staged(repo) == []  # the staged change was reset
        decisions = [(a.id, a.decision, a.by) for a in run.of(ev.Approval)]
        assert decisions == [("r1", "denied", "user"), ("r2", "approved", "user")]
    finally:
        run.close()


# --------------------------------------------------------------------------- bad calls


def test_unknown_tools_become_error_results(workspace: Path, marker: str) -> None:
    """A name the registry does not know is refused by the loop; a name the server does not
    know (a JSON-RPC -32602 error) comes back as an is_error result too."""
    run = Run(workspace, {"time": time_server(marker, trusted=True)},
              [calls(use("u1", "time__no_such_tool", {}), use("u2", "time__ghost", {}),
                     use("u3", "time__get_current_time", {"timezone": "UTC"})),
               done()])
    try:
        run.hub.wait_ready()  # type: ignore[union-attr]
        hub: MCPHub = run.hub  # type: ignore[assignment]
        run.session.registry.add(Tool(
            name="time__ghost", description="stale", args=EmptyArgs,
            run=lambda a, ctx: hub.call("time", "ghost", dict(a), ctx), effect="read",
            input_schema={"type": "object"}, validate_raw=lambda raw: raw))
        run.send()
        res = run.results()
        assert res["u1"].is_error and "Unknown tool" in res["u1"].content
        assert [e.id for e in run.of(ev.ToolInvalid)] == ["u1"]
        assert res["u2"].is_error
        assert "-32602" in res["u2"].content and "ghost" in res["u2"].content
        assert not res["u3"].is_error  # the server is still fine after both
    finally:
        run.close()


def test_invalid_arguments_are_refused_before_the_server_sees_them(workspace: Path,
                                                                    marker: str) -> None:
    run = Run(workspace, {"time": time_server(marker, trusted=True)},
              [calls(use("b1", "time__get_current_time", {"timezone": 5}),
                     use("b2", "time__convert_time", {"source_timezone": "UTC"})),
               done()])
    try:
        run.send()
        res = run.results()
        assert res["b1"].is_error
        assert "Invalid arguments for time__get_current_time" in res["b1"].content
        assert "5 is not of type 'string'" in res["b1"].content
        assert res["b2"].is_error
        assert "'time' is a required property" in res["b2"].content
        assert "'target_timezone' is a required property" in res["b2"].content
        assert {e.id for e in run.of(ev.ToolInvalid)} == {"b1", "b2"}
        assert not run.of(ev.ToolStarted)
        errlog = run.hub.servers["time"].errlog  # type: ignore[union-attr]
        # The server logs every call it rejects; it logged none of ours ...
        assert "rejected" not in errlog.read_text()
        # ... and the check can fail: the same bad call sent straight to it is logged.
        out = run.hub.call("time", "get_current_time", {"timezone": 5},  # type: ignore[union-attr]
                           ToolContext(workspace=workspace, timeout_s=30, output_cap=10_000))
        assert out.is_error  # the server's own isError result comes back as an error
        end = time.monotonic() + 60
        while "rejected" not in errlog.read_text() and time.monotonic() < end:
            time.sleep(0.05)
        assert "rejected" in errlog.read_text()
    finally:
        run.close()


# --------------------------------------------------------------------------- lifecycle


def test_server_killed_mid_session_gives_error_result_and_session_goes_on(
        workspace: Path, marker: str) -> None:
    step = {"n": 0}

    def script(request: ModelRequest) -> dict[str, Any]:
        step["n"] += 1
        n = step["n"]
        if n == 1:
            return calls(use("k1", "time__get_current_time", {"timezone": "UTC"}))
        if n == 2:
            for pid in procs_with(marker):
                os.kill(pid, signal.SIGKILL)
            return calls(use("k2", "time__get_current_time", {"timezone": "UTC"}))
        if n == 3:
            return calls(use("k3", "multiply", {"a": 6, "b": 7}))
        return done()

    run = Run(workspace, {"time": time_server(marker, trusted=True)}, script)
    try:
        assert run.send().reason == "end_turn"
        res = run.results()
        assert not res["k1"].is_error
        assert res["k2"].is_error
        assert "time" in res["k2"].content
        assert "Traceback" not in res["k2"].content
        assert res["k3"].content == "42"
        assert "time__get_current_time" in run.offered(1)
        assert "time__get_current_time" not in run.offered(2)  # its tools were removed
        stopped = [n for n in run.notices("mcp_error") if "MCP server time stopped" in n]
        assert len(stopped) == 1
        assert run.send("again").reason == "end_turn"  # the session goes on
    finally:
        run.close()
    assert wait_gone(marker) == []


def test_servers_that_never_start_give_one_line_each(workspace: Path, marker: str) -> None:
    servers = {
        "ghost": MCPServer(command="/nonexistent/agent-cli-no-such-server"),
        "quitter": MCPServer(command=PY, args=["-c", "import sys; sys.exit(3)"]),
        "sleeper": MCPServer(command=PY, args=["-c", "import time; time.sleep(120)"],
                             env={marker: "1"}, startup_timeout_s=1.0, mode="legacy"),
        "time": time_server(marker, trusted=True),
    }
    run = Run(workspace, servers,
              [calls(use("m1", "multiply", {"a": 2, "b": 3}),
                     use("m2", "time__get_current_time", {"timezone": "UTC"})), done()])
    try:
        assert run.send().reason == "end_turn"
        errors = run.notices("mcp_error")
        for name in ("ghost", "quitter", "sleeper"):
            mine = [n for n in errors if n.startswith(f"MCP server {name} ")]
            assert len(mine) == 1, errors
            assert "could not start" in mine[0] and "\n" not in mine[0]
            assert "Traceback" not in mine[0]
        assert "command not found" in next(n for n in errors if "ghost" in n)
        assert "exited" in next(n for n in errors if "quitter" in n)
        assert "within 1 s" in next(n for n in errors if "sleeper" in n)
        res = run.results()
        assert res["m1"].content == "6" and not res["m2"].is_error  # the rest works
        states = {s.name: s.state for s in run.hub.snapshot()}  # type: ignore[union-attr]
        assert states == {"ghost": "failed", "quitter": "failed", "sleeper": "failed",
                          "time": "ready"}
    finally:
        run.close()
    assert wait_gone(marker) == []  # the sleeper was stopped too


# --------------------------------------------------------------------------- pinning


def _change_pinned_description(home: Path, server: str, tool: str) -> None:
    """Make the pin say the tool used to look different (as if the server changed since)."""
    pins_path = home / "mcp-pins.json"
    pins = json.loads(pins_path.read_text())
    entry = pins["servers"][server]["tools"][tool]
    entry["definition"]["description"] = "Get the current time. (old wording)"
    entry["hash"] = definition_hash(entry["definition"])
    pins_path.write_text(json.dumps(pins))


def test_changed_tool_definition_is_kept_out_until_accepted(workspace: Path, marker: str) -> None:
    from agent_cli.ui.mcp_repl import repl_mcp

    home = Path(os.environ["AGENT_CLI_HOME"])
    first = Run(workspace, {"time": time_server(marker, trusted=True)}, [done()])
    first.send()
    first.close()
    pins = json.loads((home / "mcp-pins.json").read_text())
    assert set(pins["servers"]["time"]["tools"]) == {"get_current_time", "convert_time"}

    _change_pinned_description(home, "time", "get_current_time")
    run = Run(workspace, {"time": time_server(marker, trusted=True)},
              [calls(use("p1", "time__get_current_time", {"timezone": "UTC"})), done(),
               calls(use("p2", "time__get_current_time", {"timezone": "UTC"})), done()])
    try:
        run.send()
        assert "time__get_current_time" not in run.offered(0)
        assert "time__convert_time" in run.offered(0)
        held = [n for n in run.notices("mcp_pin") if "time__get_current_time" in n]
        assert len(held) == 1
        assert "description" in held[0] and "(old wording)" in held[0]
        assert "mcp accept time" in held[0]
        assert run.results()["p1"].is_error  # not offered, so not callable

        shown = repl_mcp(run.session, "")  # /mcp
        from rich.console import Console

        console = Console(record=True, width=200, force_terminal=False)
        console.print(shown)
        text = console.export_text()
        assert "time__get_current_time" in text and "held" in text

        accepted = repl_mcp(run.session, "accept time")  # /mcp accept time
        console.print(accepted)
        assert "Accepted" in console.export_text()
        run.send()
        assert "time__get_current_time" in run.offered(2)
        assert not run.results()["p2"].is_error
    finally:
        run.close()
    pins = json.loads((home / "mcp-pins.json").read_text())
    assert "(old wording)" not in json.dumps(pins)  # the pin now holds the current definition


def test_mcp_accept_command_without_terminal_needs_yes(tmp_path: Path, workspace: Path,
                                                       marker: str) -> None:
    home = Path(os.environ["AGENT_CLI_HOME"])
    first = Run(workspace, {"time": time_server(marker, trusted=True)}, [done()])
    first.send()
    first.close()
    _change_pinned_description(home, "time", "get_current_time")
    cfg = tmp_path / "cfg.toml"
    cfg.write_text(f"[mcp.servers.time]\ncommand = {json.dumps(PY)}\n"
                   f"args = {json.dumps(TIME_ARGS)}\nenv = {{ {marker} = \"1\" }}\n")
    base = [PY, "-m", "agent_cli", "mcp", "accept", "time", "--config", str(cfg)]
    refused = subprocess.run(base, capture_output=True, text=True, timeout=60,
                             stdin=subprocess.DEVNULL)
    assert refused.returncode == 2
    assert "--yes" in refused.stderr
    assert "(old wording)" in refused.stdout  # it showed what changed
    assert "(old wording)" in (home / "mcp-pins.json").read_text()  # nothing accepted

    ok = subprocess.run([*base, "--yes"], capture_output=True, text=True, timeout=60,
                        stdin=subprocess.DEVNULL)
    assert ok.returncode == 0, ok.stderr
    assert "Accepted 1" in ok.stdout
    after = Run(workspace, {"time": time_server(marker, trusted=True)}, [done()])
    try:
        after.send()
        assert "time__get_current_time" in after.offered(0)
        assert after.notices("mcp_pin") == []
    finally:
        after.close()
    assert wait_gone(marker) == []


# --------------------------------------------------------------------------- agent-cli run


def test_agent_cli_run_with_mcp_servers_from_config(tmp_path: Path, workspace: Path,
                                                    marker: str, repo: Path) -> None:
    cfg = tmp_path / "cfg.toml"
    cfg.write_text(time_and_git_config(marker, repo))
    script = tmp_path / "script.json"
    script.write_text(json.dumps([
        calls(use("c1", "time__get_current_time", {"timezone": "UTC"}),
              use("c2", "git__git_reset", {"repo_path": str(repo)})),
        done("It is now."),
    ]))
    out = subprocess.run([PY, "-m", "agent_cli", "run", "what time is it", "--config", str(cfg),
                          "--script", str(script), "--workspace", str(workspace),
                          "--output", "jsonl"],
                         capture_output=True, text=True, timeout=90, stdin=subprocess.DEVNULL)
    assert out.returncode == 7, out.stderr  # finished, with a write call denied (exit 7)
    records = [json.loads(line) for line in out.stdout.splitlines()]
    results = {r["id"]: r for r in records if r["type"] == "tool_result"}
    assert not results["c1"]["is_error"] and '"timezone": "UTC"' in results["c1"]["content"]
    approvals = {r["id"]: (r["decision"], r["by"]) for r in records if r["type"] == "approval"}
    assert approvals == {"c1": ("approved", "policy"), "c2": ("denied", "policy")}
    assert results["c2"]["is_error"]  # no terminal: a write call is denied, never run
    assert staged(repo) == ["a.txt"]
    notices = [r["message"] for r in records if r["type"] == "notice"]
    assert any("MCP server time ready" in n for n in notices)
    assert "Traceback" not in out.stderr
    assert wait_gone(marker) == []  # shutdown left no server behind


def test_core_works_without_the_mcp_extra(tmp_path: Path, workspace: Path) -> None:
    """With `mcp` not importable, a configured server costs one clear sentence, nothing more."""
    cfg = tmp_path / "cfg.toml"
    cfg.write_text(f"[mcp.servers.time]\ncommand = {json.dumps(PY)}\n"
                   f"args = {json.dumps(TIME_ARGS)}\n")
    script = tmp_path / "script.json"
    script.write_text(json.dumps([calls(use("m", "multiply", {"a": 3, "b": 4})), done()]))
    code = ("import sys; sys.modules['mcp'] = None; from agent_cli.cli.main import main; "
            "sys.argv = ['agent-cli'] + sys.argv[1:]; main()")
    out = subprocess.run([PY, "-c", code, "run", "hi", "--config", str(cfg), "--script",
                          str(script), "--workspace", str(workspace), "--output", "jsonl"],
                         capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert out.returncode == 0, out.stderr
    records = [json.loads(line) for line in out.stdout.splitlines()]
    notices = [r["message"] for r in records if r["type"] == "notice"]
    assert len([n for n in notices if "pipx inject agent-cli-host mcp jsonschema" in n]) == 1
    assert [r["content"] for r in records if r["type"] == "tool_result"] == ["12"]
    listed = subprocess.run([PY, "-c", code, "mcp", "list", "--config", str(cfg)],
                            capture_output=True, text=True, timeout=60)
    assert listed.returncode == 1
    assert "pipx inject agent-cli-host mcp jsonschema" in listed.stderr
    assert "Traceback" not in listed.stderr


# --------------------------------------------------------------------------- timeouts, errors

SLOW_SERVER = '''
import os

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

server = MCPServer("slow")


@server.tool()
async def nap(seconds: float) -> str:
    """Sleep, then answer."""
    await anyio.sleep(seconds)
    return "rested"


@server.tool()
def fail() -> str:
    """Always fails (an isError result)."""
    raise ToolError("the disk is on fire")


@server.tool()
def where() -> str:
    """The server's working folder."""
    return os.getcwd()


server.run()
'''


@pytest.fixture
def slow_server(tmp_path: Path, marker: str) -> MCPServer:
    script = tmp_path / "slow_server.py"
    script.write_text(SLOW_SERVER)
    # A 3 s call timeout (an answer at once must come in within it on a loaded machine, beside
    # other tests), and the default (generous) start-up timeout: a loaded machine may take
    # several seconds to start a Python server, which must not make its tools "unknown".
    return MCPServer(command=PY, args=[str(script)], env={marker: "1"}, timeout_s=3.0,
                     trusted=True)


def test_timeouts_and_is_error_results_become_error_results(workspace: Path, marker: str,
                                                             slow_server: MCPServer) -> None:
    run = Run(workspace, {"slow": slow_server},
              [calls(use("s1", "slow__nap", {"seconds": 30}), use("s2", "slow__fail", {}),
                     use("s3", "slow__nap", {"seconds": 0}), use("s4", "slow__where", {})),
               done()],
              answers=["y", "y", "y", "y"])  # no annotations: every tool asks
    try:
        assert run.send().reason == "end_turn"
        res = run.results()
        assert res["s1"].is_error and "did not answer within 3 s" in res["s1"].content
        assert res["s2"].is_error and "the disk is on fire" in res["s2"].content
        assert not res["s3"].is_error and res["s3"].content == "rested"  # still usable
        where = Path(res["s4"].content)  # cwd defaults to a neutral empty folder
        assert where != workspace.resolve() and workspace.resolve() not in where.parents
        assert [r.panel_extra["server says"].split(",")[0] for r in run.approver.seen] == [
            "may change things (default)"] * 4
    finally:
        run.close()
    assert wait_gone(marker) == []


def test_cancel_reaches_a_running_mcp_call(workspace: Path, marker: str,
                                           slow_server: MCPServer) -> None:
    run = Run(workspace, {"slow": slow_server.model_copy(update={"timeout_s": 30.0})},
              [done()])
    try:
        run.send()
        ctx = ToolContext(workspace=workspace, timeout_s=30, output_cap=10_000)
        threading.Timer(0.3, ctx.cancel.set).start()
        out = run.hub.call("slow", "nap", {"seconds": 30}, ctx)  # type: ignore[union-attr]
        assert out.is_error and "cancelled" in out.content
        again = run.hub.call("slow", "nap", {"seconds": 0},  # type: ignore[union-attr]
                             ToolContext(workspace=workspace, timeout_s=30, output_cap=10_000))
        assert (again.is_error, again.content) == (False, "rested")
    finally:
        run.close()


def test_mcp_list_without_servers_says_how_to_add_one(tmp_path: Path) -> None:
    out = subprocess.run([PY, "-m", "agent_cli", "mcp", "list"], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0
    assert "[mcp.servers.NAME]" in out.stdout
