"""One output boundary: text from outside the program reaches Rich only through the sanitiser.

An AST walk over every module under agent_cli/ that imports Rich. Each value handed to Rich where
text becomes terminal output (`Console.print`, `Text(...)`, `Text.assemble`, `Text.append`,
`Table.add_row`, `Panel(..., title=...)`, `Markdown(...)` and the rest of SINKS) must be one of:
- a literal constant, or an f-string whose only fields are numbers (`{n:,}`, `{t:.2f}`);
- a value the boundary made: `safe(...)`, `safe_line(...)`, `Safe(...)`, `sanitize(...)`,
  `one_line(...)`;
- a Rich object built here (its own arguments are checked where it is built), or a call of a
  function of ours whose return annotation is such a type (its body is checked too);
- a name whose every assignment in its function (or module) is one of the above, a parameter
  annotated with a boundary type, or a piece of one (`for piece in text.wrap(...)`);
- `a + b`, `x if c else y`, tuples and lists of the above.
Anything else (an attribute such as `event.during`, a subscript, a `str` parameter, an f-string
over names) fails with the file and line. `# boundary-ok: REASON` on the line is the reviewed way
out; ALLOWED_PRAGMAS caps how many there are.

The boundary module itself (agent_cli/ui/safe_rich.py) is where sanitised text becomes Rich Text
and is not scanned.
"""

from __future__ import annotations

import ast
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "agent_cli"
BOUNDARY_MODULE = PACKAGE / "ui" / "safe_rich.py"

BOUNDARY_CALLS = {"safe", "safe_line", "Safe", "sanitize", "one_line"}
"""Calls whose result is sanitised text."""
RICH_BUILDERS = {"Text", "Panel", "Table", "Group", "Padding", "Columns", "Rule", "Markdown",
                 "Syntax", "Tree", "Align", "Constrain", "Layout", "Live", "Spinner", "Status",
                 "Pretty", "Styled", "grid", "assemble"}
"""Rich constructors: their arguments are checked where they are built, so the object is fine."""
SINK_CTORS = RICH_BUILDERS - {"grid"}
SINK_METHODS = {"print", "log", "rule", "add_row", "add_column", "append_text", "print_json",
                "assemble", "from_markup", "from_ansi", "render_str"}
TEXT_KWARGS = {"title", "subtitle", "style", "end", "sep", "header", "footer", "caption",
               "border_style", "header_style", "renderable", "text", "text_style", "characters"}
"""Keyword arguments that carry text or a style (a style string from a log could add a link)."""
SAFE_TYPES = {"Text", "Panel", "Table", "Group", "Safe", "Padding", "Columns", "Rule", "Markdown",
              "Syntax", "Tree", "Lines", "Segment", "Segments", "ConsoleRenderable", "RichCast"}
"""Rich objects (built in scanned code, so checked where built) and the boundary's own type. Not
`RenderableType`: it includes `str`."""
PIECE_METHODS = {"wrap", "split", "divide"}
"""Methods of a Text whose results are pieces of it (still sanitised)."""
NUMERIC_SPEC_END = tuple("dfeEgGn%xXob")
ALLOWED_PRAGMAS = 4


def rich_modules() -> list[Path]:
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path == BOUNDARY_MODULE:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "rich":
                out.append(path)
                break
            if isinstance(node, ast.Import) and any(a.name.split(".")[0] == "rich"
                                                    for a in node.names):
                out.append(path)
                break
    return out


def _name(func: ast.expr) -> str | None:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def _annotation_names(node: ast.expr | None) -> set[str]:
    if node is None:
        return set()
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        try:
            node = ast.parse(node.value, mode="eval").body
        except SyntaxError:
            return {node.value}
    return {n.id if isinstance(n, ast.Name) else n.attr for n in ast.walk(node)
            if isinstance(n, ast.Name | ast.Attribute)}


def _safe_annotation(node: ast.expr | None) -> bool:
    names = _annotation_names(node)
    return bool(names) and names <= SAFE_TYPES | {"None", "Iterator", "Iterable", "list",
                                                   "tuple"} and bool(names & SAFE_TYPES)


@dataclass
class Project:
    """Facts gathered over all scanned modules: functions with a safe return type, renderable
    classes of ours."""

    safe_functions: set[str] = field(default_factory=set)
    renderables: set[str] = field(default_factory=set)


