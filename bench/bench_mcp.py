"""MCP costs: time to the prompt with two servers configured, time until their tools are ready,
shutdown, and the per-call overhead of an MCP tool against a built-in one.

    python bench/bench_mcp.py [--runs 5] [--calls 200]

1. `agent-cli chat` in a pseudo-terminal, with no MCP server and with two (mcp-server-time and
   mcp-server-git on a temporary repository): wall time from spawn to the prompt, and from a
   Ctrl-D typed 3 s later to exit (ready servers stopped, no process left). Servers start in
   the background, so the prompt should not wait for them.
2. In process: from `start_hub()` (servers start) to both servers ready (tools listed, pinned).
3. In process, the real Session/Loop: N model requests each asking for one call, a built-in
   `multiply` vs the trusted `time__get_current_time` (both read: no panel); per-call time and the
   difference. Also the bare bridge call (`MCPHub.call`) alone.

4. In process: start_hub() with the four npm reference servers configured (everything,
   filesystem, memory, sequential-thinking; `npm ci --prefix tests/npm`): start_hub() returns /
   all four ready / close().
5. The bare bridge call of one tool (`echo` of tests/mcp/e2e/hostile_server.py) over stdio
   and over streamable HTTP (the same server on a loopback port).

Needs the mcp extra and the two servers (pip install mcp mcp-server-time mcp-server-git).
Figures only; nothing is asserted. Unix only (pty).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import pty
import select
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

PROMPT = "›".encode()
PY = sys.executable


def fmt(samples: list[float], unit: str = "s", scale: float = 1.0) -> str:
    vals = [s * scale for s in samples]
    return (f"median {statistics.median(vals):.3f} {unit}  (min {min(vals):.3f}, "
            f"max {max(vals):.3f}, n={len(vals)})")


def make_repo(folder: Path) -> Path:
    repo = folder / "repo"
    repo.mkdir()
    env = {**os.environ, "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@example.invalid",
           "GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@example.invalid"}
    subprocess.run(["git", "init", "-q", str(repo)], check=True, env=env)
    (repo / "a.txt").write_text("a\n")
    subprocess.run(["git", "-C", str(repo), "add", "."], check=True, env=env)
    subprocess.run(["git", "-C", str(repo), "commit", "-qm", "a"], check=True, env=env)
    return repo


def config_text(repo: Path) -> str:
    return (f"[mcp.servers.time]\ncommand = {json.dumps(PY)}\n"
            'args = ["-m", "mcp_server_time", "--local-timezone", "UTC"]\ntrusted = true\n\n'
            f"[mcp.servers.git]\ncommand = {json.dumps(PY)}\n"
            f'args = ["-m", "mcp_server_git", "--repository", {json.dumps(str(repo))}]\n')


def read_until(fd: int, needle: bytes, limit_s: float) -> bool:
    buf = b""
    end = time.monotonic() + limit_s
    while time.monotonic() < end:
        ready, _, _ = select.select([fd], [], [], 0.05)
        if not ready:
            continue
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            return False
        if not chunk:
            return False
        buf += chunk
        if needle in buf:
            return True
    return False


def chat_once(home: Path, workspace: Path, config: Path | None) -> tuple[float, float]:
    """Spawn-to-prompt and Ctrl-D-to-exit of `agent-cli chat` in a pty."""
    args = [PY, "-m", "agent_cli", "chat", "--script", str(REPO / "examples" /
                                                         "demo_script.json"),
            "--workspace", str(workspace)]
    if config is not None:
        args += ["--config", str(config)]
    env = {**os.environ, "AGENT_CLI_HOME": str(home), "PROMPT_TOOLKIT_NO_CPR": "1",
           "TERM": "xterm-256color"}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    start = time.monotonic()
    pid, fd = pty.fork()
    if pid == 0:  # child
        os.chdir(REPO)
        os.execve(PY, args, env)
    try:
        if not read_until(fd, PROMPT, 30):
            raise RuntimeError("no prompt within 30 s")
        to_prompt = time.monotonic() - start
        time.sleep(3.0)  # let the servers come up, as they would while the user types
        stop = time.monotonic()
        os.write(fd, b"\x04")
        read_until(fd, b"\x00never", 20)  # drain until EOF
        os.waitpid(pid, 0)
        to_exit = time.monotonic() - stop
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        os.close(fd)
    return to_prompt, to_exit


def bench_prompt(runs: int, tmp: Path, repo: Path) -> None:
    cfg = tmp / "two.toml"
    cfg.write_text(config_text(repo))
    ws = tmp / "ws"
    ws.mkdir(exist_ok=True)
    print("1. agent-cli chat in a pty: spawn -> prompt, and Ctrl-D -> exit")
    for label, config in (("no MCP server ", None), ("two MCP servers", cfg)):
        prompts: list[float] = []
        exits: list[float] = []
        chat_once(tmp / "home-warm", ws, config)  # warm the .pyc files and the page cache
        for i in range(runs):
            p, e = chat_once(tmp / f"home-{i}", ws, config)
            prompts.append(p)
            exits.append(e)
        print(f"   {label}  to prompt: {fmt(prompts)}")
        print(f"   {label}  to exit:   {fmt(exits)}")


def bench_ready(runs: int, tmp: Path, repo: Path) -> None:
    from agent_cli.approval import ScriptedApprover
    from agent_cli.config import MCPServer, Settings
    from agent_cli.providers.scripted import ScriptedProvider
    from agent_cli.session import Session
    from agent_cli.tools.loader import load_tools
    from agent_cli.tools.mcp.hub import start_hub

    print("2. in process: start_hub() returns / both servers ready / close()")
    returns, ready, closes = [], [], []
    for i in range(runs):
        os.environ["AGENT_CLI_HOME"] = str(tmp / f"ready-home-{i}")
        servers = {
            "time": MCPServer(command=PY, args=["-m", "mcp_server_time"], trusted=True),
            "git": MCPServer(command=PY, args=["-m", "mcp_server_git", "--repository",
                                               str(repo)]),
        }
        registry, _ = load_tools([])
        session = Session(Settings(provider="scripted", mcp={"servers": servers}),
                          workspace=tmp, provider=ScriptedProvider([]), registry=registry,
                          approver=ScriptedApprover([]))
        t0 = time.monotonic()
        hub = start_hub(session.settings, session.registry, session.emit,
                        session_id=session.log_path.stem, workspace=tmp)
        returns.append(time.monotonic() - t0)
        assert hub is not None
        hub.wait_ready()
        ready.append(time.monotonic() - t0)
        t1 = time.monotonic()
        hub.close()
        session.close()
        closes.append(time.monotonic() - t1)
    print(f"   start_hub() returns: {fmt(returns, 'ms', 1000)}")
    print(f"   both ready:       {fmt(ready)}")
    print(f"   close():          {fmt(closes)}")


def bench_calls(calls: int, tmp: Path) -> None:
    from agent_cli.approval import ScriptedApprover
    from agent_cli.config import MCPServer, Settings
    from agent_cli.providers.base import ModelRequest
    from agent_cli.providers.scripted import FunctionProvider
    from agent_cli.session import Session
    from agent_cli.tools.base import ToolContext
    from agent_cli.tools.loader import load_tools

    os.environ["AGENT_CLI_HOME"] = str(tmp / "calls-home")
    servers = {"time": MCPServer(command=PY, args=["-m", "mcp_server_time"], trusted=True)}

    def turn(name: str, args: dict[str, Any]) -> float:
        count = {"n": 0}

        def fn(request: ModelRequest) -> dict[str, Any]:
            count["n"] += 1
            if count["n"] > calls:
                return {"content": [{"type": "text", "text": "done"}], "stop_reason": "end_turn"}
            return {"content": [{"type": "tool_use", "id": f"c{count['n']}", "name": name,
                                 "input": args}], "stop_reason": "tool_use"}

        session.provider = session.loop.provider = FunctionProvider(fn)
        session.loop.limits.max_turns = calls + 5
        t0 = time.monotonic()
        session.send("go")
        return (time.monotonic() - t0) / calls

    registry, _ = load_tools([])
    session = Session(Settings(provider="scripted", mcp={"servers": servers}), workspace=tmp,
                      provider=FunctionProvider(lambda r: {"content": []}), registry=registry,
                      approver=ScriptedApprover([]), start_mcp=True)
    hub = session.mcp
    assert hub is not None
    session.start()
    hub.wait_ready()
    hub.sync()
    print(f"3. per call through the real loop ({calls} requests, one read call each, log on)")
    builtin, mcp = [], []
    for _ in range(3):
        builtin.append(turn("multiply", {"a": 6, "b": 7}))
        mcp.append(turn("time__get_current_time", {"timezone": "UTC"}))
    print(f"   built-in multiply:        {fmt(builtin, 'ms', 1000)}")
    print(f"   MCP time__get_current_time: {fmt(mcp, 'ms', 1000)}")
    extra = (statistics.median(mcp) - statistics.median(builtin)) * 1000
    print(f"   MCP overhead per call:    {extra:.3f} ms")
    ctx = ToolContext(workspace=tmp, timeout_s=30, output_cap=30_000)
    bare = []
    for _ in range(calls):
        t0 = time.monotonic()
        hub.call("time", "get_current_time", {"timezone": "UTC"}, ctx)
        bare.append(time.monotonic() - t0)
    print(f"   bare MCPHub.call:         {fmt(bare, 'ms', 1000)}")
    session.close()


def bench_four(runs: int, tmp: Path) -> None:
    from agent_cli.approval import ScriptedApprover
    from agent_cli.config import MCPServer, Settings
    from agent_cli.providers.scripted import ScriptedProvider
    from agent_cli.session import Session
    from agent_cli.tools.loader import load_tools
    from agent_cli.tools.mcp.hub import start_hub

    bin_dir = REPO / "tests" / "npm" / "node_modules" / ".bin"
    names = ("everything", "filesystem", "memory", "sequential-thinking")
    if not all((bin_dir / f"mcp-server-{n}").exists() for n in names):
        print("4. skipped: run `npm ci --prefix tests/npm` for the four reference servers")
        return
    print("4. in process, four npm reference servers: start_hub() returns / all ready / close()")
    returns, ready, closes = [], [], []
    for i in range(runs):
        os.environ["AGENT_CLI_HOME"] = str(tmp / f"four-home-{i}")
        servers = {n: MCPServer(command=str(bin_dir / f"mcp-server-{n}"), mode="legacy",
                                args=[str(tmp)] if n == "filesystem" else [],
                                env={"MEMORY_FILE_PATH": str(tmp / f"mem-{i}.jsonl")})
                   for n in names}
        registry, _ = load_tools([])
        session = Session(Settings(provider="scripted", mcp={"servers": servers}),
                          workspace=tmp, provider=ScriptedProvider([]), registry=registry,
                          approver=ScriptedApprover([]))
        t0 = time.monotonic()
        hub = start_hub(session.settings, session.registry, session.emit,
                        session_id=session.log_path.stem, workspace=tmp)
        returns.append(time.monotonic() - t0)
        assert hub is not None
        hub.wait_ready()
        ready.append(time.monotonic() - t0)
        states = {s.name: s.state for s in hub.snapshot()}
        t1 = time.monotonic()
        hub.close()
        session.close()
        closes.append(time.monotonic() - t1)
    print(f"   states: {states}")
    print(f"   start_hub() returns: {fmt(returns, 'ms', 1000)}")
    print(f"   all four ready:   {fmt(ready)}")
    print(f"   close():          {fmt(closes)}")


def bench_http(calls: int, tmp: Path) -> None:
    import socket

    from agent_cli.config import MCPServer
    from agent_cli.tools.base import ToolContext
    from agent_cli.tools.mcp.hub import MCPHub
    from agent_cli.tools.registry import Registry

    server = REPO / "tests" / "mcp" / "e2e" / "hostile_server.py"
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    proc = subprocess.Popen([PY, str(server), "http", str(port)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    try:
        end = time.monotonic() + 60
        while time.monotonic() < end:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.05)
        hub = MCPHub({"local": MCPServer(command=PY, args=[str(server)], mode="legacy"),
                      "web": MCPServer(url=f"http://127.0.0.1:{port}/mcp", mode="legacy")},
                     Registry(), None, home=tmp / "http-home", session_id="bench")
        hub.start()
        hub.wait_ready()
        ctx = ToolContext(workspace=tmp, timeout_s=30, output_cap=30_000)
        print(f"5. one bare call of echo ({calls} calls each): stdio vs streamable HTTP")
        for name in ("local", "web"):
            times = []
            for _ in range(calls):
                t0 = time.monotonic()
                out = hub.call(name, "echo", {"text": "x"}, ctx)
                times.append(time.monotonic() - t0)
                assert not out.is_error, out.content
            label = "stdio" if name == "local" else "http "
            print(f"   {label}: {fmt(times, 'ms', 1000)}")
        hub.close()
    finally:
        proc.terminate()
        proc.wait(10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--only", choices=["four", "http"], help="run one new part only")
    opts = parser.parse_args()
    if opts.only:
        with tempfile.TemporaryDirectory(prefix="bench-mcp-") as d:
            (bench_four if opts.only == "four" else bench_http)(
                opts.runs if opts.only == "four" else opts.calls, Path(d))
        return
    with tempfile.TemporaryDirectory(prefix="bench-mcp-") as d:
        tmp = Path(d)
        repo = make_repo(tmp)
        bench_prompt(opts.runs, tmp, repo)
        bench_ready(opts.runs, tmp, repo)
        bench_calls(opts.calls, tmp)
        bench_four(opts.runs, tmp)
        bench_http(opts.calls, tmp)


if __name__ == "__main__":
    main()
