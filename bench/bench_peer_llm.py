"""agent-cli side by side with a peer: Simon Willison's `llm` CLI with the `llm-anthropic` plugin.

Both talk to the same fake Anthropic server (real SDKs, streaming, 127.0.0.1, server in its own
process timing its own handler), in the same run, interleaved, so machine noise hits both alike:

- `--help` wall time;
- a prompt with no tool calls;
- N sequential multiply calls (llm gets `multiply(a: int, b: int)` through `--functions`):
  overhead per call = (T(N) - T(0)) / N - server time per request, from wall time and from the
  child's CPU time (user + system; the steadier figure on a shared machine);
- peak memory (ru_maxrss of each child).

llm is installed by this script into its own virtual environment under the temp folder, keyed by
the pinned versions, so reruns skip the install. If the install fails the script says why and
exits 1: no figures are ever made up.

Usage: python bench/bench_peer_llm.py [--repeat R] [--ns 1,10,100,300] [--quick]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import (
    API_KEY,
    FakeProcess,
    Stats,
    clean_env,
    header,
    machine_line,
    ratio,
    run_child,
    spawn_fake,
)

LLM_VERSION = "0.36"
LLM_ANTHROPIC_VERSION = "0.30"
LLM_MODEL = "claude-sonnet-4.5"
"""llm-anthropic's alias for claude-sonnet-4-5 (the model agent-cli asks for by default)."""
FUNCTIONS = "def multiply(a: int, b: int) -> int:\n    return a * b\n"
INSTALL_TIMEOUT_S = 900.0


def venv_dir(llm_version: str, plugin_version: str) -> Path:
    py = f"{sys.version_info.major}.{sys.version_info.minor}"
    return (Path(tempfile.gettempdir()) / "agent-cli-bench"
            / f"llm-{llm_version}-anthropic-{plugin_version}-py{py}")


def ensure_llm(llm_version: str, plugin_version: str) -> Path:
    """The `llm` executable in a cached venv; installs it on first use. Exits 1 on failure."""
    venv = venv_dir(llm_version, plugin_version)
    exe = venv / "bin" / "llm"
    marker = venv / ".bench-ok"
    if marker.exists() and exe.exists():
        print(f"llm {llm_version} + llm-anthropic {plugin_version}: cached venv {venv}")
        return exe
    print(f"installing llm=={llm_version} llm-anthropic=={plugin_version} into {venv} ...",
          flush=True)
    shutil.rmtree(venv, ignore_errors=True)
    venv.parent.mkdir(parents=True, exist_ok=True)
    steps = [
        [sys.executable, "-m", "venv", str(venv)],
        [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet",
         "--disable-pip-version-check", f"llm=={llm_version}",
         f"llm-anthropic=={plugin_version}"],
        [str(exe), "--version"],
    ]
    for argv in steps:
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S,
                                  check=False)
        except (OSError, subprocess.TimeoutExpired) as e:
            print(f"could not install llm: {' '.join(argv[:4])} failed: {e}")
            raise SystemExit(1) from None
        if done.returncode != 0:
            tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-15:])
            print(f"could not install llm: `{' '.join(argv[:4])} ...` exited "
                  f"{done.returncode}:\n{tail}\nNo peer figures.")
            raise SystemExit(1)
    marker.write_text("ok\n")
    return exe


def check_model(exe: Path, env: dict[str, str]) -> str:
    """The model id llm-anthropic registers for Sonnet 4.5 (read from `llm models list`)."""
    r = run_child([str(exe), "models", "list"], env=env, capture=True, timeout_s=60)
    if r.returncode != 0:
        print(f"`llm models list` failed ({r.returncode}): {r.stderr.strip()[-300:]}")
        raise SystemExit(1)
    if LLM_MODEL in r.stdout:
        return LLM_MODEL
    sonnet = [line for line in r.stdout.splitlines() if "sonnet" in line and "Anthropic" in line]
    if not sonnet:
        print("llm-anthropic registers no Sonnet model; cannot compare.")
        raise SystemExit(1)
    return sonnet[0].split(":", 1)[1].split()[0]


