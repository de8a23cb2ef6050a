"""Adding trials up: per task pass@k and pass^k, the suite's means, totals of tokens and cost;
and the two ways of showing them (text for people, JSON in the shape docs/contracts.md states,
"The evaluation report").

With n trials of which c passed, pass@k = 1 - C(n-c, k)/C(n, k) (at least one of k trials
passes) and pass^k = C(c, k)/C(n, k) (all k pass: the reliability a user meets when they run the
same task k times). The suite's figures are the means over tasks.

`pass_at_k` / `pass_hat_k` are for k = n (the report's first keys); `pass_at` / `pass_hat`
map every k from 1 to n (or the ks asked for with `--k 1,2,4`) to its figure, since pass^k over
k is what shows reliability (tau-bench's curve): 3 of 5 passing is pass^1 0.6, pass^2 0.3,
pass^3 0.1, while pass^5 alone says only 0.
"""

from __future__ import annotations

from math import comb
from typing import Any

from agent_cli.eval.runner import TrialResult
from agent_cli.usage import fmt_cost


def pass_at_k(n: int, c: int, k: int) -> float:
    if n <= 0 or k <= 0 or k > n:
        return 0.0
    return 1.0 - comb(n - c, k) / comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    if n <= 0 or k <= 0 or k > n:
        return 0.0
    return comb(c, k) / comb(n, k)


def parse_ks(text: str, trials: int) -> list[int]:
    """`--k 1,2,4`: the ks to report, each from 1 to the number of trials. Raises ValueError
    with a sentence."""
    ks: list[int] = []
    for part in text.replace(" ", "").split(","):
        if not part.isdigit() or not 1 <= int(part) <= trials:
            raise ValueError(f"--k {text}: each k must be a whole number from 1 to --trials "
                             f"({trials}), separated by commas, e.g. --k 1,2,{trials}.")
        if int(part) not in ks:
            ks.append(int(part))
    return sorted(ks)


def _by_k(n: int, c: int, ks: list[int]) -> tuple[dict[str, float], dict[str, float]]:
    ks = [k for k in ks if k <= n]
    return ({str(k): pass_at_k(n, c, k) for k in ks}, {str(k): pass_hat_k(n, c, k) for k in ks})


def _mean_by_k(tasks: list[dict[str, Any]], key: str, ks: list[int]) -> dict[str, float]:
    out: dict[str, float] = {}
    for k in ks:
        values = [t[key][str(k)] for t in tasks if str(k) in t[key]]
        if values:
            out[str(k)] = sum(values) / len(values)
    return out


def _add(total: dict[str, int], usage: dict[str, int]) -> None:
    for key, value in usage.items():
        total[key] = total.get(key, 0) + value


def build_report(task_ids: list[str], results: list[TrialResult], k: int,
                 ks: list[int] | None = None) -> dict[str, Any]:
    """The JSON report: {"tasks": [{"id", "trials": [{"passed", "failed_checks", "log", ...}],
    "pass_at_k", "pass_hat_k", "pass_at", "pass_hat"}], "pass_hat_k", "pass_hat", ...}, as
    docs/contracts.md states it. `ks`: the ks of `pass_at`/`pass_hat` (default 1..k)."""
    ks = sorted(set(ks)) if ks else list(range(1, k + 1))
    by_task: dict[str, list[TrialResult]] = {t: [] for t in task_ids}
    for r in results:
        by_task[r.task_id].append(r)
    tasks: list[dict[str, Any]] = []
    usage: dict[str, int] = {}
    cost: float | None = 0.0
    for task_id, trials in by_task.items():
        n = len(trials)
        c = sum(r.passed for r in trials)
        for r in trials:
            _add(usage, r.usage)
            if r.cost_usd is None:
                cost = None
            elif cost is not None:
                cost += r.cost_usd
        tasks.append({
            "id": task_id,
            "trials": [{"passed": r.passed, "failed_checks": list(r.failed_checks),
                        "log": r.log, "trial": r.trial, "requests": r.requests,
                        "usage": dict(r.usage), "cost_usd": r.cost_usd}
                       for r in sorted(trials, key=lambda r: r.trial)],
            "passed": c,
            "pass_at_k": pass_at_k(n, c, k),
            "pass_hat_k": pass_hat_k(n, c, k),
        })
        tasks[-1]["pass_at"], tasks[-1]["pass_hat"] = _by_k(n, c, ks)
    count = len(tasks) or 1
    passed = sum(r.passed for r in results)
    return {
        "tasks": tasks,
        "k": k,
        "pass_at_k": sum(t["pass_at_k"] for t in tasks) / count,
        "pass_hat_k": sum(t["pass_hat_k"] for t in tasks) / count,
        "ks": ks,
        "pass_at": _mean_by_k(tasks, "pass_at", ks),
        "pass_hat": _mean_by_k(tasks, "pass_hat", ks),
        "trials": len(results),
        "passed": passed,
        "failed": len(results) - passed,
        "usage": usage,
        "cost_usd": cost,
    }


def all_passed(report: dict[str, Any]) -> bool:
    return bool(report["trials"]) and report["failed"] == 0


def text_lines(report: dict[str, Any]) -> list[tuple[str, str]]:
    """(style, line) pairs: the caller prints each line as plain text (never as markup), so a
    check's message, which quotes file contents and model text, cannot style the terminal."""
    out: list[tuple[str, str]] = []
    k = report["k"]
    for task in report["tasks"]:
        n = len(task["trials"])
        style = "green" if task["passed"] == n else "red"
        out.append((f"bold {style}", f"{task['id']}: {task['passed']}/{n} passed   "
                    f"pass@{k} {task['pass_at_k']:.2f}   pass^{k} {task['pass_hat_k']:.2f}"))
        for trial in task["trials"]:
            mark = "PASS" if trial["passed"] else "FAIL"
            out.append(("green" if trial["passed"] else "red",
                        f"  trial {trial['trial']}: {mark}  ({trial['requests']} requests)"))
            for check in trial["failed_checks"]:
                out.append(("", f"    - {check}"))
            out.append(("dim", f"    log: {trial['log']}"))
        if len(report["tasks"]) > 1 and task.get("pass_hat"):
            out += table_lines(task, "")
    if report.get("pass_hat"):
        out += table_lines(report, "all tasks" if len(report["tasks"]) > 1 else "")
    usage = report["usage"]
    tokens = (f"{usage.get('input_tokens', 0):,} in / {usage.get('output_tokens', 0):,} out "
              "tokens")
    cost = fmt_cost(report["cost_usd"]) if report["cost_usd"] is not None else "cost unknown"
    out.append(("bold", f"{report['passed']}/{report['trials']} trials passed over "
                f"{len(report['tasks'])} tasks   pass@{k} {report['pass_at_k']:.2f}   "
                f"pass^{k} {report['pass_hat_k']:.2f}   {tokens} · {cost}"))
    return out


def table_lines(figures: dict[str, Any], title: str) -> list[tuple[str, str]]:
    """pass@k and pass^k over k, compact:

        k        1     2     3
        pass@k  0.60  0.90  1.00
        pass^k  0.60  0.30  0.10
    """
    ks = list(figures["pass_hat"])
    head = f"  {title}" if title else ""
    rows = [("bold", f"{head}  {'k':<7}" + "".join(f"{k:>6}" for k in ks))]
    pad = " " * len(head)
    for name, key in (("pass@k", "pass_at"), ("pass^k", "pass_hat")):
        rows.append(("", f"{pad}  {name:<7}" + "".join(f"{figures[key][k]:>6.2f}" for k in ks)))
    return rows
