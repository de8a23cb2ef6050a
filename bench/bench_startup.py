"""Start-up time: `agent-cli --help`, and the time until the REPL prompt appears in a terminal.

    python bench/bench_startup.py [--runs 10] [--profile]

1. `agent-cli --help` wall time (the console script of this Python's environment, or
   `python -m agent_cli` when there is none): median, min, max of N runs.
2. `agent-cli chat --script examples/demo_script.json` in a pseudo-terminal: wall time from
   spawning to the prompt character appearing (then Ctrl-D), N runs. Also, from the same runs:
   when the line editor was live (prompt-toolkit switched bracketed paste on) and when the
   session was ready (its banner printed). Since the prompt is drawn before the session is built
   (ui/startup.py), these three differ; before, they came together.
3. Key echo: a key written to the pty at t=0 (right after spawning, before anything is drawn:
   a person types as soon as they press Enter) and one written when the first prompt character
   shows; the time until that key is echoed after the prompt on the pty's output. The same for
   `llm chat` (Simon Willison's CLI, when installed in this Python's environment: "llm not
   installed" otherwise) in the same rounds, and `python -c pass` as the floor. Goal (issue 32):
   the first key echoes within 0.30 s of starting `agent-cli chat`. Two more rows switch the
   second path off in the child (a patch before `main()` runs): the frame drawn only after typer
   parsed the command line, and the one path (no frame: the prompt after the session is built).
4. Which heavy modules `import agent_cli.cli.app` pulls in (anthropic and mcp must not be among
   them).
5. With --profile: `python -X importtime` of both paths, the biggest imports by cumulative time.

The prompt runs are interleaved with `python -c pass` (the floor: starting the interpreter), and
the ratio to it is printed. `--before TREE` runs the chat of another checkout (TREE on
PYTHONPATH, the same interpreter and packages) in the same rounds, for a before/after. Goals
(issue 21): --help under 0.08 s, prompt under 0.25 s and at most 15x `python -c pass`. Figures
only; nothing is asserted (the tests assert behaviour). Standard library only; Unix (it needs
a pty).
"""

from __future__ import annotations

import argparse
import os
import pty
import resource
import select
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SCRIPT = REPO / "examples" / "demo_script.json"
DEMO_WORKSPACE = REPO / "examples" / "demo-workspace"
PROMPT = "›".encode()
EDITOR_LIVE = b"\x1b[?2004h"
"""prompt-toolkit turns bracketed paste on when its prompt starts: the line editor is live."""
READY = b"Ctrl-D to leave."
"""The end of the banner, printed once the session is built and started."""
GOAL_HELP_S = 0.08
GOAL_PROMPT_S = 0.25
GOAL_PROMPT_RATIO = 15.0
GOAL_ECHO_S = 0.30
KEY = b"Q"
"""The key typed: in no prompt, and not before the prompt in either program's output."""
LLM_PROMPT = b"> "
HEAVY = ("anthropic", "mcp", "httpx", "httpx2", "prompt_toolkit", "rich", "pydantic", "typer")


def _chunks(fd: int, deadline: float) -> Iterator[bytes]:
    """What the pty prints, as it comes, until it closes or `deadline` (perf_counter) passes."""
    while time.perf_counter() < deadline:
        if not select.select([fd], [], [], 0.5)[0]:
            continue
        try:
            data = os.read(fd, 65536)
        except OSError:
            data = b""
        if not data:
            return
        yield data

def help_command() -> list[str]:
    script = Path(sys.executable).parent / "agent-cli"
    if script.exists():
        return [str(script), "--help"]
    found = shutil.which("agent-cli")
    return [found, "--help"] if found else [sys.executable, "-m", "agent_cli", "--help"]


def base_env(home: Path, bytecode: bool) -> dict[str, str]:
    """The children's environment. With `bytecode`, .pyc files are written and used, as after a
    `pip install` (which compiles them). Without it none are written, so a module that has no
    .pyc yet (a fresh checkout, plugin folders) is compiled from source on every start: what
    PYTHONDONTWRITEBYTECODE=1 in a sandbox silently measures."""
    env = dict(os.environ)
    env.update(AGENT_CLI_HOME=str(home), PROMPT_TOOLKIT_NO_CPR="1", TERM="xterm-256color")
    for var in ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "PYTHONPROFILEIMPORTTIME"):
        env.pop(var, None)
    if bytecode:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
    else:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def summary(label: str, samples: list[tuple[float, float]], goal: float | None = None) -> str:
    """Wall-time median/min/max, and the median CPU time (user+sys) of the child: on a shared
    machine the wall time swings with the load, the CPU time much less."""
    walls = [w for w, _ in samples]
    med = statistics.median(walls)
    cpu = statistics.median(c for _, c in samples)
    line = (f"{label:<30} median {med * 1000:6.1f} ms  min {min(walls) * 1000:6.1f} ms  "
            f"max {max(walls) * 1000:6.1f} ms  cpu {cpu * 1000:6.1f} ms  (n={len(walls)})")
    if goal is not None:
        line += f"  goal < {goal * 1000:.0f} ms: {'met' if med < goal else 'MISSED'}"
    return line


