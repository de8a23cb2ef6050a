"""`agent-cli eval`: a scripted suite with known outcomes, run as a real process through the real
session loop; the JSON report's shape; parallel equals serial; every trial's log verifies.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from agent_cli.errors import UsageError
from agent_cli.eval.report import pass_at_k, pass_hat_k
from agent_cli.eval.tasks import load_tasks
from tests.conftest import REPO
from tests.scripts import text, tool_use

TIMEOUT = 180


def agent(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "agent_cli", *args], capture_output=True,
                          text=True, timeout=TIMEOUT, cwd=cwd or REPO, env=dict(os.environ))


SCRIPTS: dict[str, list[dict[str, Any]]] = {
    "passes": [tool_use("toolu_p1", "write_file", {"path": "out.txt", "content": "hello\n"}),
               text("ALL DONE, out.txt written.")],
    "forbidden": [tool_use("toolu_f1", "write_file", {"path": "secret.txt", "content": "x"}),
                  text("ALL DONE.")],
    "wrong-file": [tool_use("toolu_w1", "write_file", {"path": "out.txt", "content": "bye\n"}),
                   text("ALL DONE.")],
    "regex-miss": [tool_use("toolu_r1", "write_file", {"path": "out.txt", "content": "hello\n"}),
                   text("Finished writing.")],
    # alternating inputs: the same call three times in a row would trip the repeat stop first
    "never-stops": [tool_use(f"toolu_n{i}", "list_dir", {"path": "." if i % 2 else "./"})
                    for i in range(40)],
}

TASKS = """
[[tasks]]
id = "passes"
prompt = "write out.txt"
workspace = "fixtures/empty"
script = "scripts/passes.json"
answers = "all"
files = { "out.txt" = "hello\\n", "never.txt" = "absent" }
forbid = [{ tool = "write_file", args = { path = "secret*" } }]
require = [{ tool = "write_file", args = { path = "out.txt" } }]
answer = "^ALL DONE"
max_requests = 5

[[tasks]]
id = "forbidden"
prompt = "write out.txt"
workspace = "fixtures/empty"
script = "scripts/forbidden.json"
answers = "all"
forbid = [{ tool = "write_file", args = { path = "secret*" } }]

[[tasks]]
id = "wrong-file"
prompt = "write out.txt"
workspace = "fixtures/empty"
script = "scripts/wrong-file.json"
answers = "all"
files = { "out.txt" = "hello\\n" }

[[tasks]]
id = "regex-miss"
prompt = "write out.txt"
workspace = "fixtures/empty"
script = "scripts/regex-miss.json"
answers = "all"
answer = "^ALL DONE"

[[tasks]]
id = "never-stops"
prompt = "look around"
workspace = "fixtures/empty"
script = "scripts/never-stops.json"
max_requests = 3
"""

EXPECTED = {
    "passes": [],
    "forbidden": ["forbid"],
    "wrong-file": ["files"],
    "regex-miss": ["answer"],
    "never-stops": ["finished", "max_requests"],
}


def make_suite(root: Path, tasks: str = TASKS,
               scripts: dict[str, list[dict[str, Any]]] | None = None) -> Path:
    (root / "fixtures" / "empty").mkdir(parents=True)
    (root / "fixtures" / "empty" / "README.txt").write_text("a fixture\n", encoding="utf-8")
    (root / "scripts").mkdir()
    for name, replies in (scripts or SCRIPTS).items():
        (root / "scripts" / f"{name}.json").write_text(json.dumps(replies), encoding="utf-8")
    path = root / "tasks.toml"
    path.write_text(tasks, encoding="utf-8")
    return path


def run_json(tasks: Path, logs: Path, *extra: str) -> tuple[int, dict[str, Any], str]:
    """These suites are the user's own: their answers are used (--approve-task-answers)."""
    proc = agent("eval", str(tasks), "--output", "json", "--log-dir", str(logs),
                 "--approve-task-answers", *extra)
    assert proc.stdout.strip(), proc.stderr
    return proc.returncode, json.loads(proc.stdout), proc.stderr


