"""Untrusted text as inert HTML: the escaper and the allow-list Markdown renderer behind
`replay --output html`.

Markdown is parsed by markdown-it-py (CommonMark, plus tables and strikethrough; raw HTML off),
which is linear on hostile input where a hand-written renderer was quadratic (60 KB of `*a `
took 100 s). Its token stream is then written out here, by an allow-list: each token type this
module knows becomes one of its own fixed tags; markdown-it's own HTML renderer is never used.

Inert by construction: no character of the input reaches the output except through `text()`,
which runs the terminal sanitiser (safe_text) and then `html.escape` on every piece. Markup comes
only from the fixed strings written here; nothing from the input becomes a tag, an attribute, a
URL or a style (the one attribute taken from a token is an ordered list's start, as an integer:
"3. 4." stays 3 and 4). So raw HTML in a model's reply shows as the characters it is, a link
shows its text and its address as text (never an `<a href>`), an image shows its alt text and
address, and a terminal escape shows as the same visible token the terminal shows (`\\x1b`,
`<U+202E>`). Nesting deeper than MAX_DEPTH keeps its text without more tags; a reply nested so
deep that the parser would drop text is shown whole as plain text instead.
"""

from __future__ import annotations

import html
from functools import cache
from typing import TYPE_CHECKING, Any

from agent_cli.safe_text import segments

if TYPE_CHECKING:
    from markdown_it import MarkdownIt
    from markdown_it.token import Token

MAX_DEPTH = 8
"""Block quotes and lists nested deeper, and emphasis inside emphasis deeper, lose their tags
(their text stays)."""

_PARSER_NESTING = 64
"""markdown-it's maxNesting: past it the parser drops the rest of a block, so a reply that
reaches it is shown as plain text (nothing hidden)."""


def text(value: str, *, collapse_padding: bool = True, keep_alignment: bool = False) -> str:
    """`value` sanitised for display and escaped for HTML; the sanitiser's tokens are wrapped in
    `<span class="tok">` so they cannot pass for the characters they stand for."""
    out: list[str] = []
    for seg in segments(value, collapse_padding=collapse_padding, keep_alignment=keep_alignment):
        escaped = html.escape(seg.text, quote=True)
        out.append(f'<span class="tok">{escaped}</span>' if seg.token else escaped)
    return "".join(out)


@cache
def _parser() -> MarkdownIt:
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"html": False, "maxNesting": _PARSER_NESTING})
    md.enable(["table", "strikethrough"])
    # Links are never live here, so any destination may be shown: as written, not re-encoded
    # (markdown-it would refuse javascript: as a link and percent-encode the rest).
    md.validateLink = lambda url: True  # type: ignore[method-assign]
    md.normalizeLink = lambda url: url  # type: ignore[method-assign]
    md.normalizeLinkText = lambda link: link  # type: ignore[method-assign]
    return md


def markdown(value: str) -> str:
    """A model's Markdown reply as HTML built only from this module's own tags."""
    tokens = _parser().parse(value.replace("\r\n", "\n"))
    if any(t.level >= _PARSER_NESTING - 2 for t in tokens):
        return f'<div class="code"><pre><code>{text(value)}</code></pre></div>'
    return _Writer().blocks(tokens)


_NESTED = {"blockquote": "blockquote", "bullet_list": "ul", "ordered_list": "ol",
           "list_item": "li"}
"""Block containers whose tags stop past MAX_DEPTH."""
_PLAIN_BLOCKS = {"thead": "thead", "tbody": "tbody", "tr": "tr", "th": "th", "td": "td"}
_INLINE = {"strong": "strong", "em": "em", "s": "del"}


