"""Which tools a session offers: the one place scope is applied (OWASP LLM06, excessive agency).

A model that is never shown `run_command` cannot be talked into calling it. Scope comes from
config `tools` / `exclude_tools` / `read_only`, the flags `--tools`, `--exclude-tools`,
`--read-only`, `/mode read-only` in the REPL, and an eval task's `tools` / `read_only`. Every
one of them is a `Scope`; `ScopedRegistry` holds all loaded tools and offers those in scope, so
tools that join later (MCP servers) are held to the same scope, and a mode switch needs no
reload.

Two kinds of hidden tool:
- out of scope (not in an include list, or excluded): unknown to the model; a call to one is an
  unknown tool, rejected by the registry like any made-up name;
- a write tool hidden by read-only mode: not offered, but still known, so a call to one reaches
  the Gate, which refuses it before any panel (by="policy"), saying read-only mode is on.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from agent_cli.tools.base import Tool
from agent_cli.tools.registry import Registry

READ_ONLY_REASON = ("read-only mode is on: only read tools are offered and nothing is changed "
                    "(`/mode normal` in the REPL, or a session without --read-only, allows "
                    "changes)")


@dataclass(frozen=True)
class Include:
    """Tool-name globs (fnmatch, case-sensitive) of which one must match; `origin` says where the
    list came from, for `/tools` and error messages."""

    globs: tuple[str, ...]
    origin: str


@dataclass
class Scope:
    """The tools a session may offer. Every include list must match (they narrow each other:
    an eval task's list inside the user's config list); any exclude glob removes a tool."""

    includes: list[Include] = field(default_factory=list)
    excludes: list[tuple[str, str]] = field(default_factory=list)
    """(glob, origin) pairs."""
    read_only: bool = False
    """Only `read` tools are offered; the Gate refuses write calls."""

    @classmethod
    def of(cls, tools: Iterable[str] | None = None, exclude: Iterable[str] = (),
           read_only: bool = False, origin: str = "config") -> Scope:
        scope = cls(read_only=read_only)
        if tools is not None:
            scope.includes.append(Include(tuple(split_globs(tools)), f"{origin} tools"))
        scope.excludes.extend((g, f"{origin} exclude_tools") for g in split_globs(exclude))
        return scope

    def narrowed(self, other: Scope | None) -> Scope:
        """Both scopes at once (for an eval task inside the user's settings)."""
        if other is None:
            return self
        return Scope([*self.includes, *other.includes], [*self.excludes, *other.excludes],
                     self.read_only or other.read_only)

    def is_empty(self) -> bool:
        return not self.includes and not self.excludes and not self.read_only

    def out_of_scope(self, name: str) -> str | None:
        """Why a tool of this name is not known to the model at all, or None."""
        for inc in self.includes:
            if not any(fnmatch.fnmatchcase(name, g) for g in inc.globs):
                return f"not in {inc.origin} ({', '.join(inc.globs) or 'empty'})"
        for glob, origin in self.excludes:
            if fnmatch.fnmatchcase(name, glob):
                return f"excluded by {origin} pattern {glob!r}"
        return None

    def why_hidden(self, tool: Tool) -> str | None:
        """Why this tool is not offered, or None when it is."""
        reason = self.out_of_scope(tool.name)
        if reason is not None:
            return reason
        if self.read_only and tool.effect != "read":
            return "read-only mode (it is a write tool)"
        return None

    def unmatched(self, names: Iterable[str]) -> list[str]:
        """Include globs that match none of `names` (a typo such as `wirte_file`)."""
        names = list(names)
        return [g for inc in self.includes for g in inc.globs
                if not any(fnmatch.fnmatchcase(n, g) for n in names)]

    def describe(self) -> str:
        parts = [f"{inc.origin}: {', '.join(inc.globs)}" for inc in self.includes]
        parts += [f"{origin}: {glob}" for glob, origin in self.excludes]
        if self.read_only:
            parts.append("read-only mode")
        return "; ".join(parts) or "all loaded tools"


def split_globs(values: Iterable[str] | str) -> list[str]:
    """`--tools read_file,list_dir` and `--tools read_file --tools list_dir` both work."""
    if isinstance(values, str):
        values = [values]
    return [part.strip() for v in values for part in v.split(",") if part.strip()]


class ScopedRegistry(Registry):
    """A registry that knows every loaded tool and offers the ones in scope. `get` (what a call
    is validated against) finds tools in scope, including write tools hidden by read-only mode
    (the Gate refuses those); iteration, `names` and `specs` (what the model is shown) give only
    the offered ones."""

    def __init__(self, scope: Scope, tools: Iterable[Tool] = ()) -> None:
        self.scope = scope
        super().__init__(tools)

    def get(self, name: str) -> Tool | None:
        tool = super().get(name)
        if tool is None or self.scope.out_of_scope(tool.name) is not None:
            return None
        return tool

    def all_tools(self) -> list[Tool]:
        """Every loaded tool, offered or not."""
        return sorted(self._tools.values(), key=lambda t: t.name)

    def offered(self) -> list[Tool]:
        return [t for t in self.all_tools() if self.scope.why_hidden(t) is None]

    def hidden(self) -> list[tuple[Tool, str]]:
        """(tool, why it is not offered) for every loaded tool that is not offered."""
        out = []
        for tool in self.all_tools():
            why = self.scope.why_hidden(tool)
            if why is not None:
                out.append((tool, why))
        return out

    def names(self) -> list[str]:
        return [t.name for t in self.offered()]

    def __iter__(self) -> Iterator[Tool]:
        return iter(self.offered())

    def __len__(self) -> int:
        return len(self.offered())

    def specs(self) -> list[dict[str, Any]]:
        return [t.spec() for t in self.offered()]


def scoped(registry: Registry, scope: Scope) -> ScopedRegistry:
    """`registry`'s tools under `scope` (a ScopedRegistry is narrowed, not wrapped twice)."""
    if isinstance(registry, ScopedRegistry):
        registry.scope = registry.scope.narrowed(scope)
        return registry
    return ScopedRegistry(scope, registry)