def gather(paths: list[Path]) -> Project:
    p = Project()
    for path in paths:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef) and _safe_annotation(node.returns):
                p.safe_functions.add(node.name)
            if isinstance(node, ast.ClassDef) and any(
                    isinstance(b, ast.FunctionDef) and b.name in ("__rich__", "__rich_console__")
                    for b in node.body):
                p.renderables.add(node.name)
            if isinstance(node, ast.FunctionDef) and node.name in ("approval_panel",):
                p.safe_functions.add(node.name)
    return p


class Scope:
    """Assignments to each name within one function (or the module), and its parameters."""

    def __init__(self, node: ast.AST, parent: Scope | None) -> None:
        self.parent = parent
        self.assigned: dict[str, list[ast.expr]] = {}
        self.pieces: dict[str, list[ast.expr]] = {}
        self.params: dict[str, ast.expr | None] = {}
        self.unknown: set[str] = set()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            a = node.args
            for arg in [*a.posonlyargs, *a.args, *a.kwonlyargs]:
                self.params[arg.arg] = arg.annotation
            for arg in (a.vararg, a.kwarg):
                if arg is not None:
                    self.unknown.add(arg.arg)
        for child in _own_nodes(node):
            self._collect(child)

    def _target(self, target: ast.expr, value: ast.expr | None) -> None:
        if isinstance(target, ast.Name):
            if value is None:
                self.unknown.add(target.id)
            else:
                self.assigned.setdefault(target.id, []).append(value)
        elif isinstance(target, ast.Tuple | ast.List):
            for elt in target.elts:
                self._target(elt, None)  # unpacking: the pieces' types are unknown

    def _collect(self, node: ast.AST) -> None:
        if isinstance(node, ast.Assign):
            for t in node.targets:
                self._target(t, node.value)
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            if _safe_annotation(node.annotation) and isinstance(node.target, ast.Name):
                self.assigned.setdefault(node.target.id, []).append(node.value)
            else:
                self._target(node.target, node.value)
        elif isinstance(node, ast.AugAssign):
            self._target(node.target, node.value)
        elif isinstance(node, ast.For | ast.comprehension):
            it = node.iter
            if isinstance(node.target, ast.Name) and isinstance(it, ast.Call) and \
                    isinstance(it.func, ast.Attribute) and it.func.attr in PIECE_METHODS:
                self.pieces.setdefault(node.target.id, []).append(it.func.value)
            elif isinstance(node.target, ast.Name) and isinstance(it, ast.Tuple | ast.List):
                self.assigned.setdefault(node.target.id, []).extend(it.elts)
            else:
                self._target(node.target, None)
        elif isinstance(node, ast.withitem) and node.optional_vars is not None:
            self._target(node.optional_vars, None)
        elif isinstance(node, ast.NamedExpr):
            self._target(node.target, node.value)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                isinstance(node.func.value, ast.Name) and node.func.attr in ("append", "extend"):
            # list building: parts.append(x) makes x a member of parts
            for a in node.args:
                value = a if node.func.attr == "append" else ast.Starred(a)
                self.assigned.setdefault(node.func.value.id, []).append(value)

    def lookup(self, name: str) -> tuple[list[ast.expr] | None, str]:
        s: Scope | None = self
        while s is not None:
            if name in s.unknown:
                return None, "unknown"
            if name in s.params:
                return None, "param"
            if name in s.assigned or name in s.pieces:
                return s.assigned.get(name, []), "local"
            s = s.parent
        return None, "missing"


def _own_nodes(node: ast.AST) -> list[ast.AST]:
    """The nodes of a function or module body, not descending into nested functions/classes."""
    out: list[ast.AST] = []
    stack = list(ast.iter_child_nodes(node))
    while stack:
        n = stack.pop()
        out.append(n)
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda):
            continue
        stack.extend(ast.iter_child_nodes(n))
    return out


