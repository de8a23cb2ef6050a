"""The bench helpers measure nothing here; these tests check they drive and report correctly
(a benchmark whose fake answers wrongly, or whose runner hides a missing script, misleads)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))

import common  # noqa: E402


def _history(calls_wanted: int | None, done: int) -> dict[str, object]:
    first = "hello" if calls_wanted is None else f"please, calls={calls_wanted}"
    messages: list[dict[str, object]] = [{"role": "user", "content": first}]
    for i in range(done):
        messages.append({"role": "assistant", "content": [
            {"type": "tool_use", "id": f"t{i}", "name": "multiply", "input": {"a": 1, "b": 2}}]})
        messages.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": f"t{i}", "content": "2"}]})
    return {"messages": messages}


def test_responder_asks_for_one_call_at_a_time_until_n_then_ends() -> None:
    first = common.multiply_responder(_history(3, 0))
    assert first["stop_reason"] == "tool_use"
    [use] = first["content"]
    assert use["name"] == "multiply" and use["input"] == {"a": 2, "b": 3}
    ids = {common.multiply_responder(_history(3, d))["content"][0]["id"] for d in range(3)}
    assert len(ids) == 3  # a fresh id per call
    last = common.multiply_responder(_history(3, 3))
    assert last["stop_reason"] == "end_turn"
    assert last["content"][0]["text"] == "Done: 3 calls."


def test_responder_without_a_call_count_answers_text_and_zero_means_no_call() -> None:
    assert common.multiply_responder(_history(None, 0))["stop_reason"] == "end_turn"
    zero = common.multiply_responder(_history(0, 0))
    assert zero["stop_reason"] == "end_turn" and "Done: 0 calls." in zero["content"][0]["text"]


def test_calls_wanted_reads_list_content_too() -> None:
    body = {"messages": [{"role": "user", "content": [{"type": "text", "text": "x calls=42 y"}]}]}
    assert common.multiply_calls_wanted(body) == 42
    assert common.multiply_calls_wanted({"messages": []}) is None


def test_stats_and_per_call() -> None:
    s = common.Stats([3.0, 1.0, 2.0])
    assert (s.median, s.min, s.max) == (2.0, 1.0, 3.0)
    assert s.fmt("s") == "2.000 s (min 1.000, max 3.000, n=3)"
    base, at = common.Stats([1.0, 1.2]), common.Stats([2.0, 2.4])
    assert common.per_call(base, at, 10, 0.01) == pytest.approx((2.2 - 1.1) / 10 - 0.01)
    assert common.per_call(base, at, 10, use_min=True) == pytest.approx(0.1)
    assert common.ratio(3.0, 0.0) == "n/a" and common.ratio(3.0, 1.5) == "2.0x"


def test_run_child_reports_exit_code_output_and_cpu() -> None:
    r = common.run_child([sys.executable, "-c", "import sys; print('hi'); sys.exit(3)"],
                         capture=True)
    assert r.returncode == 3 and r.stdout.strip() == "hi"
    assert r.peak_rss_mb > 1 and r.cpu_s >= 0 and r.wall_s > 0


def test_clean_env_drops_api_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "https://example.invalid")
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    env = common.clean_env(AGENT_CLI_HOME="/x")
    assert "ANTHROPIC_BASE_URL" not in env and "PYTHONDONTWRITEBYTECODE" not in env
    assert env["AGENT_CLI_HOME"] == "/x"


def test_fake_process_serves_counts_and_resets() -> None:
    with common.spawn_fake() as fake:
        assert fake.base_url.startswith("http://127.0.0.1:")
        body = json.dumps({"model": "m", "max_tokens": 10, "messages": [
            {"role": "user", "content": "calls=1"}]}).encode()
        req = urllib.request.Request(fake.base_url + "/v1/messages", data=body, method="POST",
                                     headers={"x-api-key": "k", "content-type": "application/json"})
        with urllib.request.urlopen(req, timeout=10) as resp:
            reply = json.loads(resp.read())
        assert reply["stop_reason"] == "tool_use"
        # The server counts a request after it has sent the reply: wait for the count, do not
        # race it (a loaded machine can read the stats first).
        deadline = time.monotonic() + 30
        while (stats := fake.stats()).requests < 1 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert stats.requests == 1 and stats.streamed == 0 and len(stats.client_ports) == 1
        assert stats.handler_wall_s > 0 and len(stats.walls_s) == 1
        fake.reset()
        assert fake.stats().requests == 0
    assert fake.proc.poll() is not None  # the server process ended with the context


def test_run_all_names_missing_scripts_and_fails() -> None:
    done = subprocess.run([sys.executable, str(REPO / "bench" / "run_all.py"), "no_such_bench"],
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 1
    assert "bench_no_such_bench.py: MISSING" in done.stdout
    assert "did not give figures: bench_no_such_bench.py (missing)" in done.stdout