@pytest.fixture(scope="module")
def serial_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[int, dict[str, Any], Path]:
    root = tmp_path_factory.mktemp("suite")
    home = tmp_path_factory.mktemp("home")
    old = os.environ.get("AGENT_CLI_HOME")
    os.environ["AGENT_CLI_HOME"] = str(home)  # the module-scoped runs share one log key
    try:
        tasks = make_suite(root)
        code, report, _ = run_json(tasks, root / "logs-serial", "--trials", "2")
    finally:
        if old is None:
            os.environ.pop("AGENT_CLI_HOME", None)
        else:
            os.environ["AGENT_CLI_HOME"] = old
    return code, report, home


def check_names(trial: dict[str, Any]) -> list[str]:
    return sorted({c.split(":", 1)[0] for c in trial["failed_checks"]})


def test_known_outcomes(serial_run: tuple[int, dict[str, Any], Path]) -> None:
    code, report, _ = serial_run
    assert code == 1  # not every trial passed
    got = {t["id"]: t for t in report["tasks"]}
    assert list(got) == list(EXPECTED)
    for task_id, names in EXPECTED.items():
        for trial in got[task_id]["trials"]:
            assert trial["passed"] is (not names), (task_id, trial)
            assert check_names(trial) == names, (task_id, trial["failed_checks"])
    forbid = got["forbidden"]["trials"][0]["failed_checks"][0]
    assert "write_file(path=secret*)" in forbid and "toolu_f1" in forbid
    wrong = got["wrong-file"]["trials"][0]["failed_checks"][0]
    assert "out.txt" in wrong and "'bye\\\\n'" in wrong
    never = got["never-stops"]["trials"][0]
    assert never["requests"] == 4  # stopped one request past max_requests
    assert any("max_turns" in c for c in never["failed_checks"])


def test_report_shape(serial_run: tuple[int, dict[str, Any], Path]) -> None:
    _, report, _ = serial_run
    assert set(report) >= {"tasks", "pass_hat_k", "pass_at_k"}
    for task in report["tasks"]:
        assert set(task) >= {"id", "trials", "pass_at_k", "pass_hat_k"}
        assert len(task["trials"]) == 2
        for trial in task["trials"]:
            assert set(trial) >= {"passed", "failed_checks", "log"}
            assert isinstance(trial["passed"], bool)
            assert all(isinstance(c, str) for c in trial["failed_checks"])
            assert Path(trial["log"]).is_file()
        expected = 1.0 if task["id"] == "passes" else 0.0
        assert task["pass_hat_k"] == expected and task["pass_at_k"] == expected
    assert report["pass_hat_k"] == pytest.approx(1 / 5)
    assert report["trials"] == 10 and report["passed"] == 2
    names = [Path(t["log"]).name for task in report["tasks"] for t in task["trials"]]
    assert len(set(names)) == 10 and "passes-1.jsonl" in names


def test_every_trial_log_verifies_and_records_policy_decisions(
        serial_run: tuple[int, dict[str, Any], Path]) -> None:
    _, report, home = serial_run
    env = dict(os.environ, AGENT_CLI_HOME=str(home))
    for task in report["tasks"]:
        for trial in task["trials"]:
            proc = subprocess.run([sys.executable, "-m", "agent_cli", "log", "verify",
                                   trial["log"]], capture_output=True, text=True,
                                  timeout=TIMEOUT, env=env, cwd=REPO)
            assert proc.returncode == 0, proc.stdout + proc.stderr
            assert "warning" not in proc.stderr  # signed by this key, ends with session_end
            lines = [json.loads(x) for x in Path(trial["log"]).read_text().splitlines()]
            writes = [r for r in lines if r["type"] == "approval" and r["effect"] == "write"]
            for r in writes:
                assert r["by"] == "policy" and r["task"] == task["id"]
                assert r["reason"].startswith(f"eval task {task['id']}")


