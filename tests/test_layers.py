"""One direction of imports, checked on the source.

The flow is CLI -> session -> loop -> (tools | providers | log) -> foundation. Each module of
agent_cli has a rank (LAYERS, the most specific prefix wins); it may import only modules of its
own rank or lower. Every import counts: top level, inside a function (lazy imports are still a
dependency) and under TYPE_CHECKING (a type is a dependency too). Rich, prompt-toolkit and typer
may be imported only where the table says. A module that no prefix places fails the test, so a
new module has to be given a place on purpose.

The same walk checks the size cap: no module is longer than MAX_LINES.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "agent_cli"

LAYERS: dict[str, int] = {
    # 0: foundation: plain data and pure functions every layer uses. ("agent_cli" itself is the
    # package's __init__ only; it places no submodule.)
    "agent_cli": 0,
    "agent_cli.errors": 0,
    "agent_cli.safe_text": 0,
    "agent_cli.secrets_table": 0,
    "agent_cli.redact": 0,
    "agent_cli.private_files": 0,
    "agent_cli.write_faults": 0,
    "agent_cli.signals": 0,
    "agent_cli.cancel": 0,
    "agent_cli.events": 0,
    "agent_cli.approval": 0,
    "agent_cli.config": 0,
    "agent_cli.locations": 0,
    "agent_cli.usage": 0,
    "agent_cli.conversation": 0,
    "agent_cli.calls": 0,
    "agent_cli.diff_lines": 0,
    "agent_cli.call_warnings": 0,
    # 1: the parts the loop drives, and the record it leaves.
    "agent_cli.tools": 1,
    "agent_cli.providers": 1,
    "agent_cli.sandbox": 1,
    "agent_cli.log": 1,
    "agent_cli.undo": 1,
    "agent_cli.skills": 1,
    "agent_cli.instructions": 1,
    "agent_cli.trusted_input": 1,
    "agent_cli.demo": 1,
    # 2: the engine.
    "agent_cli.loop": 2,
    "agent_cli.tool_calls": 2,
    "agent_cli.turn": 2,
    "agent_cli.session_parts": 3,
    "agent_cli.context": 2,
    # 3: the composition root.
    "agent_cli.session": 3,
    # 4: programs built on a session: re-running a log, evaluation.
    "agent_cli.log.rerun": 4,
    "agent_cli.eval": 4,
    # 5: the front ends: the terminal, and editors over the Agent Client Protocol.
    "agent_cli.ui": 5,
    "agent_cli.acp": 5,
    # 6: the command line.
    "agent_cli.cli": 6,
    "agent_cli.__main__": 6,
}

THIRD_PARTY_UI = {"rich": 5, "prompt_toolkit": 5, "typer": 6}
"""Terminal libraries and the lowest rank allowed to import them."""

MAX_LINES = 500


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def rank_of(module: str) -> int | None:
    best: tuple[int, int] | None = None
    for prefix, rank in LAYERS.items():
        placed = module == prefix or (prefix != "agent_cli" and module.startswith(prefix + "."))
        if placed and (best is None or len(prefix) > best[0]):
            best = (len(prefix), rank)
    return None if best is None else best[1]


def imports_of(path: Path) -> list[tuple[int, str]]:
    """(line, absolute module) for every import in the file, relative ones resolved."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    here = module_name(path).split(".")
    package = here if path.name == "__init__.py" else here[:-1]
    out: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            out.append((node.lineno, target))
            # `from agent_cli import session` imports the submodule `session`.
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                if (PACKAGE.parent / Path(*sub.split("."))).with_suffix(".py").exists() or (
                        PACKAGE.parent / Path(*sub.split(".")) / "__init__.py").exists():
                    out.append((node.lineno, sub))
    return out


def sources() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def test_every_module_has_a_layer() -> None:
    unplaced = [module_name(p) for p in sources() if rank_of(module_name(p)) is None]
    assert not unplaced, f"give these modules a rank in LAYERS: {unplaced}"


def test_imports_point_down() -> None:
    problems: list[str] = []
    for path in sources():
        me = module_name(path)
        mine = rank_of(me)
        if mine is None:
            continue
        for line, target in imports_of(path):
            top = target.split(".")[0]
            if top in THIRD_PARTY_UI and mine < THIRD_PARTY_UI[top]:
                problems.append(f"{path.relative_to(PACKAGE.parent)}:{line}: {me} (rank {mine}) "
                                f"imports {top}")
            if top != "agent_cli":
                continue
            theirs = rank_of(target)
            if theirs is not None and theirs > mine:
                problems.append(f"{path.relative_to(PACKAGE.parent)}:{line}: {me} (rank {mine}) "
                                f"imports {target} (rank {theirs})")
    assert not problems, "imports against the flow:\n" + "\n".join(sorted(set(problems)))


def test_no_module_over_the_cap() -> None:
    long = {module_name(p): n for p in sources()
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert not long, f"modules over {MAX_LINES} lines: {long}"


def test_the_root_package_places_no_submodule() -> None:
    assert rank_of("agent_cli.somewhere_new") is None


@pytest.mark.parametrize("module,target,ok", [
    ("agent_cli.loop", "agent_cli.tools.registry", True),
    ("agent_cli.loop", "agent_cli.session", False),
    ("agent_cli.tools.registry", "agent_cli.ui.panel", False),
    ("agent_cli.log.rerun", "agent_cli.session", True),
    ("agent_cli.log.writer", "agent_cli.session", False),
    ("agent_cli.cli.chat", "agent_cli.ui.repl", True),
    ("agent_cli.conversation", "agent_cli.loop", False),
])
def test_the_rank_table_reads_as_intended(module: str, target: str, ok: bool) -> None:
    mine, theirs = rank_of(module), rank_of(target)
    assert mine is not None and theirs is not None
    assert (theirs <= mine) is ok


def test_the_editor_front_end_knows_no_terminal() -> None:
    """agent_cli.acp shares rank 5 with the terminal, but it speaks JSON-RPC on a stream that
    must hold nothing else: no Rich, prompt-toolkit or typer (and nothing of ui/) in it."""
    problems = [f"{path.relative_to(PACKAGE.parent)}:{line}: imports {target}"
                for path in sources() if module_name(path).startswith("agent_cli.acp")
                for line, target in imports_of(path)
                if target.split(".")[0] in THIRD_PARTY_UI or target.startswith("agent_cli.ui")]
    assert not problems, "\n".join(problems)