class _Writer:
    """One pass over the tokens; the allow-list is the set of token types handled below."""

    def __init__(self) -> None:
        self.depth = 0
        """Nested containers open (block quotes, lists)."""
        self.cut: list[bool] = []
        """Per open container: were its tags left out (past MAX_DEPTH)?"""
        self.tight: list[bool] = []
        """Per open list: tight (its items' paragraphs get no <p>)."""

    def blocks(self, tokens: list[Token]) -> str:
        out: list[str] = []
        for tok in tokens:
            out.append(self.block(tok))
        return "".join(out)

    def block(self, tok: Token) -> str:
        kind = tok.type
        base = kind.rsplit("_", 1)[0] if kind.endswith(("_open", "_close")) else kind
        if base in _NESTED:
            return self._container(tok, base)
        if base == "paragraph":
            if tok.hidden:
                return ""
            return "<p>" if tok.nesting == 1 else "</p>"
        if base == "heading":
            level = min(int(tok.tag[1:]) + 2, 6) if tok.tag[1:].isdigit() else 6
            return f"<h{level}>" if tok.nesting == 1 else f"</h{level}>"
        if base == "table":
            return '<div class="table"><table>' if tok.nesting == 1 else "</table></div>"
        if base in _PLAIN_BLOCKS:
            tag = _PLAIN_BLOCKS[base]
            return f"<{tag}>" if tok.nesting == 1 else f"</{tag}>"
        if kind == "inline":
            return _Inline().render(tok.children or [])
        if kind in ("fence", "code_block"):
            lang = tok.info.strip().split(" ")[0] if kind == "fence" else ""
            label = f'<div class="lang">{text(lang)}</div>' if lang else ""
            body = tok.content[:-1] if tok.content.endswith("\n") else tok.content
            return f'<div class="code">{label}<pre><code>{text(body)}</code></pre></div>'
        if kind == "hr":
            return "<hr>"
        # html_block (raw HTML is off, but never trust that) and anything unknown: its text.
        return f"<p>{text(tok.content)}</p>" if tok.content else ""

    def _container(self, tok: Token, base: str) -> str:
        if tok.nesting == 1:
            self.depth += 1
            cut = self.depth > MAX_DEPTH and base != "list_item"
            if base == "list_item":
                cut = bool(self.cut) and self.cut[-1]
            self.cut.append(cut)
            if cut:
                return ""
            if base == "ordered_list":
                start = _start(tok.attrs.get("start"))
                return f'<ol start="{start:d}">' if start != 1 else "<ol>"
            return f"<{_NESTED[base]}>"
        self.depth -= 1
        cut = self.cut.pop() if self.cut else False
        return "" if cut else f"</{_NESTED[base]}>"


def _start(value: Any) -> int:
    try:
        return max(0, min(int(value), 10**9))
    except (TypeError, ValueError):
        return 1


class _Inline:
    """The inline tokens of one block: text, code, emphasis, links and images, as text."""

    def __init__(self) -> None:
        self.depth = 0
        self.cut: list[bool] = []
        self.links: list[tuple[str, bool]] = []
        """Open links: (destination, autolink)."""

    def render(self, children: list[Token]) -> str:
        out: list[str] = []
        for tok in children:
            out.append(self.one(tok))
        return "".join(out)

    def one(self, tok: Token) -> str:
        kind = tok.type
        if kind == "text":
            return text(tok.content)
        if kind == "softbreak":
            return "\n"
        if kind == "hardbreak":
            return "<br>"
        if kind == "code_inline":
            return f"<code>{text(tok.content)}</code>"
        base = kind.rsplit("_", 1)[0]
        if base in _INLINE and kind.endswith(("_open", "_close")):
            if tok.nesting == 1:
                self.depth += 1
                self.cut.append(self.depth > MAX_DEPTH)
                return "" if self.cut[-1] else f"<{_INLINE[base]}>"
            self.depth -= 1
            return "" if (self.cut.pop() if self.cut else False) else f"</{_INLINE[base]}>"
        if kind == "link_open":
            href = str(tok.attrs.get("href") or "")
            auto = tok.markup == "autolink"
            self.links.append((href, auto))
            return '<span class="url">' if auto else '<span class="link">'
        if kind == "link_close":
            href, auto = self.links.pop() if self.links else ("", False)
            if auto or not href:
                return "</span>"
            return f'</span> <span class="url">({text(href)})</span>'
        if kind == "image":
            src = str(tok.attrs.get("src") or "")
            shown = f'<span class="img">[image: {text(tok.content)}]</span>'
            return shown + (f' <span class="url">({text(src)})</span>' if src else "")
        # html_inline (raw HTML is off) and anything unknown: its text, escaped.
        return text(tok.content)