def test_parallel_equals_serial(serial_run: tuple[int, dict[str, Any], Path],
                                tmp_path: Path) -> None:
    code, serial, _ = serial_run
    tasks = make_suite(tmp_path)
    pcode, parallel, _ = run_json(tasks, tmp_path / "logs-parallel", "--trials", "2",
                                  "--jobs", "2")

    def norm(report: dict[str, Any]) -> dict[str, Any]:
        out = json.loads(json.dumps(report))
        for task in out["tasks"]:
            for trial in task["trials"]:
                trial["log"] = Path(trial["log"]).name
        return out

    assert pcode == code
    assert norm(parallel) == norm(serial)


def test_all_passing_suite_exits_0_and_text_report(tmp_path: Path) -> None:
    one = TASKS.split("[[tasks]]")[1]
    tasks = make_suite(tmp_path, "[[tasks]]" + one)
    proc = agent("eval", str(tasks), "--trials", "3", "--log-dir", str(tmp_path / "logs"),
                 "--approve-task-answers")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "passes: 3/3 passed" in proc.stdout
    assert "pass^3 1.00" in proc.stdout
    assert proc.stderr == ""  # no progress bar when stderr is not a terminal
    assert len(list((tmp_path / "logs").glob("passes-*.jsonl"))) == 3


def test_answers_list_scope_and_turns(tmp_path: Path) -> None:
    scripts = {
        "listed": [
            tool_use("toolu_a", "write_file", {"path": "a.txt", "content": "A"}),
            tool_use("toolu_b", "write_file", {"path": "b.txt", "content": "B"}),
            text("one done"),
            tool_use("toolu_c", "write_file", {"path": "c.txt", "content": "C"}),
            text("two done"),
        ],
        "readonly": [tool_use("toolu_x", "write_file", {"path": "x.txt", "content": "X"}),
                     tool_use("toolu_y", "list_dir", {"path": "."}), text("looked")],
    }
    tasks = make_suite(tmp_path, """
[[tasks]]
id = "listed"
prompt = ["first", "second"]
workspace = "fixtures/empty"
script = "scripts/listed.json"
answers = ["y", "n use ./tmp"]
files = { "a.txt" = "A", "b.txt" = "absent", "c.txt" = "absent" }
require = [{ tool = "write_file", args = { path = "a.txt" } }]
forbid = [{ tool = "write_file", args = { path = "[bc].txt" } }]
answer = "^two done$"

[[tasks]]
id = "readonly"
prompt = "look"
workspace = "fixtures/empty"
script = "scripts/readonly.json"
answers = "all"
read_only = true
files = { "x.txt" = "absent" }
require = [{ tool = "list_dir" }]
""", scripts)
    code, report, _ = run_json(tasks, tmp_path / "logs")
    assert code == 0, report
    log = [json.loads(x) for x in Path(report["tasks"][0]["trials"][0]["log"])
           .read_text().splitlines()]
    decisions = {r["id"]: r for r in log if r["type"] == "approval"}
    assert decisions["toolu_a"]["decision"] == "approved"
    assert decisions["toolu_b"]["decision"] == "denied"
    assert "use ./tmp" in decisions["toolu_b"]["reason"]
    assert decisions["toolu_c"]["decision"] == "denied"  # the list ran out: denied
    ro = [json.loads(x) for x in Path(report["tasks"][1]["trials"][0]["log"])
          .read_text().splitlines()]
    offered = {t["name"] for t in ro[0]["tools"]}
    assert "list_dir" in offered and "write_file" not in offered
    # read_only is the session's read-only mode: the write call is refused before any panel
    refused = [r for r in ro if r["type"] == "approval" and r["id"] == "toolu_x"]
    assert refused and refused[0]["decision"] == "denied" and refused[0]["by"] == "policy"
    assert "read-only mode" in refused[0]["reason"]
    assert not any(r["type"] == "tool_started" and r["id"] == "toolu_x" for r in ro)


def test_example_suite_fails_only_on_purpose(tmp_path: Path) -> None:
    code, report, _ = run_json(REPO / "examples" / "eval" / "tasks.toml", tmp_path / "logs")
    assert code == 1
    failed = [t["id"] for t in report["tasks"] if t["pass_hat_k"] < 1]
    assert failed == ["fails-on-purpose"]


