"""Help pages a person can read: plain metavars (FILE, DIR, N, URL, NAME), no Python types, no
summaries cut mid-sentence, the same look on every typer version the project supports.

typer's own help shows `LOG <path>`, `--trust <list[Path]>`, `{PROMPT}` and `[x>=1]`, and click
cuts each command's summary at 45 characters. These classes format the same records without
that noise. `App` makes them the default for every command registered on it, so a command added
later (by anyone) gets the same help without remembering a `cls=`.
"""

from __future__ import annotations

import re
from typing import Any

import typer
from typer.core import TyperCommand, TyperGroup

_TYPE_SUFFIX = re.compile(r"\s+<[^<>]*>$")
"""`LOG <path>`, `--trust <list[Path]>`: typer's type labels after the metavar."""
_RANGE = re.compile(r"\s*\[(?:x|[0-9.]+<=x)(?:[<>]=?[0-9.]+)?\]")
"""`[x>=1]`: click's range hint (the help sentence says the range in words).

typer 0.29 vendors its own click (typer._click) where 0.13 uses click itself, so the click types
below are `Any`."""
_BRACES = re.compile(r"^\{(.*)\}(\.\.\.)?$")


def _clean(record: tuple[str, str]) -> tuple[str, str]:
    name, text = record
    name = _TYPE_SUFFIX.sub("", name)
    text = _RANGE.sub("", text).replace("[]", "").replace("  ", " ").strip()
    return name, text


def format_params(cmd: Any, ctx: Any, formatter: Any) -> None:
    args: list[tuple[str, str]] = []
    opts: list[tuple[str, str]] = []
    for param in cmd.get_params(ctx):
        record = param.get_help_record(ctx)
        if record is None:
            continue
        (args if param.param_type_name == "argument" else opts).append(_clean(record))
    if args:
        with formatter.section("Arguments"):
            formatter.write_dl(args)
    if opts:
        with formatter.section("Options"):
            formatter.write_dl(opts)


class PlainCommand(TyperCommand):
    bare_options: tuple[str, ...] = ()
    """Options whose value may be left out (`chat --resume` alone): they then get ""."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        fixed = list(args)
        for i, arg in enumerate(fixed):
            if arg == "--":
                break
            if arg in self.bare_options and (i + 1 == len(fixed) or fixed[i + 1].startswith("-")):
                fixed[i] = arg + "="
        return list(super().parse_args(ctx, fixed))

    def format_options(self, ctx: Any, formatter: Any) -> None:
        format_params(self, ctx, formatter)

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        pieces = super().collect_usage_pieces(ctx)
        return [_BRACES.sub(r"\1\2", p) for p in pieces]


class PlainGroup(TyperGroup):
    def format_options(self, ctx: Any, formatter: Any) -> None:
        format_params(self, ctx, formatter)
        self.format_commands(ctx, formatter)

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        """Each command's first sentence in full (click cuts it at 45 characters)."""
        rows: list[tuple[str, str]] = []
        for name in self.list_commands(ctx):
            cmd = self.get_command(ctx, name)
            if cmd is None or cmd.hidden:
                continue
            rows.append((name, cmd.get_short_help_str(limit=10_000)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


class App(typer.Typer):
    """A typer app whose commands and groups use the plain help above."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("cls", PlainGroup)
        super().__init__(**kwargs)

    def command(self, *args: Any, **kwargs: Any) -> Any:
        kwargs.setdefault("cls", PlainCommand)
        return super().command(*args, **kwargs)


def _unset(value: Any) -> bool:
    from typer.models import DefaultPlaceholder

    return value is None or isinstance(value, DefaultPlaceholder) or value is TyperGroup


def plain_everywhere(app: typer.Typer) -> None:
    """Give every group and command registered on `app` (also sub-apps made with plain
    `typer.Typer`, such as `mcp`) the plain help, unless it chose a class of its own."""
    for info in app.registered_commands:
        if _unset(info.cls):
            info.cls = PlainCommand
    for group in app.registered_groups:
        sub = group.typer_instance
        if _unset(group.cls):
            group.cls = PlainGroup
        if sub is None:
            continue
        if _unset(sub.info.cls):
            sub.info.cls = PlainGroup
        plain_everywhere(sub)