class Checker:
    def __init__(self, path: Path, project: Project) -> None:
        self.path = path
        self.source = path.read_text(encoding="utf-8")
        self.lines = self.source.splitlines()
        self.tree = ast.parse(self.source)
        self.project = project
        self.problems: list[str] = []
        self.pragmas: list[str] = []

    def run(self) -> None:
        self._visit(self.tree, Scope(self.tree, None))

    def _visit(self, node: ast.AST, scope: Scope) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                self._visit(child, Scope(child, scope))
                continue
            if isinstance(child, ast.Call):
                self._call(child, scope)
            self._visit(child, scope)

    def _call(self, call: ast.Call, scope: Scope) -> None:
        name = _name(call.func)
        if name is None:
            return
        if name in ("from_markup", "from_ansi", "render_str"):
            if not all(isinstance(a, ast.Constant) for a in call.args):
                self._flag(call, call, f"Text.{name} parses its input as markup/ANSI")
            return
        is_sink = (isinstance(call.func, ast.Name) and name in SINK_CTORS) or \
            (isinstance(call.func, ast.Attribute) and (name in SINK_METHODS or name in SINK_CTORS))
        if name == "append" and isinstance(call.func, ast.Attribute) and \
                self._is_text(call.func.value, scope):
            is_sink = True
        if not is_sink:
            return
        for arg in call.args:
            if not self.ok(arg, scope, set()):
                self._flag(call, arg, f"{name}() is given")
        for kw in call.keywords:
            if kw.arg in TEXT_KWARGS and not self.ok(kw.value, scope, set()):
                self._flag(call, kw.value, f"{name}({kw.arg}=...) is given")

    def _is_text(self, expr: ast.expr, scope: Scope) -> bool:
        """Is the receiver of `.append` a Rich Text (not a list)?"""
        if isinstance(expr, ast.Call):
            return _name(expr.func) in {"Text", "safe", "safe_line", "assemble"}
        if isinstance(expr, ast.Name):
            values, kind = scope.lookup(expr.id)
            if kind == "param":
                s: Scope | None = scope
                while s is not None and expr.id not in s.params:
                    s = s.parent
                return s is not None and "Text" in _annotation_names(s.params[expr.id])
            return bool(values) and any(self._is_text(v, scope) for v in values)
        return False

    def _flag(self, call: ast.Call, arg: ast.expr, what: str) -> None:
        line = self.lines[arg.lineno - 1] if arg.lineno - 1 < len(self.lines) else ""
        call_line = self.lines[call.lineno - 1]
        if "# boundary-ok:" in line or "# boundary-ok:" in call_line:
            self.pragmas.append(f"{self.path.name}:{arg.lineno}")
            return
        rel = (self.path.relative_to(PACKAGE.parent) if self.path.is_relative_to(PACKAGE.parent)
               else self.path.name)
        self.problems.append(f"{rel}:{arg.lineno}: {what} {ast.unparse(arg)[:80]!r}, which did "
                             "not come through the sanitiser")

    def ok(self, e: ast.expr, scope: Scope, seen: set[str]) -> bool:
        match e:
            case ast.Constant():
                return True
            case ast.JoinedStr():
                return all(isinstance(v, ast.Constant) or self._numeric(v)
                           or (isinstance(v, ast.FormattedValue) and self.ok(v.value, scope, seen))
                           for v in e.values)
            case ast.Tuple() | ast.List():
                return all(self.ok(x, scope, seen) for x in e.elts)
            case ast.Starred():
                return self.ok(e.value, scope, seen)
            case ast.IfExp():
                return self.ok(e.body, scope, seen) and self.ok(e.orelse, scope, seen)
            case ast.BoolOp():
                return all(self.ok(v, scope, seen) for v in e.values)
            case ast.BinOp(op=ast.Add()):
                return self.ok(e.left, scope, seen) and self.ok(e.right, scope, seen)
            case ast.Call():
                name = _name(e.func)
                if name in BOUNDARY_CALLS or name in RICH_BUILDERS:
                    return True
                if name == "escape" and len(e.args) == 1:  # rich.markup.escape of safe text
                    return self.ok(e.args[0], scope, seen)
                if name in self.project.safe_functions or name in self.project.renderables:
                    return True
                if isinstance(e.func, ast.Attribute) and name in PIECE_METHODS | {"copy"}:
                    return self.ok(e.func.value, scope, seen)
                return False
            case ast.Name():
                return self._name_ok(e.id, scope, seen)
        return False

    def _numeric(self, v: ast.expr) -> bool:
        if not isinstance(v, ast.FormattedValue) or v.format_spec is None:
            return False
        spec = "".join(str(c.value) for c in getattr(v.format_spec, "values", [])
                       if isinstance(c, ast.Constant))
        return spec.endswith(NUMERIC_SPEC_END) or "," in spec

    def _name_ok(self, name: str, scope: Scope, seen: set[str]) -> bool:
        if name in seen:
            return True  # a loop in the assignments: judged by the others
        seen = seen | {name}
        s: Scope | None = scope
        while s is not None:
            if name in s.unknown:
                return False
            if name in s.params:
                ann = s.params[name]
                return _safe_annotation(ann) or bool(
                    _annotation_names(ann) & self.project.renderables)
            if name in s.assigned or name in s.pieces:
                values = s.assigned.get(name, [])
                pieces = s.pieces.get(name, [])
                return (all(self.ok(v, s, seen) for v in values)
                        and all(self.ok(p, s, seen) for p in pieces))
            s = s.parent
        return False


