"""Undo's costs: snapshot time of a 1,000- and a 10,000-file workspace (first and incremental),
the store size after 50 approved commands on a 10,000-file tree, and the per-call overhead of
recording when nothing changed. Each figure is printed beside a floor measured in the same run:
a bare os.walk + lstat of the same tree (what any tree snapshot must at least do).

`per-command` measures what one approved command costs on a 10,000- and a 100,000-file tree,
on both paths (snapshots; the overlay), beside the stat-walk floor and `true` run through
run_command's process path without undo, all in the same run.

Usage: python bench/bench_undo.py [--runs 3] [--commands 50]
       python bench/bench_undo.py per-command [--runs 40] [--snapshot-runs 3]
                                              [--files 10000 100000]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def make_tree(root: Path, files: int) -> None:
    for i in range(files):
        d = root / f"pkg{i % 100}" / f"sub{i % 7}"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"m{i}.py").write_text(f"# module {i}\n" + "x = 1\n" * (i % 50))
    past = time.time() - 3600  # older than the racy window, like a real checkout
    for p in root.rglob("*.py"):
        os.utime(p, (past, past))


def walk_floor(root: Path) -> float:
    t = time.perf_counter()
    for dirpath, _dirs, names in os.walk(root):
        for n in names:
            os.lstat(os.path.join(dirpath, n))
    return time.perf_counter() - t


def timed(fn) -> float:  # type: ignore[no-untyped-def]
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def fmt(xs: list[float]) -> str:
    return f"median {statistics.median(xs) * 1000:8.1f} ms  (min {min(xs) * 1000:.1f}, " \
           f"max {max(xs) * 1000:.1f})"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--commands", type=int, default=50)
    opts = ap.parse_args()
    os.environ["AGENT_CLI_UNDO_OVERLAY"] = "off"  # these figures are the snapshot path's
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["AGENT_CLI_HOME"] = str(Path(tmp) / "home")
        from agent_cli.undo.recorder import WorkspaceRecorder
        from agent_cli.undo.snapshot import Snapshotter
        from agent_cli.undo.store import Store

        for files in (1_000, 10_000):
            firsts, incs, floors = [], [], []
            for run in range(opts.runs):
                root = Path(tmp) / f"ws{files}-{run}"
                make_tree(root, files)
                store = Store(Path(tmp) / f"store{files}-{run}")
                floors.append(walk_floor(root))
                firsts.append(timed(lambda r=root, s=store: Snapshotter(r, s).tree()))
                # a new session (fresh process state), same store: the stat cache on disk
                fresh = Store(store.root)
                incs.append(timed(lambda r=root, s=fresh: Snapshotter(r, s).tree()))
            print(f"{files:>6,} files  first snapshot        {fmt(firsts)}")
            print(f"{files:>6,} files  incremental snapshot  {fmt(incs)}")
            print(f"{files:>6,} files  floor os.walk+lstat   {fmt(floors)}")

        # 50 approved commands on a 10,000-file tree, each changing two files
        from agent_cli.config import Settings
        from agent_cli.session import load_registry

        root = Path(tmp) / "ws-commands"
        make_tree(root, 10_000)
        tree_bytes = sum(p.stat().st_size for p in root.rglob("*") if p.is_file())
        store = Store(Path(tmp) / "store-commands")
        recorder = WorkspaceRecorder(root, store=store)
        registry, _ = load_registry(Settings())
        call = registry.validate("toolu_b", "run_command", {"command": "true"})
        recorder.notes(call)
        _c, first_size = store.size()
        per_call: list[float] = []
        for i in range(opts.commands):
            recorder.notes(call)
            token = recorder.before(call)
            (root / "pkg1" / "sub1" / f"m{(i * 7) % 10_000}.py").write_text(f"changed {i}\n")
            (root / f"new{i}.txt").write_text(f"new {i}\n")
            t = time.perf_counter()
            recorder.after(token, True)
            per_call.append(time.perf_counter() - t)
        _count, size = store.size()
        print(f"store after {opts.commands} approved commands on 10,000 files (each changing "
              f"one file and adding one): {size / 1e6:.2f} MB; the first snapshot took "
              f"{first_size / 1e6:.2f} MB (the tree itself: {tree_bytes / 1e6:.2f} MB), so the "
              f"{opts.commands} commands added {(size - first_size) / 1e3:.1f} kB")

        # per-call overhead when nothing changed: panel note + before + after. An automatic yes
        # (no panel: rules, --yes) reuses the note's walk for the snapshot before the call; a
        # person's yes takes longer than the reuse window, so the snapshot is walked again.
        from agent_cli.undo.recorder import REUSE_MIN_S

        auto: list[float] = []
        person: list[float] = []
        floors = []
        for _ in range(10):
            t = time.perf_counter()
            recorder.notes(call)
            token = recorder.before(call)
            recorder.after(token, True)
            auto.append(time.perf_counter() - t)
            t = time.perf_counter()
            recorder.notes(call)
            noted = time.perf_counter() - t
            time.sleep(REUSE_MIN_S + 0.2)  # the panel is open
            t = time.perf_counter()
            token = recorder.before(call)
            recorder.after(token, True)
            person.append(noted + time.perf_counter() - t)
            floors.append(walk_floor(root))
        f = sorted(floors)[len(floors) // 2]
        a, p = sorted(auto)[len(auto) // 2], sorted(person)[len(person) // 2]
        print(f"per-call overhead, nothing changed, automatic yes (2 walks)   {fmt(auto)}; "
              f"{a / f:.1f}x the floor")
        print(f"per-call overhead, nothing changed, a person's yes (3 walks)  {fmt(person)}; "
              f"{p / f:.1f}x the floor")
        print(f"floor: one os.walk+lstat of that tree                         {fmt(floors)}")


if __name__ == "__main__" and sys.argv[1:2] != ["per-command"]:
    main()


def per_command(files: int, runs: int, snapshot_runs: int, k: int = 10) -> None:
    """Per approved command on a `files`-file tree, in one run: the bare stat walk (the floor of
    any snapshot), `true` through run_command's process path without undo, and recording effects
    on both paths (snapshots; the overlay) for a command that changes nothing and one that
    changes k files. `true` and the overlay's "nothing changed" are measured in rounds, one of
    each per round, so that the load of the machine falls on both alike; the rows that write
    (their fsyncs slow whatever follows) and the snapshot rows (a tree walk each) after them."""
    from agent_cli.config import Settings
    from agent_cli.sandbox.policy import Sandbox, install
    from agent_cli.session import load_registry
    from agent_cli.tools.procs import run_process
    from agent_cli.undo.recorder import WorkspaceRecorder
    from agent_cli.undo.store import Store

    tmp = Path(os.environ["AGENT_CLI_HOME"]).parent
    root = tmp / f"ws-{files}"
    make_tree(root, files)
    box = Sandbox("workspace", root)
    install(box)
    registry, _ = load_registry(Settings())
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}

    def run(command: str) -> None:
        out = run_process(["/bin/sh", "-c", command], cwd=str(root), env=env, timeout_s=120)
        assert out.returncode == 0, out

    def recorder(mode: str) -> WorkspaceRecorder:
        os.environ["AGENT_CLI_UNDO_OVERLAY"] = mode
        rec = WorkspaceRecorder(root, store=Store(tmp / "store-bench"))
        assert rec.overlay()[0] == (mode == "on"), rec.overlay()  # found once, kept
        call = registry.validate("toolu_b", "run_command", {"command": "true"})
        rec.notes(call)  # the first snapshot of the tree (once per session) is not counted
        rec.after(rec.before(call), True)
        return rec

    def recorded(rec: WorkspaceRecorder, command: str) -> float:
        os.environ["AGENT_CLI_UNDO_OVERLAY"] = modes[id(rec)]  # (for code that reads it each call)
        call = registry.validate("toolu_b", "run_command", {"command": command})
        t = time.perf_counter()
        rec.notes(call)
        token = rec.before(call)  # (an automatic yes: the note's walk is reused where it can be)
        run(command)
        rec.after(token, True)
        return time.perf_counter() - t

    def bare() -> float:
        t = time.perf_counter()
        run("true")
        return time.perf_counter() - t

    change = " && ".join(f"printf {i} > pkg{i}/sub0/k{i}.txt" for i in range(k))
    clean = " ; ".join(f"rm -f pkg{i}/sub0/k{i}.txt" for i in range(k))
    load = os.getloadavg()[0]
    floor = statistics.median(walk_floor(root) for _ in range(3))
    overlay, snapshots = recorder("on"), recorder("off")
    modes = {id(overlay): "on", id(snapshots): "off"}
    rows: dict[str, list[float]] = {"true": [], "overlay": [], "overlay k": []}
    for _ in range(runs):  # the goal's two rows, one of each per round
        rows["true"].append(bare())
        rows["overlay"].append(recorded(overlay, "true"))
    for _ in range(runs // 4 or 1):  # after them: their fsyncs slow what follows
        rows["overlay k"].append(recorded(overlay, change))
        recorded(overlay, clean)
    rows["snapshots"] = [recorded(snapshots, "true") for _ in range(snapshot_runs)]
    rows["snapshots k"] = []
    for _ in range(snapshot_runs):
        rows["snapshots k"].append(recorded(snapshots, change))
        recorded(snapshots, clean)
    os.environ.pop("AGENT_CLI_UNDO_OVERLAY", None)
    med = {name: statistics.median(xs) for name, xs in rows.items()}
    true_s = med["true"]
    print(f"{files:,} files (load average {load:.1f} -> {os.getloadavg()[0]:.1f}): floor "
          f"os.walk+lstat {floor * 1000:.1f} ms; `true` through run_command's process path "
          f"without undo {fmt(rows['true'])}")
    for name in ("overlay", "snapshots"):
        nothing, some = med[name], med[f"{name} k"]
        print(f"{files:,} files  {name:<9}  nothing changed {fmt(rows[name])} "
              f"({nothing / true_s:5.2f}x true, {nothing / floor:5.3f}x the floor);  "
              f"{k} files changed {some * 1000:8.1f} ms")


def main_per_command() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=40, help="rounds of the cheap rows")
    ap.add_argument("--snapshot-runs", type=int, default=3, help="runs of the snapshot rows")
    ap.add_argument("--files", type=int, nargs="*", default=[10_000, 100_000])
    opts, _ = ap.parse_known_args(sys.argv[2:])
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["AGENT_CLI_HOME"] = str(Path(tmp) / "home")
        for files in opts.files:
            per_command(files, opts.runs, opts.snapshot_runs)


if __name__ == "__main__" and sys.argv[1:2] == ["per-command"]:
    main_per_command()