class Peers:
    """The two command lines, built the same way for every measurement."""

    def __init__(self, llm: Path, model: str, fake: FakeProcess, tmp: Path) -> None:
        self.llm = str(llm)
        self.model = model
        agent = Path(sys.executable).with_name("agent-cli")
        self.agent = [str(agent)] if agent.exists() else [sys.executable, "-m", "agent_cli"]
        self.ws = tmp / "ws"
        self.ws.mkdir()
        (tmp / "agent-home").mkdir()
        (tmp / "llm-home").mkdir()
        base = {"ANTHROPIC_BASE_URL": fake.base_url, "ANTHROPIC_API_KEY": API_KEY}
        self.env = {
            "agent-cli": clean_env(**base, AGENT_CLI_HOME=str(tmp / "agent-home")),
            "llm": clean_env(**base, LLM_USER_PATH=str(tmp / "llm-home")),
        }

    def help(self, who: str) -> list[str]:
        return [*self.agent, "--help"] if who == "agent-cli" else [self.llm, "--help"]

    def prompt(self, who: str) -> list[str]:
        if who == "agent-cli":
            return [*self.agent, "run", "Say hello.", "--workspace", str(self.ws)]
        return [self.llm, "-m", self.model, "Say hello."]

    def calls(self, who: str, n: int) -> list[str]:
        text = f"Multiply some numbers, calls={n}"
        if who == "agent-cli":
            return [*self.agent, "run", text, "--workspace", str(self.ws),
                    "--max-turns", str(n + 5)]
        return [self.llm, "-m", self.model, "--functions", FUNCTIONS, "--chain-limit",
                str(n + 5), text]


WHO = ("agent-cli", "llm")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--ns", default="1,10,100,300")
    parser.add_argument("--quick", action="store_true", help="N up to 100, 3 repeats")
    parser.add_argument("--llm-version", default=LLM_VERSION)
    parser.add_argument("--llm-anthropic-version", default=LLM_ANTHROPIC_VERSION)
    args = parser.parse_args(argv)
    ns = sorted({int(x) for x in args.ns.split(",") if int(x) > 0})
    repeat = args.repeat
    if args.quick:
        ns, repeat = [n for n in ns if n <= 100], min(repeat, 3)
    print(f"bench_peer_llm: {machine_line()}; repeat={repeat}; both print text to /dev/null")
    exe = ensure_llm(args.llm_version, args.llm_anthropic_version)
    with spawn_fake() as fake, tempfile.TemporaryDirectory(prefix="bench-peer-") as t:
        peers = Peers(exe, "", fake, Path(t))
        peers.model = check_model(exe, peers.env["llm"])
        print(f"llm model: {peers.model}; agent-cli: {' '.join(peers.agent)}")
        return compare(peers, fake, ns, repeat)


