"""`agent-cli replay LOG --output html`: one self-contained page to show a colleague what an agent
did (docs/contracts.md, "The shareable replay").

The page needs nothing else: the CSS is inline, there is no script, no font, no image, no link to
follow. Every string from the log goes through html_text (the terminal sanitiser, then
`html.escape`), so nothing a model, a tool or an edited log wrote can become markup, script,
style or a URL; a Content-Security-Policy meta tag (`default-src 'none'`) is a second wall in
case a bug ever let one through. It shows the header (model, workspace, dates, the integrity
check made at export time), the conversation with the model's Markdown rendered through the
allow-list renderer, every approval panel as the terminal showed it (arguments, preview diff in
colour, warnings), each decision with who decided and why, the results (long ones folded in
`<details>`), and tokens and cost. Light and dark follow prefers-color-scheme; it reads on a
phone and prints with the folded results opened.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, assert_never

from agent_cli import __version__
from agent_cli import events as ev
from agent_cli.calls import Call
from agent_cli.diff_lines import line_kind
from agent_cli.errors import LogError
from agent_cli.events import call_of
from agent_cli.log.html_text import markdown, text
from agent_cli.log.keys import log_key
from agent_cli.log.show import show, when
from agent_cli.log.verify import verify
from agent_cli.safe_text import one_line
from agent_cli.usage import UsageMeter

CSP = "default-src 'none'; style-src 'unsafe-inline'"
CALL_LINE = 300
"""Characters of a call's input on its one-line summary; a longer one also gets a fold."""
FOLD_LINES = 12
FOLD_CHARS = 1500
"""A result longer than this is folded in <details> (shown whole when opened or printed)."""