def children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def time_help(runs: int, env: dict[str, str]) -> list[tuple[float, float]]:
    cmd = help_command()
    out: list[tuple[float, float]] = []
    subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, check=True)  # warm the caches
    for _ in range(runs):
        cpu0 = children_cpu()
        t0 = time.perf_counter()
        subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, check=True)
        out.append((time.perf_counter() - t0, children_cpu() - cpu0))
    return out


def time_pass(env: dict[str, str]) -> tuple[float, float]:
    """`python -c pass`: wall and CPU seconds (the interpreter's own start)."""
    cpu0 = children_cpu()
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], env=env, check=True)
    return time.perf_counter() - t0, children_cpu() - cpu0


def chat_argv(workspace: Path, *python_flags: str) -> list[str]:
    return [sys.executable, *python_flags, "-m", "agent_cli", "chat", "--script", str(SCRIPT),
            "--workspace", str(workspace)]


@dataclass
class PromptTimes:
    prompt: float
    """Seconds from fork to the prompt character on screen."""
    cpu: float
    """CPU seconds the child had used by then."""
    editor: float
    """Seconds to the line editor being live (bracketed paste on)."""
    ready: float
    """Seconds to the session's banner."""


def time_prompt_once(workspace: Path, env: dict[str, str], stderr_file: Path | None = None,
                     *python_flags: str) -> PromptTimes:
    """Fork a chat in a pty and wait for its prompt, its live line editor and its banner."""
    argv = chat_argv(workspace, *python_flags)
    t0 = time.perf_counter()
    pid, fd = pty.fork()
    if pid == 0:
        try:
            os.chdir(workspace)
            if stderr_file is not None:
                err = os.open(stderr_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
                os.dup2(err, 2)
            os.execve(sys.executable, argv, env)
        finally:
            os._exit(127)
    seen = b""
    marks: dict[bytes, float] = {}
    cpu_at_prompt: float | None = None
    deadline = t0 + 30
    try:
        for data in _chunks(fd, deadline):
            if len(marks) >= 3:
                break
            seen += data
            now = time.perf_counter() - t0
            for mark in (PROMPT, EDITOR_LIVE, READY):
                if mark not in marks and mark in seen:
                    marks[mark] = now
                    if mark == PROMPT:
                        cpu_at_prompt = proc_cpu(pid)
        end = time.perf_counter() + 10
        if READY in marks:  # the editor's own prompt after the banner, so Ctrl-D lands there
            while PROMPT not in seen.rsplit(READY, 1)[1] and time.perf_counter() < end:
                ready, _, _ = select.select([fd], [], [], 0.2)
                if ready:
                    try:
                        seen += os.read(fd, 65536)
                    except OSError:
                        break
        os.write(fd, b"\x04")
        while time.perf_counter() < end:  # let it exit on its own (it writes its log)
            ready, _, _ = select.select([fd], [], [], 0.2)
            if ready:
                try:
                    if not os.read(fd, 65536):
                        break
                except OSError:
                    break
    finally:
        done, _, usage = os.wait4(pid, os.WNOHANG)
        if done == 0:
            os.kill(pid, signal.SIGTERM)
            _, _, usage = os.wait4(pid, 0)
        os.close(fd)
    if len(marks) < 3:
        tail = seen[-400:].decode("utf-8", "replace")
        raise SystemExit(f"the chat never showed its prompt and banner; last output:\n{tail}")
    if cpu_at_prompt is None:  # no /proc: the CPU time of the whole run, exit included
        cpu_at_prompt = usage.ru_utime + usage.ru_stime
    return PromptTimes(marks[PROMPT], cpu_at_prompt, marks[EDITOR_LIVE], marks[READY])


def time_echo_once(argv: list[str], env: dict[str, str], cwd: Path, prompt: bytes,
                   at_frame: bool) -> float:
    """Seconds from writing KEY to the pty until it shows after `prompt` in the output: KEY
    written right after the fork (`at_frame` False) or when `prompt` first shows."""
    t0 = time.perf_counter()
    pid, fd = pty.fork()
    if pid == 0:
        try:
            os.chdir(cwd)
            os.execve(argv[0], argv, env)
        finally:
            os._exit(127)
    typed_at: float | None = None
    if not at_frame:
        os.write(fd, KEY)
        typed_at = time.perf_counter()
    seen = b""
    try:
        for data in _chunks(fd, t0 + 60):
            seen += data
            at = seen.find(prompt)
            if at < 0:
                continue
            if typed_at is None:
                os.write(fd, KEY)
                typed_at = time.perf_counter()
                continue
            if KEY in seen[at:]:
                return time.perf_counter() - typed_at
    finally:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        os.close(fd)
    tail = seen[-300:].decode("utf-8", "replace")
    raise SystemExit(f"{argv[0]}: the key was never echoed after its prompt; last output:\n{tail}")


def llm_argv() -> list[str] | None:
    script = Path(sys.executable).parent / "llm"
    found = str(script) if script.exists() else shutil.which("llm")
    return [found, "chat", "-m", "gpt-4o-mini"] if found else None


def key_echo(runs: int, env: dict[str, str], root: Path, workspace: Path,
             before_env: dict[str, str] | None) -> None:
    """Part 3: key echo, agent-cli's chat (and --before's) against llm and the floor."""
    chat = [sys.executable, "-m", "agent_cli", "chat", "--provider", "scripted", "--script",
            str(SCRIPT), "--workspace", str(workspace)]
    llm = llm_argv()
    llm_env = dict(env, LLM_USER_PATH=str(root / "llm"), OPENAI_API_KEY="not-used")
    words = chat[3:]
    no_early = [sys.executable, "-c", "import agent_cli.cli.main as m; m._early_prompt = "
                "lambda args: None; m.main()", *words]
    one_path = [sys.executable, "-c", "import agent_cli.cli.main as m, agent_cli.cli.chat as c; "
                "m._early_prompt = lambda args: None; c._prompt_first = lambda *a: False; "
                "m.main()", *words]
    programs: list[tuple[str, list[str], dict[str, str], bytes]] = [
        ("agent-cli chat", chat, env, PROMPT),
        ("  frame after typer parses", no_early, env, PROMPT),
        ("  one path (prompt after session)", one_path, env, PROMPT)]
    if before_env is not None:
        programs.append(("agent-cli chat (before)", chat, before_env, PROMPT))
    if llm is not None:
        programs.append(("llm chat", llm, llm_env, LLM_PROMPT))
    for _name, argv, penv, prompt in programs:  # warm-up: bytecode and file caches
        time_echo_once(argv, penv, workspace, prompt, at_frame=False)
    got: dict[tuple[str, bool], list[float]] = {}
    floors: list[float] = []
    for _ in range(runs):
        for name, argv, penv, prompt in programs:
            for at_frame in (False, True):
                got.setdefault((name, at_frame), []).append(
                    time_echo_once(argv, penv, workspace, prompt, at_frame))
        floors.append(time_pass(env)[0])
    floor = statistics.median(floors)
    print(f"key echo (pty; floor python -c pass median {floor * 1000:.1f} ms, n={runs}):")
    if llm is None:
        print("  llm not installed (pip install llm into this environment to compare)")
    for (name, at_frame), times in got.items():
        med = statistics.median(times)
        when = "at the first frame" if at_frame else "at t=0"
        line = (f"  {name + ', key ' + when:<44} median {med * 1000:6.1f} ms  min "
                f"{min(times) * 1000:6.1f}  max {max(times) * 1000:6.1f}  = {med / floor:4.1f}x "
                "python -c pass")
        if llm is not None and name != "llm chat":
            peer = statistics.median(got[("llm chat", at_frame)])
            line += f", {med / peer:.2f}x llm" if peer > 0.01 else \
                f", llm {peer * 1000:.1f} ms"
        if not at_frame and name == "agent-cli chat":
            verdict = "met" if med <= GOAL_ECHO_S else "MISSED"
            line += f"; goal <= {GOAL_ECHO_S * 1000:.0f} ms: {verdict}"
        print(line)


def proc_cpu(pid: int) -> float | None:
    """CPU seconds (user+sys) a running process has used so far, from /proc (Linux)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def heavy_modules(env: dict[str, str]) -> list[str]:
    code = ("import sys, agent_cli.cli.app; "
            f"print(' '.join(m for m in {HEAVY!r} if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True)
    return out.stdout.split()


def parse_importtime(text: str) -> list[tuple[int, int, str]]:
    """(self us, cumulative us, name) from `python -X importtime` output."""
    rows: list[tuple[int, int, str]] = []
    for line in text.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        self_us, cum_us, name = line[len("import time:"):].split("|", 2)
        rows.append((int(self_us), int(cum_us), name.rstrip()))
    return rows


def print_profile(title: str, text: str, top: int = 15) -> None:
    rows = parse_importtime(text)
    print(f"\n{title}: biggest imports by cumulative time (ms; nested names indented)")
    for self_us, cum_us, name in sorted(rows, key=lambda r: -r[1])[:top]:
        print(f"  {cum_us / 1000:8.1f} cum  {self_us / 1000:7.1f} self  {name}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--profile", action="store_true",
                        help="also show python -X importtime for --help and for the chat start")
    parser.add_argument("--before", metavar="TREE",
                        help="another checkout (e.g. `git archive main | tar -x -C TREE`) whose "
                        "chat is measured in the same rounds")
    parser.add_argument("--no-bytecode", action="store_true",
                        help="write no .pyc files (PYTHONDONTWRITEBYTECODE=1); modules that "
                        "have none are compiled on every start")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="agent-cli-bench-") as tmp:
        root = Path(tmp)
        env = base_env(root / "home", bytecode=not args.no_bytecode)
        workspace = root / "ws"
        shutil.copytree(DEMO_WORKSPACE, workspace)
        load = os.getloadavg()[0]
        print(f"python {sys.version.split()[0]} on {sys.platform}, {os.cpu_count()} CPUs, "
              f"load {load:.1f}; bytecode cache {'off' if args.no_bytecode else 'on'}; "
              f"{' '.join(help_command())}")
        helps = time_help(args.runs, env)
        print(summary("agent-cli --help", helps, GOAL_HELP_S))
        before_env = dict(env, PYTHONPATH=str(Path(args.before).resolve())) if args.before \
            else None
        time_prompt_once(workspace, env)  # warm-up (bytecode caches, file cache)
        if before_env is not None:
            time_prompt_once(workspace, before_env)
        runs: dict[str, list[PromptTimes]] = {"after": [], "before": []}
        floors: list[tuple[float, float]] = []
        for _ in range(args.runs):  # interleaved with the floor, so load hits both alike
            runs["after"].append(time_prompt_once(workspace, env))
            floors.append(time_pass(env))
            if before_env is not None:
                runs["before"].append(time_prompt_once(workspace, before_env))
        print(summary("python -c pass (floor)", floors))
        floor_wall = statistics.median(w for w, _ in floors)
        floor_cpu = statistics.median(c for _, c in floors)
        for name, times in runs.items():
            if not times:
                continue
            label = f"chat{' (' + name + ')' if before_env is not None else ''}"
            prompts = [(t.prompt, t.cpu) for t in times]
            print(summary(f"{label}: spawn to prompt (pty)", prompts, GOAL_PROMPT_S))
            editor = statistics.median(t.editor for t in times)
            ready = statistics.median(t.ready for t in times)
            print(f"{'':<30} line editor live: median {editor * 1000:6.1f} ms; session ready "
                  f"(banner): median {ready * 1000:6.1f} ms")
            wall_ratio = statistics.median(t.prompt for t in times) / floor_wall
            cpu_ratio = statistics.median(t.cpu for t in times) / floor_cpu
            print(f"{'':<30} prompt / python -c pass: {wall_ratio:.1f}x wall, {cpu_ratio:.1f}x "
                  f"CPU; goal <= {GOAL_PROMPT_RATIO:.0f}x: "
                  f"{'met' if wall_ratio <= GOAL_PROMPT_RATIO else 'MISSED'}; editor live "
                  f"{editor / floor_wall:.1f}x, ready {ready / floor_wall:.1f}x")
        key_echo(args.runs, env, root, workspace, before_env)
        heavy = heavy_modules(env)
        print(f"after `import agent_cli.cli.app`: anthropic loaded: {'anthropic' in heavy}; "
              f"mcp loaded: {'mcp' in heavy}; heavy modules present: {' '.join(heavy) or 'none'}")

        if args.profile:
            out = subprocess.run([sys.executable, "-X", "importtime", "-m", "agent_cli", "--help"],
                                 env=env, capture_output=True, text=True, check=True)
            print_profile("--help", out.stderr)
            err = root / "chat-importtime.txt"
            time_prompt_once(workspace, env, err, "-X", "importtime")
            print_profile("chat start", err.read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