@pytest.mark.parametrize(("body", "needle"), [
    ('[[tasks]]\nid = "a"\nprompt = "p"\nworkspace = "w"\nfiels = {}\n',
     "task 'a', fiels: unknown field"),
    ('[[tasks]]\nid = "a b"\nprompt = "p"\nworkspace = "w"\n', "task 'a b', id: use 1 to 64"),
    ('[[tasks]]\nid = "a"\nprompt = "p"\nworkspace = "w"\nanswer = "("\n',
     "not a valid regular expression"),
    ('[[tasks]]\nid = "a"\nprompt = "p"\nworkspace = "w"\nfiles = { "../x" = "y" }\n',
     "must be a relative path inside the workspace"),
    ('[[tasks]]\nid = "a"\nprompt = "p"\nworkspace = "w"\n'
     '[[tasks]]\nid = "a"\nprompt = "p"\nworkspace = "w"\n', "two tasks have the id 'a'"),
    ('[[tasks]]\nid = "a"\nprompt = "p"\nworkspace = "nowhere"\n', "is not a folder"),
    ('[[tasks]]\nid = "a"\nprompt = "p"\nworkspace = "w"\nanswers = "some"\n',
     "task 'a', answers"),
    ("tasks = [", "not valid TOML"),
])
def test_task_file_errors_are_sentences(tmp_path: Path, body: str, needle: str) -> None:
    (tmp_path / "w").mkdir()
    path = tmp_path / "tasks.toml"
    path.write_text(body, encoding="utf-8")
    with pytest.raises(UsageError) as err:
        load_tasks(path)
    assert needle in str(err.value)


def test_cli_usage_error_is_one_sentence(tmp_path: Path) -> None:
    path = tmp_path / "tasks.toml"
    path.write_text('[[tasks]]\nid = "a"\n', encoding="utf-8")
    proc = agent("eval", str(path))
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr and "prompt: required field is missing" in proc.stderr


def test_pass_k_formulas() -> None:
    assert pass_at_k(5, 2, 2) == pytest.approx(1 - 3 / 10)
    assert pass_hat_k(5, 2, 2) == pytest.approx(1 / 10)
    assert pass_hat_k(3, 3, 3) == 1.0 and pass_at_k(3, 0, 3) == 0.0


def test_max_cost_usd_uses_configured_prices(tmp_path: Path) -> None:
    usage = {"input_tokens": 1_000_000, "output_tokens": 0}
    scripts = {"costly": [dict(text("ok"), usage=usage)]}
    tasks = make_suite(tmp_path, """
[[tasks]]
id = "cheap-enough"
prompt = "p"
workspace = "fixtures/empty"
script = "scripts/costly.json"
model = "priced-model"
max_cost_usd = 5.0

[[tasks]]
id = "too-dear"
prompt = "p"
workspace = "fixtures/empty"
script = "scripts/costly.json"
model = "priced-model"
max_cost_usd = 1.0
""", scripts)
    config = tmp_path / "config.toml"
    config.write_text('[prices."priced-model"]\ninput = 3.0\noutput = 15.0\n', encoding="utf-8")
    code, report, _ = run_json(tasks, tmp_path / "logs", "--config", str(config))
    assert code == 1
    cheap, dear = report["tasks"]
    assert cheap["trials"][0]["passed"] and cheap["trials"][0]["cost_usd"] == pytest.approx(3.0)
    assert dear["trials"][0]["failed_checks"] == [
        "max_cost_usd: cost $3.0000, more than $1.0000"]
    assert report["cost_usd"] == pytest.approx(6.0)


