"""One direction of imports, checked on the source.

The flow is CLI -> session -> loop -> (tools | providers | log) -> foundation. Each module of
agent_cli has a rank (LAYERS, the most specific prefix wins); it may import only modules of its
own rank or lower. Every import counts: top level, inside a function (lazy imports are still a
dependency) and under TYPE_CHECKING (a type is a dependency too). Rich, prompt-toolkit and typer
may be imported only where the table says. A module that no prefix places fails the test, so a
new module has to be given a place on purpose.

Equal ranks do not make a free-for-all: the parts a prefix names (a package such as `log`, or a
module such as `calls`) must not import each other in a circle, lazily or not. When two parts
need one piece, the piece moves down, or into one of them; a circle of imports is one part
split over two names. TYPE_ONLY lists the few imports of a type against the flow that are
allowed, each only under `if TYPE_CHECKING:` (no code of the higher layer ever runs from there).

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
    "agent_cli.tools.paths": 1,  # the path guard: tools and trusted_input both stand on it
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
    "agent_cli.rerun": 4,
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

TYPE_ONLY: dict[tuple[str, str], str] = {
    ("agent_cli.calls", "agent_cli.tools.base"):
        "a Call names the Tool that runs it (Call.tool); the type only, for mypy",
}
"""(importer, imported): why a type of a higher layer may be named there under TYPE_CHECKING."""

MAX_LINES = 500


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def unit_of(module: str) -> str | None:
    """The part a module belongs to: the most specific LAYERS prefix that places it."""
    best: str | None = None
    for prefix in LAYERS:
        placed = module == prefix or (prefix != "agent_cli" and module.startswith(prefix + "."))
        if placed and (best is None or len(prefix) > len(best)):
            best = prefix
    return best


def rank_of(module: str) -> int | None:
    unit = unit_of(module)
    return None if unit is None else LAYERS[unit]


def _type_checking_lines(tree: ast.AST) -> set[int]:
    """Lines of the imports inside an `if TYPE_CHECKING:` block (not its else)."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and (
                (isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING")
                or (isinstance(node.test, ast.Attribute) and node.test.attr == "TYPE_CHECKING")):
            for stmt in node.body:
                lines.update(n.lineno for n in ast.walk(stmt)
                             if isinstance(n, ast.Import | ast.ImportFrom))
    return lines


def type_only_lines(path: Path) -> set[int]:
    return _type_checking_lines(ast.parse(path.read_text(encoding="utf-8")))


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
            # `from agent_cli import session` imports the submodule `session` (and, as every
            # import of a submodule does, runs the package's __init__: that is not counted as a
            # dependency on the package's other modules); any other name comes from the package.
            names_only = False
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                if (PACKAGE.parent / Path(*sub.split("."))).with_suffix(".py").exists() or (
                        PACKAGE.parent / Path(*sub.split(".")) / "__init__.py").exists():
                    out.append((node.lineno, sub))
                else:
                    names_only = True
            if names_only:
                out.append((node.lineno, target))
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
        typed = type_only_lines(path)
        for line, target in imports_of(path):
            top = target.split(".")[0]
            if top in THIRD_PARTY_UI and mine < THIRD_PARTY_UI[top]:
                problems.append(f"{path.relative_to(PACKAGE.parent)}:{line}: {me} (rank {mine}) "
                                f"imports {top}")
            if top != "agent_cli":
                continue
            theirs = rank_of(target)
            if line in typed and (me, target) in TYPE_ONLY:
                continue
            if theirs is not None and theirs > mine:
                problems.append(f"{path.relative_to(PACKAGE.parent)}:{line}: {me} (rank {mine}) "
                                f"imports {target} (rank {theirs})")
    assert not problems, "imports against the flow:\n" + "\n".join(sorted(set(problems)))


def part_graph() -> dict[str, dict[str, list[str]]]:
    """Imports between different parts of one rank: importer -> imported -> where."""
    graph: dict[str, dict[str, list[str]]] = {}
    for path in sources():
        me = unit_of(module_name(path))
        if me is None:
            continue
        for line, target in imports_of(path):
            theirs = unit_of(target) if target.split(".")[0] == "agent_cli" else None
            if theirs is None or theirs == me or LAYERS[theirs] != LAYERS[me]:
                continue
            graph.setdefault(me, {}).setdefault(theirs, []).append(
                f"{path.relative_to(PACKAGE.parent)}:{line}")
    return graph


def circles(graph: dict[str, dict[str, list[str]]]) -> list[list[str]]:
    """The strongly connected groups of more than one part (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph.get(node, {}):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group: list[str] = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                group.append(top)
                if top == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_circle_between_parts_of_one_rank() -> None:
    graph = part_graph()
    problems = []
    for group in circles(graph):
        where = [f"  {a} -> {b}: {', '.join(graph[a][b][:3])}" for a in group for b in group
                 if b in graph.get(a, {})]
        problems.append(" <-> ".join(group) + "\n" + "\n".join(where))
    assert not problems, ("parts of one rank that import each other (move the shared piece "
                          "down, or into one of them):\n" + "\n".join(problems))


def test_the_circle_check_sees_a_circle() -> None:
    graph = {"a": {"b": ["a.py:1"]}, "b": {"c": ["b.py:1"]}, "c": {"a": ["c.py:1"]},
             "d": {"a": ["d.py:1"]}}
    assert circles(graph) == [["a", "b", "c"]]
    assert circles({"a": {"b": ["a.py:1"]}}) == []


def test_type_only_imports_are_found_under_type_checking_only() -> None:
    tree = ast.parse("from typing import TYPE_CHECKING\nimport os\nif TYPE_CHECKING:\n"
                     "    import json\nelse:\n    import re\n")
    assert _type_checking_lines(tree) == {4}


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
    ("agent_cli.rerun", "agent_cli.session", True),
    ("agent_cli.log.show", "agent_cli.rerun", False),
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