def compare(peers: Peers, fake: FakeProcess, ns: list[int], repeat: int) -> int:
    # ---- sanity: each peer really does N calls, and how its requests look
    header("checks (one captured run each)")
    ok_ns = {who: [0, *ns] for who in WHO}
    for who in WHO:
        for n in [0, *ns]:
            fake.reset()
            r = run_child(peers.calls(who, n), env=peers.env[who], capture=True,
                          timeout_s=60 + 2 * n)
            s = fake.stats()
            good = r.returncode == 0 and s.requests == n + 1 and f"Done: {n} calls" in r.stdout
            line = (f"  {who:<9} N={n:<4} exit {r.returncode}, {s.requests} requests, "
                    f"{s.streamed} streaming, {len(s.client_ports)} connection(s), "
                    f"{s.request_bytes / max(1, s.requests) / 1000:.1f} KB per request")
            print(line + ("" if good else f"  WRONG: {(r.stderr or r.stdout).strip()[-300:]}"))
            if not good:
                ok_ns[who].remove(n)
                if n == 0:
                    print(f"{who} cannot do a plain run against the fake; no figures.")
                    return 1
    dropped = {who: sorted(set(ns) - set(ok_ns[who])) for who in WHO}
    for who in WHO:
        if dropped[who]:
            print(f"  {who} failed at N={dropped[who]}: those N are left out of its figures")

    # ---- measurements, interleaved
    help_t = {w: Stats() for w in WHO}
    prompt_t = {w: Stats() for w in WHO}
    calls_t = {w: {n: Stats() for n in [0, *ns]} for w in WHO}
    cpu_t = {w: {n: Stats() for n in [0, *ns]} for w in WHO}
    server_t = {w: {n: Stats() for n in [0, *ns]} for w in WHO}
    rss = {w: Stats() for w in WHO}
    for _ in range(repeat):
        for who in WHO:
            help_t[who].add(run_child(peers.help(who), env=peers.env[who]).wall_s)
            r = run_child(peers.prompt(who), env=peers.env[who])
            prompt_t[who].add(r.wall_s)
            rss[who].add(r.peak_rss_mb)
        for n in [0, *ns]:
            for who in WHO:
                if n not in ok_ns[who]:
                    continue
                fake.reset()
                r = run_child(peers.calls(who, n), env=peers.env[who], timeout_s=60 + 2 * n)
                s = fake.stats()
                if r.returncode != 0:
                    print(f"  {who} N={n}: exit {r.returncode} in a timed run; left out")
                    continue
                calls_t[who][n].add(r.wall_s)
                cpu_t[who][n].add(r.cpu_s)
                server_t[who][n].add(s.handler_cpu_s)
                rss[who].add(r.peak_rss_mb)

    header("--help (wall)")
    for who in WHO:
        print(f"  {who:<9} {help_t[who].fmt('s')}")
    print(f"  ratio llm / agent-cli: {ratio(help_t['llm'].median, help_t['agent-cli'].median)}")
    header("a prompt with no tool calls (wall, start to exit)")
    for who in WHO:
        print(f"  {who:<9} {prompt_t[who].fmt('s')}")
    print(f"  ratio llm / agent-cli: {ratio(prompt_t['llm'].median, prompt_t['agent-cli'].median)}")
    header("N sequential tool calls: wall, and overhead per call "
           "= (T(N) - T(0)) / N - server time per request")
    per_call: dict[str, dict[int, float]] = {w: {} for w in WHO}
    per_cpu: dict[str, dict[int, float]] = {w: {} for w in WHO}
    for n in [0, *ns]:
        for who in WHO:
            st = calls_t[who][n]
            if not st.samples:
                print(f"  N={n:<4} {who:<9} (no figures)")
                continue
            extra = ""
            base = calls_t[who][0]
            if n and base.samples:
                srv = (server_t[who][n].median - server_t[who][0].median) / n
                per_call[who][n] = (st.median - base.median) / n - srv
                per_cpu[who][n] = (cpu_t[who][n].median - cpu_t[who][0].median) / n
                extra = (f"  -> {per_call[who][n] * 1e3:6.2f} ms per call (wall), "
                         f"{per_cpu[who][n] * 1e3:6.2f} ms (CPU)")
            print(f"  N={n:<4} {who:<9} {st.fmt('s')}{extra}")
        if n and all(n in per_call[w] for w in WHO):
            print(f"  N={n:<4} ratio llm / agent-cli per call: "
                  f"{ratio(per_call['llm'][n], per_call['agent-cli'][n])} (wall), "
                  f"{ratio(per_cpu['llm'][n], per_cpu['agent-cli'][n])} (CPU)")
    header("peak memory (ru_maxrss of each child, over the prompt and call runs)")
    for who in WHO:
        print(f"  {who:<9} median {rss[who].median:.0f} MB, max {rss[who].max:.0f} MB")
    print(f"  ratio llm / agent-cli (max): {ratio(rss['llm'].max, rss['agent-cli'].max)}")
    header("summary")
    a, b = per_call["agent-cli"], per_call["llm"]
    ac, bc = per_cpu["agent-cli"], per_cpu["llm"]
    print("  agent-cli vs llm (medians):")
    print(f"  --help {help_t['agent-cli'].median:.3f} s vs {help_t['llm'].median:.3f} s; "
          f"prompt {prompt_t['agent-cli'].median:.3f} s vs {prompt_t['llm'].median:.3f} s")
    for n in ns:
        if n in a and n in b:
            print(f"  per call N={n}: wall {a[n] * 1e3:.1f} vs {b[n] * 1e3:.1f} ms, "
                  f"CPU {ac[n] * 1e3:.1f} vs {bc[n] * 1e3:.1f} ms")
    print(f"  peak memory {rss['agent-cli'].max:.0f} vs {rss['llm'].max:.0f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
