"""The repository's docs are self-contained: what the code relies on is stated in README.md,
SECURITY.md or docs/, never in a document the repository does not hold.

Two checks on the text: no file of the package, its tests, tools, benchmarks, examples or docs
cites the team's design notes (which are not shipped) by name, and every relative link in the
Markdown docs leads to a file that exists.
"""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
OUTSIDE_NOTE = "design" + ".md"
"""The name of the notes that are not in the repository (spelled apart so this file is not a
citation itself)."""
TREES = ("agent_cli", "docs", "tests", "bench", "tools.d", "examples")
TOP = ("README.md", "SECURITY.md", "pyproject.toml")
LINK = re.compile(r"\]\(([^)\s#]+)(?:#[^)]*)?\)")


def _texts() -> list[Path]:
    files = [REPO / name for name in TOP if (REPO / name).is_file()]
    for tree in TREES:
        for path in sorted((REPO / tree).rglob("*")):
            if "node_modules" in path.parts or not path.is_file():
                continue
            if path.suffix in (".py", ".md", ".toml", ".json", ".txt", ".sh"):
                files.append(path)
    return files


def test_nothing_cites_notes_outside_the_repository() -> None:
    cites = []
    for path in _texts():
        for n, line in enumerate(path.read_text(encoding="utf-8", errors="replace")
                                 .splitlines(), 1):
            if OUTSIDE_NOTE in line:
                cites.append(f"{path.relative_to(REPO)}:{n}: {line.strip()}")
    assert not cites, ("state the contract in docs/ (docs/contracts.md and its neighbours) and "
                       "point there instead:\n" + "\n".join(cites))


def test_relative_links_in_the_docs_lead_to_files() -> None:
    broken = []
    docs = [REPO / "README.md", REPO / "SECURITY.md", *sorted((REPO / "docs").glob("*.md"))]
    for doc in docs:
        for target in LINK.findall(doc.read_text(encoding="utf-8")):
            if re.match(r"^[a-z]+:", target):
                continue  # a URL
            if not (doc.parent / target).exists():
                broken.append(f"{doc.relative_to(REPO)} -> {target}")
    assert not broken, "links to files that do not exist:\n" + "\n".join(broken)


def test_the_checks_see_what_they_look_for() -> None:
    assert LINK.findall("see [x](docs/a.md#part) and [y](https://e.example/)") == [
        "docs/a.md", "https://e.example/"]
    assert OUTSIDE_NOTE.endswith(".md") and OUTSIDE_NOTE.startswith("design")
