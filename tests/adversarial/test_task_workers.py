"""Family: `agent-cli eval --jobs N` inside a cloned benchmark repository.

The repository ships `multiprocessing.py` (and `json.py`, `pickle.py`): a worker process that
starts with the current folder first on sys.path imports it, unsandboxed, before any trial. The
workers must start isolated (`python -I`, a neutral current folder), so the planted module is
never run; and they must still get the credentials the parent has (the parent overwrites its own
initial environment block, so an inherited environment has no API key), checked against the
local fake Messages API.

agent-cli is started the way a user starts it: an entry script outside the clone (as the
console script is), with the clone as the current folder.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.fakes.anthropic_server import FakeAnthropic, text_reply
from tests.scripts import text

TIMEOUT = 240
KEY = "sk-ant-api03-" + "k" * 40


def launcher(root: Path) -> Path:
    """What `pip install` makes of `agent-cli = agent_cli.cli.main:main`."""
    folder = root / "bin"
    folder.mkdir()
    script = folder / "agent-cli"
    script.write_text("import sys\nfrom agent_cli.cli.main import main\nsys.exit(main())\n",
                      encoding="utf-8")
    return script


def hostile_clone(root: Path, marker: Path, tasks: str) -> Path:
    repo = root / "clone"
    (repo / "fixture").mkdir(parents=True)
    plant = (f"import pathlib\npathlib.Path({str(marker)!r}).open('a').write(__name__ + '\\n')\n"
             "raise SystemExit('planted module ran')\n")
    for name in ("multiprocessing.py", "json.py", "pickle.py", "sitecustomize.py"):
        (repo / name).write_text(plant, encoding="utf-8")
    (repo / "tasks.toml").write_text(tasks, encoding="utf-8")
    return repo


def run(root: Path, repo: Path, *args: str, env: dict[str, str] | None = None
        ) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    proc = subprocess.run([sys.executable, str(launcher(root)), "eval", "tasks.toml",
                           "--output", "json", "--log-dir", str(root / "logs"), *args],
                          capture_output=True, text=True, timeout=TIMEOUT, cwd=repo,
                          env=env or dict(os.environ))
    assert proc.stdout.strip(), proc.stderr
    return proc, json.loads(proc.stdout)


def test_a_planted_multiprocessing_module_never_runs(tmp_path: Path) -> None:
    marker = tmp_path / "MARKER"
    tasks = ('[[tasks]]\nid = "t"\nprompt = "p"\nworkspace = "fixture"\n'
             'script = "script.json"\nanswer = "^done"\n')
    repo = hostile_clone(tmp_path, marker, tasks)
    (repo / "script.json").write_text(json.dumps([text("done")]), encoding="utf-8")
    proc, report = run(tmp_path, repo, "--jobs", "2", "--trials", "2")
    assert not marker.exists(), f"a planted module ran: {marker.read_text()}"
    assert proc.returncode == 0, proc.stderr
    assert report["passed"] == 2, "the trials ran in the workers"


def test_workers_get_the_parents_credentials(tmp_path: Path) -> None:
    marker = tmp_path / "MARKER"
    tasks = ('[[tasks]]\nid = "live"\nprompt = "hello"\nworkspace = "fixture"\n'
             'answer = "^hi"\n')
    repo = hostile_clone(tmp_path, marker, tasks)
    with FakeAnthropic() as fake:
        for _ in range(3):
            fake.add(text_reply("hi there"))
        env = dict(os.environ, ANTHROPIC_API_KEY=KEY, ANTHROPIC_BASE_URL=fake.base_url)
        proc, report = run(tmp_path, repo, "--jobs", "2", "--trials", "3",
                           "--provider", "anthropic", "--model", "claude-test", env=env)
        # (the SDK sends the key as x-api-key or as a bearer token, by version)
        keys = [r.headers.get("x-api-key") or r.headers.get("authorization", "")
                .removeprefix("Bearer ") for r in fake.requests]
    assert proc.returncode == 0, proc.stderr + json.dumps(report)
    assert report["passed"] == 3
    assert keys == [KEY] * 3, "every worker sent the parent's key"
    assert KEY not in proc.stderr and not marker.exists()


def test_the_key_never_reaches_a_workers_command_line(tmp_path: Path) -> None:
    """argv is readable by every process of the machine (ps): the key goes through a pipe."""
    from agent_cli.eval.workers import worker_command, worker_env

    env, secret = worker_env({"ANTHROPIC_API_KEY": KEY, "HOME": "/home/u", "PATH": "/bin"})
    assert secret == {"ANTHROPIC_API_KEY": KEY}
    assert KEY not in json.dumps(env) and KEY not in json.dumps(worker_command())
    assert worker_command()[1] == "-I"


def test_ctrl_c_ends_a_parallel_suite_and_its_workers(tmp_path: Path) -> None:
    """Ctrl-C reaches the whole process group: no new trial starts, the workers end."""
    import signal
    import time

    marker = tmp_path / "MARKER"
    tasks = ('[[tasks]]\nid = "sleeps"\nprompt = "p"\nworkspace = "fixture"\n'
             'script = "script.json"\nanswers = "all"\n')
    repo = hostile_clone(tmp_path, marker, tasks)
    sleeper = [{"content": [{"type": "tool_use", "id": "toolu_s", "name": "run_command",
                             "input": {"command": ["sleep", "120"]}}],
                "stop_reason": "tool_use"}, text("slept")]
    (repo / "script.json").write_text(json.dumps(sleeper), encoding="utf-8")
    logs = tmp_path / "logs"
    proc = subprocess.Popen([sys.executable, str(launcher(tmp_path)), "eval", "tasks.toml",
                             "--jobs", "2", "--trials", "4", "--approve-task-answers",
                             "--log-dir", str(logs)], cwd=repo, start_new_session=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + TIMEOUT
        def started() -> int:  # trials whose sleep is running
            return sum(1 for log in logs.glob("*.jsonl")
                       if '"type":"tool_started"' in log.read_text(encoding="utf-8"))
        while started() < 2 and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.1)
        assert started() == 2, "both workers are in a trial"
        os.killpg(proc.pid, signal.SIGINT)
        _out, err = proc.communicate(timeout=TIMEOUT)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    assert len(list(logs.glob("*.jsonl"))) == 2, "no new trial started after Ctrl-C"
    assert not marker.exists()
