"""pass^k over k: a 5-trial eval with a known pass pattern (3 of 5) through the real CLI.

The pattern comes from a plugin tool that tosses a scripted "coin": each call advances a counter
kept outside the workspace (which is fresh for every trial), and writes `result.txt` holding
pass or fail by the pattern; the task checks that file. pass^k = C(c,k)/C(n,k), pass@k =
1 - C(n-c,k)/C(n,k), with n = 5 and c = 3.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agent_cli.eval.report import parse_ks
from tests.conftest import REPO
from tests.scripts import text, tool_use

COIN = '''
import os
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from agent_cli.tools import Tool, ToolContext

PATTERN = [True, False, True, True, False]


class Args(BaseModel):
    model_config = ConfigDict(extra="forbid")


def run(args: Args, ctx: ToolContext) -> str:
    counter = Path(os.environ["COIN_COUNTER"])
    n = int(counter.read_text()) if counter.exists() else 0
    counter.write_text(str(n + 1))
    (ctx.workspace / "result.txt").write_text("pass\\n" if PATTERN[n % 5] else "fail\\n")
    return "tossed"


TOOL = Tool(name="coin", description="Toss the test coin.", args=Args, effect="read", run=run)
'''

TASKS = """
[[tasks]]
id = "coin"
prompt = "toss"
workspace = "fixtures/empty"
script = "scripts/coin.json"
files = { "result.txt" = "pass\\n" }
"""


def suite(root: Path) -> tuple[Path, Path]:
    (root / "fixtures" / "empty").mkdir(parents=True)
    (root / "scripts").mkdir()
    (root / "scripts" / "coin.json").write_text(json.dumps(
        [tool_use("toolu_c1", "coin", {}), text("tossed")]), encoding="utf-8")
    (root / "tasks.toml").write_text(TASKS, encoding="utf-8")
    tools = root / "tools"
    tools.mkdir()
    (tools / "coin.py").write_text(COIN, encoding="utf-8")
    return root / "tasks.toml", tools


def run_eval(root: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    tasks, tools = suite(root)
    env = dict(os.environ, COIN_COUNTER=str(root / "counter"), COLUMNS="120")
    return subprocess.run([sys.executable, "-m", "agent_cli", "eval", str(tasks), "--trials",
                           "5", "--tools-dir", str(tools), "--log-dir", str(root / "logs"),
                           *extra], capture_output=True, text=True, timeout=300, cwd=REPO,
                          env=env)


def test_three_of_five_gives_pass_hat_over_k_in_json(tmp_path: Path) -> None:
    proc = run_eval(tmp_path, "--output", "json")
    assert proc.returncode == 1, proc.stderr  # two trials failed
    report = json.loads(proc.stdout)
    task = report["tasks"][0]
    assert [t["passed"] for t in task["trials"]] == [True, False, True, True, False]
    assert task["pass_hat"] == pytest.approx({"1": 0.6, "2": 0.3, "3": 0.1, "4": 0.0, "5": 0.0})
    assert task["pass_at"] == pytest.approx({"1": 0.6, "2": 0.9, "3": 1.0, "4": 1.0, "5": 1.0})
    assert report["pass_hat"] == pytest.approx(task["pass_hat"])
    assert report["ks"] == [1, 2, 3, 4, 5]
    # the contract's keys (docs/contracts.md) are still k = n
    assert (task["pass_at_k"], task["pass_hat_k"]) == (1.0, 0.0)


def test_the_text_report_has_a_compact_table_and_k_chooses(tmp_path: Path) -> None:
    proc = run_eval(tmp_path, "--k", "1,2,4")
    assert proc.returncode == 1, proc.stderr
    lines = proc.stdout.splitlines()
    k_row = next(line for line in lines if line.split()[:1] == ["k"])
    assert k_row.split() == ["k", "1", "2", "4"]
    hat = next(line for line in lines if line.split()[:1] == ["pass^k"])
    assert hat.split() == ["pass^k", "0.60", "0.30", "0.00"]
    at = next(line for line in lines if line.split()[:1] == ["pass@k"])
    assert at.split() == ["pass@k", "0.60", "0.90", "1.00"]


def test_a_k_beyond_the_trials_is_a_usage_error(tmp_path: Path) -> None:
    proc = run_eval(tmp_path, "--k", "1,6")
    assert proc.returncode == 2
    assert "--k 1,6" in proc.stderr and "Traceback" not in proc.stderr


def test_parse_ks() -> None:
    assert parse_ks("4,1, 2,2", 5) == [1, 2, 4]
    for bad in ("0", "x", "1,,2", "7"):
        with pytest.raises(ValueError):
            parse_ks(bad, 5)