def _returns(fn: ast.FunctionDef) -> list[ast.expr | None]:
    return [n.value for n in _own_nodes(fn) if isinstance(n, ast.Return)]


def infer_safe_functions(paths: list[Path], project: Project) -> None:
    """Add functions of ours whose every `return` gives a boundary value (e.g. a helper that
    returns `escape(sanitize(text))`), repeating until nothing more is learnt."""
    defs: dict[str, list[tuple[ast.FunctionDef, Checker, Scope]]] = {}
    for path in paths:
        c = Checker(path, project)
        module = Scope(c.tree, None)
        for node in ast.walk(c.tree):
            if isinstance(node, ast.FunctionDef):
                defs.setdefault(node.name, []).append((node, c, Scope(node, module)))
    changed = True
    while changed:
        changed = False
        for name, found in defs.items():
            if name in project.safe_functions:
                continue
            if all(_returns(fn) and all(r is not None and c.ok(r, scope, set())
                                        for r in _returns(fn)) for fn, c, scope in found):
                project.safe_functions.add(name)
                changed = True


def check(paths: list[Path]) -> tuple[list[str], list[str]]:
    project = gather(paths)
    infer_safe_functions(paths, project)
    problems: list[str] = []
    pragmas: list[str] = []
    for path in paths:
        c = Checker(path, project)
        c.run()
        problems += c.problems
        pragmas += c.pragmas
    return problems, pragmas


def test_the_scan_covers_the_ui_and_replay_modules() -> None:
    names = {p.relative_to(PACKAGE).as_posix() for p in rich_modules()}
    assert {"ui/panel.py", "ui/render.py", "ui/repl.py", "ui/commands.py", "ui/views/replay.py",
            "ui/views/rerun_report.py"} <= names


def test_no_raw_string_reaches_rich() -> None:
    problems, pragmas = check(rich_modules())
    assert not problems, "\n".join(problems)
    assert len(pragmas) <= ALLOWED_PRAGMAS, pragmas


# -- the checker itself: it must catch the holes it exists for -----------------------------------

def _check_source(tmp_path: Path, source: str) -> list[str]:
    path = tmp_path / "probe.py"
    path.write_text(textwrap.dedent(source), encoding="utf-8")
    problems, _ = check([path])
    return problems


@pytest.mark.parametrize("source", [
    # issue 11 item 7: a replayed log field straight into Text
    """
    from rich.text import Text
    def show(c, event):
        c.print(Text(f"Interrupted ({event.during}).", style="yellow"))
    """,
    # issue 11 item 1: argument names joined into a note printed as Text
    """
    from rich.text import Text
    def note(c, request):
        sizes = [f"{k}: {len(v)}" for k, v in request.args.items()]
        msg = "tall: " + "; ".join(sizes)
        c.print(Text("! " + msg, style="bold yellow"))
    """,
    """
    from rich.table import Table
    def rows(t: Table, args: dict) -> None:
        for k, v in args.items():
            t.add_row(k, str(v))
    """,
    """
    from rich.panel import Panel
    def p(body, name: str):
        return Panel(body, title=name)
    """,
    """
    from rich.text import Text
    def t(x: str) -> Text:
        out = Text()
        out.append(x)
        return out
    """,
    """
    from rich.text import Text
    def t(x):
        return Text.from_markup(x)
    """,
    """
    from rich.console import Console
    def t(c: Console, record):
        c.print(record["effect"])
    """,
    """
    from rich.text import Text
    def t(c, event):
        c.print(Text("hash ") + Text(event.args_hash[:16]))
    """,
])
def test_the_checker_catches_raw_text(tmp_path: Path, source: str) -> None:
    assert _check_source(tmp_path, source)


@pytest.mark.parametrize("source", [
    """
    from rich.text import Text
    from agent_cli.ui.safe_rich import safe, safe_line
    def show(c, event):
        c.print(Text("Interrupted (", style="yellow") + safe_line(event.during, 40) + Text(")"))
        n = len(event.text)
        c.print(Text(f"{n:,} lines, {event.duration:.2f} s", style="dim"))
    """,
    """
    from rich.console import Group
    from rich.text import Text
    from agent_cli.ui.safe_rich import safe
    def g(c, items):
        parts = [Text("head")]
        for i in items:
            parts.append(safe(i))
        c.print(Group(*parts))
    """,
])
def test_the_checker_accepts_sanitised_text(tmp_path: Path, source: str) -> None:
    assert _check_source(tmp_path, source) == []