CSS = """
:root { color-scheme: light dark; --bg: #fdfdfc; --fg: #1d1f21; --dim: #6a6f75; --line: #d8dadd;
  --panel: #fff8e6; --panel-line: #d9a400; --user: #eef4ff; --model: #ffffff; --add: #d9f5dd;
  --add-fg: #116329; --del: #fde0e0; --del-fg: #a0111f; --hunk: #0b6e99; --tok-bg: #f5d90a;
  --tok-fg: #000; --ok: #116329; --bad: #a0111f; --code: #f3f4f6; }
@media (prefers-color-scheme: dark) {
  :root { --bg: #15171a; --fg: #e4e6e8; --dim: #9aa0a6; --line: #33373c; --panel: #2a2410;
    --panel-line: #b38a00; --user: #18243a; --model: #1b1e22; --add: #12341b; --add-fg: #7ee2a0;
    --del: #3d1517; --del-fg: #ff9ea6; --hunk: #6cc4ee; --tok-bg: #c9a800; --tok-fg: #000;
    --ok: #7ee2a0; --bad: #ff9ea6; --code: #22262b; }
}
* { box-sizing: border-box; }
html { -webkit-text-size-adjust: 100%; }
body { margin: 0 auto; max-width: 60rem; padding: 1rem; background: var(--bg); color: var(--fg);
  font: 15px/1.5 system-ui, -apple-system, "Segoe UI", sans-serif; overflow-wrap: anywhere; }
pre, code { font-family: ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace;
  font-size: 0.9em; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; margin: 0.3rem 0; }
header.page { border-bottom: 2px solid var(--line); margin-bottom: 1rem; }
header.page h1 { font-size: 1.3rem; margin: 0 0 0.4rem; }
dl.meta { display: grid; grid-template-columns: max-content 1fr; gap: 0.1rem 0.8rem;
  margin: 0.4rem 0; }
dl.meta dt { color: var(--dim); } dl.meta dd { margin: 0; }
.verify { border-left: 4px solid var(--ok); padding: 0.3rem 0.6rem; margin: 0.6rem 0; }
.verify.bad { border-color: var(--bad); }
.verify .verdict { font-weight: 600; }
.turn { border-top: 1px solid var(--line); padding-top: 0.4rem; margin-top: 1rem; }
.turn > h2 { font-size: 1rem; color: var(--dim); margin: 0.2rem 0; }
.msg { border-radius: 6px; padding: 0.4rem 0.7rem; margin: 0.5rem 0;
  border: 1px solid var(--line); }
.msg.user { background: var(--user); }
.msg.model { background: var(--model); }
.who { font-size: 0.8rem; color: var(--dim); font-weight: 600; }
.md p { margin: 0.4rem 0; white-space: pre-wrap; }
.md h3, .md h4, .md h5, .md h6 { margin: 0.6rem 0 0.3rem; }
.md blockquote { margin: 0.3rem 0; padding-left: 0.7rem; border-left: 3px solid var(--line); }
.md code { background: var(--code); padding: 0 0.2rem; border-radius: 3px; }
.md .code { background: var(--code); border-radius: 4px; padding: 0.3rem 0.5rem; margin: 0.4rem 0; }
.md .code code { background: none; padding: 0; }
.md .lang { font-size: 0.75rem; color: var(--dim); }
.md .table { overflow-x: auto; } .md table { border-collapse: collapse; }
.md th, .md td { border: 1px solid var(--line); padding: 0.1rem 0.4rem; }
.link { text-decoration: underline dotted; } .url, .img { color: var(--dim); }
.tok { background: var(--tok-bg); color: var(--tok-fg); border-radius: 2px; padding: 0 1px; }
.call, .event { margin: 0.3rem 0; font-size: 0.92rem; }
.call .name, .panel .name { font-weight: 700; }
.panel { border: 2px solid var(--panel-line); background: var(--panel); border-radius: 6px;
  padding: 0.4rem 0.7rem; margin: 0.6rem 0; }
.panel .title { font-weight: 700; }
.panel table.args { border-collapse: collapse; width: 100%; }
.panel table.args th { text-align: left; vertical-align: top; color: var(--hunk);
  padding-right: 0.8rem; white-space: nowrap; font-weight: 600; }
.panel table.args td { width: 100%; }
.effect-write { color: var(--bad); font-weight: 700; } .effect-read { color: var(--ok); }
.diff { background: var(--bg); border: 1px solid var(--line); border-radius: 4px;
  padding: 0.2rem 0.4rem; }
.diff > span { display: block; }
.diff .add { background: var(--add); color: var(--add-fg); }
.diff .del { background: var(--del); color: var(--del-fg); }
.diff .hunk { color: var(--hunk); } .diff .head { font-weight: 700; }
.warn { color: var(--bad); font-weight: 600; }
.prompt { font-family: ui-monospace, Menlo, Consolas, monospace; margin-top: 0.3rem; }
.decision { font-weight: 600; margin: 0.2rem 0 0.5rem; }
.decision.approved { color: var(--ok); } .decision.denied { color: var(--bad); }
.result { border-left: 3px solid var(--ok); padding-left: 0.6rem; margin: 0.3rem 0 0.6rem; }
.result.error { border-color: var(--bad); }
.result .head { font-size: 0.85rem; color: var(--dim); }
details > summary { cursor: pointer; color: var(--dim); }
.usage, .dim { color: var(--dim); font-size: 0.85rem; }
.error-box { color: var(--bad); font-weight: 600; }
footer.page { border-top: 1px solid var(--line); margin-top: 1.5rem; color: var(--dim);
  font-size: 0.8rem; }
@media (max-width: 600px) {
  body { padding: 0.5rem; font-size: 14px; }
  dl.meta { grid-template-columns: 1fr; } dl.meta dd { margin-bottom: 0.3rem; }
  .panel table.args th { white-space: normal; }
  .panel table.args, .panel table.args tbody, .panel table.args tr, .panel table.args th,
  .panel table.args td { display: block; width: auto; }
}
@media print {
  :root { --bg: #fff; --fg: #000; --model: #fff; --user: #f4f7ff; }
  body { max-width: none; font-size: 11pt; }
  details > summary { display: none; }
  details::details-content { content-visibility: visible; display: block; }
  .msg, .panel, .result, .code { break-inside: avoid-page; }
}
""".strip()


@dataclass
class Integrity:
    """The `log verify` outcome at export time, and whose key signed the log."""

    ok: bool
    verdict: str
    signature: str
    warnings: list[str] = field(default_factory=list)
    signed_throughout: bool = False
    """Every session of the file is signed with this user's log key (log/trust.signature)."""


def check_integrity(path: Path) -> Integrity:
    """verify.verify (hash chain, seq, MACs of the sessions signed by this user's key) and the
    signature claim over the whole file (log/trust.signature: "signed throughout" only when
    every session is signed with this user's key)."""
    from agent_cli.log.trust import signature

    try:
        key = log_key(create=False)
        result = verify(path, key=key)
    except LogError as e:
        return Integrity(False, f"could not be checked: {e}", "unknown")
    if result.ok:
        verdict = f"hash chain intact: {result.count} events (head {result.head[:16]}…)"
    else:
        verdict = f"hash chain BROKEN: {result.fault}"
    signed = signature(result, key)
    return Integrity(result.ok, verdict, signed.sentence, list(result.warnings),
                     signed.throughout)