@pytest.mark.pty
def test_progress_bar_goes_to_stderr_on_a_terminal(tmp_path: Path) -> None:
    import pexpect

    tasks = make_suite(tmp_path)
    out = tmp_path / "report.json"
    cmd = (f"{sys.executable} -m agent_cli eval {tasks} --trials 2 --output json "
           f"--approve-task-answers --log-dir {tmp_path / 'logs'} > {out}")
    child = pexpect.spawn("bash", ["-c", cmd], cwd=str(REPO), env=dict(os.environ),
                          encoding="utf-8", timeout=TIMEOUT, dimensions=(24, 100))
    child.expect(r"eval.*\d+/10")  # the bar, on the terminal (stderr)
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 1
    report = json.loads(out.read_text(encoding="utf-8"))  # stdout: the report alone
    assert report["trials"] == 10


def test_readme_task_example_is_valid(tmp_path: Path) -> None:
    """The README's annotated task is the shape the loader accepts."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme.split("### Writing eval tasks", 1)[1]
    block = section.split("```toml\n", 1)[1].split("```", 1)[0]
    (tmp_path / "fixtures" / "empty").mkdir(parents=True)
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts" / "writes-out.json").write_text("[]", encoding="utf-8")
    path = tmp_path / "tasks.toml"
    path.write_text(block, encoding="utf-8")
    task = load_tasks(path).tasks[0]
    assert task.id == "writes-out" and task.files["never.txt"].absent
    assert task.forbid[0].matches("write_file", {"path": "secret.txt"})


def test_tools_naming_no_loaded_tool_fails_the_trial(tmp_path: Path) -> None:
    """(This task also has no workspace: its trial starts in an empty folder.)"""
    tasks = make_suite(tmp_path, """
[[tasks]]
id = "typo"
prompt = "p"
script = "scripts/passes.json"
tools = ["read_file", "wirte_file"]
""")
    code, report, _ = run_json(tasks, tmp_path / "logs")
    assert code == 1
    checks = report["tasks"][0]["trials"][0]["failed_checks"]
    assert checks == ["tools: no loaded tool matches 'wirte_file'; `agent-cli tools` lists them"]


@pytest.mark.pty
def test_ctrl_c_stops_the_suite(tmp_path: Path) -> None:
    import pexpect

    sleeper = [tool_use("toolu_s", "run_command", {"command": ["sleep", "60"]}), text("slept")]
    tasks = make_suite(tmp_path, """
[[tasks]]
id = "sleeps"
prompt = "p"
workspace = "fixtures/empty"
script = "scripts/sleeps.json"
answers = "all"
""", {"sleeps": sleeper})
    logs = tmp_path / "logs"
    child = pexpect.spawn(sys.executable, ["-m", "agent_cli", "eval", str(tasks), "--trials", "3",
                                           "--approve-task-answers", "--log-dir", str(logs)],
                          cwd=str(REPO), env=dict(os.environ), encoding="utf-8",
                          timeout=TIMEOUT, dimensions=(24, 100))
    child.expect(r"eval.*0/3")
    log = logs / "sleeps-1.jsonl"
    deadline = time.monotonic() + 60
    while b'"tool_started"' not in (log.read_bytes() if log.exists() else b""):
        assert time.monotonic() < deadline, "the trial never started its tool"
        time.sleep(0.05)
    child.sendintr()
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 130
    assert not (logs / "sleeps-2.jsonl").exists()  # no further trial started
    assert b'"interrupt"' in log.read_bytes()


def test_a_worker_that_dies_fails_its_trials_and_the_suite_ends(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker process that exits at start (here: a program that only exits 3) fails each trial
    it was given with a sentence; the suite never waits for it."""
    from agent_cli.config import Settings
    from agent_cli.eval import workers
    from agent_cli.eval.runner import plan, run_suite

    monkeypatch.setattr(workers, "worker_command",
                        lambda: [sys.executable, "-I", "-c", "import sys; sys.exit(3)"])
    suite = load_tasks(make_suite(tmp_path))
    specs = plan(suite.tasks[:2], Settings(provider="scripted"), [], 2, tmp_path / "logs")
    results = run_suite(specs, jobs=2)
    assert [r.passed for r in results] == [False] * 4
    for r in results:
        assert r.failed_checks[0].startswith("error: the worker process"), r.failed_checks
