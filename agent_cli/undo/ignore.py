"""A small .gitignore matcher: what a workspace snapshot leaves out.

Covers the syntax people write: `#` comments, blank lines, `!` negation, a trailing `/` (folders
only), a leading or inner `/` (anchored to the .gitignore's folder), `*`, `?`, `[...]`, `**`
(`**/x`, `x/**`, `a/**/b`) and backslash escapes. Rules of nested .gitignore files apply below
their folder; the last matching rule wins, deeper files after shallower ones. As in git, a path
inside an ignored folder cannot be re-included (the walk never enters that folder).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MAX_IGNORE_BYTES = 1_000_000
"""A .gitignore bigger than this is not read (it is workspace data: bounded work)."""


@dataclass(frozen=True)
class Rule:
    regex: re.Pattern[str]
    negate: bool
    dir_only: bool


def _translate(pattern: str) -> str:
    """The regex body for one glob, matched against a path relative to the rule's folder."""
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "\\" and i + 1 < n:
            out.append(re.escape(pattern[i + 1]))
            i += 2
            continue
        if c == "*":
            if pattern.startswith("**", i):
                before_ok = i == 0 or pattern[i - 1] == "/"
                after = pattern[i + 2:i + 3]
                if before_ok and after == "/":
                    out.append("(?:.*/)?")  # `**/`: zero or more folders
                    i += 3
                    continue
                if before_ok and i + 2 == n:
                    out.append(".*")  # trailing `/**`: everything inside
                    i += 2
                    continue
                out.append("[^/]*")  # `**` elsewhere acts like `*`
                i += 2
                continue
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            j = i + 1
            if j < n and pattern[j] in "!^":
                j += 1
            if j < n and pattern[j] == "]":
                j += 1
            while j < n and pattern[j] != "]":
                j += 1
            if j >= n:
                out.append(re.escape(c))  # no closing bracket: a literal `[`
            else:
                body = pattern[i + 1:j]
                if body[:1] in ("!", "^"):
                    body = "^" + body[1:]
                out.append("[" + body.replace("\\", "\\\\") + "]")
                i = j + 1
                continue
        else:
            out.append(re.escape(c))
        i += 1
    return "".join(out)


def parse(text: str) -> list[Rule]:
    rules: list[Rule] = []
    for line in text.splitlines():
        if line.endswith("\r"):
            line = line[:-1]
        # trailing spaces are dropped unless escaped
        stripped = line.rstrip(" ")
        if stripped.endswith("\\") and len(stripped) < len(line):
            stripped += " "
        line = stripped
        if not line or line.startswith("#"):
            continue
        negate = line.startswith("!")
        if negate or line.startswith("\\!") or line.startswith("\\#"):
            line = line[1:]
        dir_only = line.endswith("/")
        line = line.rstrip("/")
        if not line:
            continue
        anchored = "/" in line
        line = line.lstrip("/")
        body = _translate(line)
        prefix = "" if anchored else "(?:.*/)?"
        try:
            regex = re.compile(f"{prefix}{body}", re.DOTALL)
        except re.error:
            continue  # a pattern git would not understand either: ignore the line
        rules.append(Rule(regex, negate, dir_only))
    return rules


class Matcher:
    """The rules in force for one folder: its parent's plus its own .gitignore."""

    __slots__ = ("layers",)

    def __init__(self, layers: tuple[tuple[str, tuple[Rule, ...]], ...] = ()) -> None:
        self.layers = layers
        """(folder relative to the workspace, with a trailing `/` or "", rules) root first."""

    def child(self, folder: str, rules: list[Rule]) -> Matcher:
        """The matcher for `folder` (relative, POSIX, no trailing slash) with its own rules."""
        if not rules:
            return self
        base = folder + "/" if folder else ""
        return Matcher((*self.layers, (base, tuple(rules))))

    def ignored(self, rel: str, is_dir: bool) -> bool:
        verdict = False
        for base, rules in self.layers:
            if not rel.startswith(base):
                continue
            sub = rel[len(base):]
            for rule in rules:
                if rule.dir_only and not is_dir:
                    continue
                if rule.regex.fullmatch(sub):
                    verdict = not rule.negate
        return verdict