def _value_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, indent=2)


def _diff(preview: str) -> str:
    """The preview as the panel colours it: + green, - red, @@ cyan, the header bold."""
    lines = []
    for line in preview.splitlines():
        cls = line_kind(line)
        attr = f' class="{cls}"' if cls else ""
        lines.append(f"<span{attr}>{text(line) or ' '}</span>")
    return f'<pre class="diff">{"".join(lines)}</pre>'


def _block(body: str, summary: str | None = None, *, output: bool = False) -> str:
    """Preformatted text, folded when long; `output` (a tool's result) keeps a program's column
    alignment as printed (safe_text.segments)."""
    pre = f"<pre>{text(body, keep_alignment=output)}</pre>"
    if summary is None:
        return pre
    return f"<details><summary>{text(summary)}</summary>{pre}</details>"


def _fold_summary(body: str) -> str | None:
    lines = body.count("\n") + 1
    if lines <= FOLD_LINES and len(body) <= FOLD_CHARS:
        return None
    return f"{lines:,} lines, {len(body):,} characters: open to read"


class HtmlView:
    """A replay view (see replay.show) that gathers the page; `page()` returns it whole, because
    the header shows what only the end of the log tells (the last date, the totals)."""

    def __init__(self, log_path: Path, integrity: Integrity,
                 prices: Mapping[str, Mapping[str, float]] | None = None) -> None:
        self.log_path = log_path
        self.integrity = integrity
        self.parts: list[str] = []
        self.bad: list[str] = []
        self.turn = 0
        self.in_turn = False
        self.start: ev.SessionStart | None = None
        self.first_ts: float | None = None
        self.last_ts: float | None = None
        self.model = "?"
        self.usage = UsageMeter(prices or {}, lambda: self.model)
        self.proposed: dict[str, Any] = {}
        self.sources: dict[str, str] = {}

    def on_bad(self, message: str) -> None:
        self.bad.append(message)
        self.parts.append(f'<div class="event error-box">skipped a bad log line: '
                          f"{text(message)}</div>")

    def __call__(self, event: ev.Event, record: dict[str, Any]) -> None:
        self.first_ts = event.ts if self.first_ts is None else self.first_ts
        self.last_ts = event.ts
        self.usage(event)
        w = self.parts.append
        match event:
            case ev.SessionStart():
                self.model = event.model
                self.sources = {t.name: t.source for t in event.tools}
                if self.start is None:
                    self.start = event
                else:
                    w(f'<div class="event dim">session resumed {text(when(event.ts))}: '
                      f"{text(event.provider + ':' + event.model)}</div>")
                tools = "".join(f"<li><b>{text(t.name)}</b> "
                                f'<span class="effect-{"read" if t.effect == "read" else "write"}">'
                                f"{text(t.effect)}</span> "
                                f'<span class="dim">{text(t.source)}</span></li>'
                                for t in event.tools)
                w(f'<details class="event"><summary>tools offered ({len(event.tools)})'
                  f"</summary><ul>{tools}</ul></details>")
            case ev.UserMessage():
                self._open_turn()
                w(f'<div class="msg user"><div class="who">user</div>'
                  f"<pre>{text(event.text)}</pre></div>")
            case ev.ModelReply():
                if event.model:
                    self.model = event.model
                body = "".join(str(b.get("text", "")) for b in event.content
                               if b.get("type") == "text")
                usage = event.usage
                line = (f"{usage.get('input_tokens', 0):,} in / "
                        f"{usage.get('output_tokens', 0):,} out") if usage else ""
                meta = f"model · {event.stop_reason or '?'}" + (f" · {line}" if line else "")
                if body:
                    w(f'<div class="msg model"><div class="who">{text(meta)}</div>'
                      f'<div class="md">{markdown(body)}</div></div>')
                else:
                    w(f'<div class="event dim">{text(meta)}</div>')
            case ev.ToolProposed():
                self.proposed[event.id] = event.input
                args = json.dumps(event.input, ensure_ascii=False)
                full = ""
                if len(one_line(args)) > CALL_LINE:
                    # the line is cut (and says so); the whole input is one click away
                    whole = json.dumps(event.input, ensure_ascii=False, indent=2)
                    full = _block(whole, f"whole input ({len(whole):,} characters)")
                w(f'<div class="call">→ <span class="name">{text(event.name)}</span> '
                  f'<code>{text(one_line(args, CALL_LINE))}</code> '
                  f'<span class="dim">{text(one_line(event.id, 80))}</span>{full}</div>')
            case ev.ToolInvalid():
                w(f'<div class="result error"><div class="head">✗ {text(event.name)}: '
                  f"invalid call</div>{_block(event.reason)}</div>")
            case ev.Approval():
                w(self._approval(event))
            case ev.ToolStarted():
                pass
            case ev.ToolResultEvent():
                self.proposed.pop(event.id, None)
                mark = "✗" if event.is_error else "✓"
                head = (f"{mark} {event.name} · {event.duration:.2f} s"
                        + (" · cut to the output cap" if event.truncated else "")
                        + (" · error" if event.is_error else ""))
                cls = "result error" if event.is_error else "result"
                w(f'<div class="{cls}"><div class="head">{text(head)}</div>'
                  f"{_block(event.content, _fold_summary(event.content), output=True)}</div>")
            case ev.ErrorEvent():
                w(f'<div class="event error-box">error ({text(event.kind)}): '
                  f"{text(event.message)}</div>")
            case ev.Interrupt():
                w(f'<div class="event warn">interrupted during {text(event.during)}</div>')
            case ev.TurnEnd():
                parts = [f"turn ended: {event.reason}"]
                if event.usage:
                    parts.append(f"{event.usage.get('input_tokens', 0):,} in / "
                                 f"{event.usage.get('output_tokens', 0):,} out")
                line = " · ".join(parts)
                msg = f"<div>{text(event.message)}</div>" if event.message else ""
                w(f'<div class="event usage">{text(line)}{msg}</div>')
                self._close_turn()
            case ev.Notice():
                w(f'<div class="event dim">notice ({text(event.kind)}): '
                  f"{text(event.message)}</div>")
                if (shell := event.user_shell()) is not None and shell.output:
                    w(f'<div class="result">'
                      f"{_block(shell.output, _fold_summary(shell.output), output=True)}</div>")
            case ev.Effects() | ev.Undo():
                what = ("effects of " + event.id if isinstance(event, ev.Effects)
                        else "undo " + event.id + " of " + ", ".join(event.undid))
                changes = "".join(f"<li>{text(c.change)} {text(c.path)}</li>"
                                  for c in event.changes)
                summary = f"{what}: {len(event.changes):,} change(s)"
                w(f'<div class="event dim"><details><summary>{text(summary)}</summary>'
                  f"<ul>{changes}</ul></details></div>")
            case ev.SessionEnd():
                self._close_turn()
                w(f'<div class="event dim">session ended: {text(event.reason)} '
                  f"({text(when(event.ts))})</div>")
            case _:
                assert_never(event)

    def _open_turn(self) -> None:
        self._close_turn()
        self.turn += 1
        self.in_turn = True
        self.parts.append(f'<section class="turn"><h2>Turn {self.turn}</h2>')

    def _close_turn(self) -> None:
        if self.in_turn:
            self.parts.append("</section>")
            self.in_turn = False

    def _approval(self, event: ev.Approval) -> str:
        reason = f": {event.reason}" if event.reason else ""
        if event.by == "recording":
            return (f'<div class="decision approved">✓ {text(event.name)}: approved again '
                    "(identical to a call approved in the recording)</div>")
        if event.by != "user":
            if event.effect == "read" and event.decision == "approved" and event.by == "policy":
                return ""  # read-only: it ran without asking, as in the terminal
            cls = "approved" if event.decision == "approved" else "denied"
            mark = "✓" if event.decision == "approved" else "✗"
            return (f'<div class="decision {cls}">{mark} {text(event.name)}: '
                    f"{text(event.decision)} by {text(event.by)}{text(reason)}</div>")
        request = call_of(event, self.proposed.get(event.id), self.sources.get(event.name, ""),
                          ordered=False)
        # The log keeps the decision and the reason, not the keys typed: the page says what it
        # holds and invents no answer ("sure" denied is not "n sure"; "yes" is not "y").
        cls = "approved" if event.decision == "approved" else "denied"
        return (f"{panel_html(request)}"
                '<div class="prompt">Run this? [y/N]</div>'
                f'<div class="decision {cls}">{text(event.decision)} by {text(event.by)}'
                f"{text(reason)}</div>")

    def page(self) -> str:
        self._close_turn()
        start = self.start
        title = f"agent-cli session · {one_line(self.log_path.name, 80)}"
        meta: list[tuple[str, str]] = []
        if start is not None:
            meta += [("model", f"{start.provider}:{start.model}"),
                     ("workspace", start.workspace), ("agent-cli", start.version)]
            if start.continues:
                meta.append(("continues", start.continues))
        if self.first_ts is not None:
            meta.append(("started", when(self.first_ts)))
        if self.last_ts is not None:
            meta.append(("last event", when(self.last_ts)))
        total = self.usage.total()
        usage = (f"{self.usage.requests} model requests · {total.get('input_tokens', 0):,} in / "
                 f"{total.get('output_tokens', 0):,} out tokens · "
                 + (self.usage.money() if self.usage.any_priced() or not self.usage.unpriced()
                    else "cost unknown (no price "
                    "configured for this model)"))
        meta.append(("usage", usage))
        meta.append(("log file", str(self.log_path)))
        rows = "".join(f"<dt>{text(k)}</dt><dd>{text(v)}</dd>" for k, v in meta)
        ig = self.integrity
        warnings = "".join(f"<li>{text(w)}</li>" for w in ig.warnings)
        integrity = (f'<div class="verify{"" if ig.ok and ig.signed_throughout else " bad"}">'
                     f'<div class="verdict">log verify at export: {text(ig.verdict)}</div>'
                     f"<div>{text(ig.signature)}</div>"
                     + (f"<ul>{warnings}</ul>" if warnings else "") + "</div>")
        bad = (f'<div class="error-box">{len(self.bad)} bad line(s) in the log were skipped'
               "</div>") if self.bad else ""
        head = (
            "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            f'<meta http-equiv="Content-Security-Policy" content="{CSP}">\n'
            '<meta name="referrer" content="no-referrer">\n'
            '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
            '<meta name="color-scheme" content="light dark">\n'
            f"<title>{text(title)}</title>\n<style>\n{CSS}\n</style>\n</head>\n<body>\n"
            f'<header class="page"><h1>{text(title)}</h1><dl class="meta">{rows}</dl>'
            f"{integrity}{bad}</header>\n<main>\n"
        )
        foot = (f'\n</main>\n<footer class="page">exported by agent-cli {text(__version__)} on '
                f"{text(when(time.time()))}; every string from the log is shown as text."
                "</footer>\n</body>\n</html>\n")
        return head + "\n".join(p for p in self.parts if p) + foot


def panel_html(request: Call) -> str:
    """The approval panel as the terminal showed it: title with the call id, tool, effect,
    source, extra rows, every argument in full, the preview diff, and the same warnings."""
    from agent_cli.call_warnings import hidden_summary, lookalike_summary

    effect_cls = "effect-read" if request.effect == "read" else "effect-write"
    rows = [("tool", f'<span class="name">{text(request.name)}</span>'),
            ("effect", f'<span class="{effect_cls}">{text(request.effect)}</span>')]
    if request.source:
        rows.append(("from", f'<span class="dim">{text(request.source)}</span>'))
    for key, value in request.panel_extra.items():
        rows.append((key, f"<i>{text(value)}</i>"))
    if not request.args:
        rows.append(("arguments", '<span class="dim">(none)</span>'))
    cells = "".join(f"<tr><th>{text(str(k))}</th><td>{v}</td></tr>" for k, v in rows)
    for key, value in request.args.items():
        cells += f"<tr><th>{text(str(key))}</th><td><pre>{text(_value_text(value))}</pre></td></tr>"
    body = f'<table class="args"><tbody>{cells}</tbody></table>'
    if request.preview:
        body += f'<div class="name">preview</div>{_diff(request.preview)}'
    for note in (hidden_summary(request), lookalike_summary(request)):
        if note:
            body += f'<div class="warn">⚠ {text(note)}</div>'
    title = f"Approve call {one_line(request.id, 60)}"
    return f'<div class="panel"><div class="title">{text(title)}</div>{body}</div>'


def export(path: Path, *, turns: tuple[int, int | None] | None = None, tools_only: bool = False,
           prices: Mapping[str, Mapping[str, float]] | None = None,
           on_bad: Callable[[str], None] | None = None) -> str:
    """The whole page for the log at `path`."""
    view = HtmlView(path, check_integrity(path), prices)

    def bad(message: str) -> None:
        view.on_bad(message)
        if on_bad is not None:
            on_bad(message)

    show(path, view, turns=turns, tools_only=tools_only, on_bad=bad)
    return view.page()
