"""Untrusted text as inert HTML: the escaper and the allow-list Markdown renderer behind
`replay --output html`.

Inert by construction: this module never copies a character of its input into the output except
through `text()`, which runs the terminal sanitiser (safe_text) and then `html.escape` on every
piece. Markup comes only from the fixed strings written here; nothing from the input becomes a
tag, an attribute, a URL or a style. So raw HTML in a model's reply shows as the characters it
is, a link shows its text and its address as text (never an `<a href>`), an image shows its alt
text and address, and a terminal escape shows as the same visible token the terminal shows
(`\\x1b`, `<U+202E>`).

The Markdown understood is the everyday subset: headings, paragraphs, fenced and indented code,
lists, block quotes, rules, pipe tables, `code`, **strong**, *emphasis*, ~~strike~~, links and
images (as text). Anything else stays text. Nesting is bounded and every scan is linear or close
to it, so a hostile reply cannot make the export slow or deep.
"""

from __future__ import annotations

import html
import re

from agent_cli.safe_text import segments

MAX_DEPTH = 8
"""Block quotes and lists nested deeper, and emphasis inside emphasis deeper, stay plain text."""


def text(value: str, *, collapse_padding: bool = True) -> str:
    """`value` sanitised for display and escaped for HTML; the sanitiser's tokens are wrapped in
    `<span class="tok">` so they cannot pass for the characters they stand for."""
    out: list[str] = []
    for seg in segments(value, collapse_padding=collapse_padding):
        escaped = html.escape(seg.text, quote=True)
        out.append(f'<span class="tok">{escaped}</span>' if seg.token else escaped)
    return "".join(out)


# -- inline ------------------------------------------------------------------------------------

_LINK = re.compile(r"(!?)\[([^\[\]\n]{0,1000})\]\(\s*([^()\s]{0,2000})"
                   r"(?:\s+\"[^\"\n]{0,500}\")?\s*\)")
_AUTOLINK = re.compile(r"<((?:https?|mailto|ftp|javascript|data|file):[^<>\s]{0,2000})>", re.I)
_PAIRS = (("**", "strong"), ("__", "strong"), ("~~", "del"), ("*", "em"), ("_", "em"))


def inline(value: str, depth: int = 0) -> str:
    """One paragraph's inline Markdown, as escaped HTML."""
    out: list[str] = []
    plain: list[str] = []
    dead: set[str] = set()
    """Delimiters with no closer left: later openers need not search again (keeps it linear)."""

    def flush() -> None:
        if plain:
            out.append(text("".join(plain)))
            plain.clear()

    i, n = 0, len(value)
    while i < n:
        ch = value[i]
        if ch == "\\" and i + 1 < n and value[i + 1] in "\\`*_{}[]()#+-.!|~<>":
            plain.append(value[i + 1])
            i += 2
            continue
        if ch == "`":
            run = _run(value, i, "`")
            closer = "`" * run
            j = value.find(closer, i + run) if closer not in dead else -1
            while j != -1 and _run(value, j, "`") != run:
                j = value.find(closer, j + _run(value, j, "`"))
            if j == -1:
                dead.add(closer)
                plain.append(closer)
                i += run
                continue
            flush()
            code = value[i + run : j]
            if code.startswith(" ") and code.endswith(" ") and code.strip():
                code = code[1:-1]
            out.append(f"<code>{text(code)}</code>")
            i = j + run
            continue
        if ch in "![":
            m = _LINK.match(value, i)
            if m is not None:
                flush()
                label, url = m.group(2), m.group(3)
                if m.group(1):
                    out.append(f'<span class="img">[image: {text(label)}]</span>')
                else:
                    shown = inline(label, depth + 1) if depth < MAX_DEPTH else text(label)
                    out.append(f'<span class="link">{shown}</span>')
                if url:
                    out.append(f' <span class="url">({text(url)})</span>')
                i = m.end()
                continue
        if ch == "<":
            m = _AUTOLINK.match(value, i)
            if m is not None:
                flush()
                out.append(f'<span class="url">{text(m.group(1))}</span>')
                i = m.end()
                continue
        if ch in "*_~" and depth < MAX_DEPTH:
            hit = _emphasis(value, i, dead)
            if hit is not None:
                tag, inner_start, inner_end, end = hit
                flush()
                out.append(f"<{tag}>{inline(value[inner_start:inner_end], depth + 1)}</{tag}>")
                i = end
                continue
        plain.append(ch)
        i += 1
    flush()
    return "".join(out)


def _run(value: str, i: int, ch: str) -> int:
    j = i
    while j < len(value) and value[j] == ch:
        j += 1
    return j - i


def _emphasis(value: str, i: int, dead: set[str]) -> tuple[str, int, int, int] | None:
    for delim, tag in _PAIRS:
        if not value.startswith(delim, i) or delim in dead:
            continue
        start = i + len(delim)
        if start >= len(value) or value[start].isspace():
            continue
        if delim in ("_", "__") and i > 0 and value[i - 1].isalnum():
            continue  # snake_case_words are not emphasis
        j = value.find(delim, start)
        while j != -1 and (value[j - 1].isspace() or j == start
                           or (delim in ("*", "_") and value.startswith(delim * 2, j))):
            if delim in ("*", "_") and value.startswith(delim * 2, j):
                j = value.find(delim, j + 2)
            else:
                j = value.find(delim, j + 1)
        if j == -1:
            if value.find(delim, start) == -1:
                dead.add(delim)
            continue
        return tag, start, j, j + len(delim)
    return None


# -- blocks ------------------------------------------------------------------------------------

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")
_HEADING = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t#]*$")
_RULE = re.compile(r"^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$")
_QUOTE = re.compile(r"^ {0,3}> ?(.*)$")
_ITEM = re.compile(r"^( {0,12})([-*+]|\d{1,9}[.)])[ \t]+(.*)$")
_TABLE_SEP = re.compile(r"^ {0,3}\|?[ \t]*:?-+:?[ \t]*(\|[ \t]*:?-+:?[ \t]*)*\|?[ \t]*$")


def markdown(value: str) -> str:
    """A model's Markdown reply as HTML built only from this module's own tags."""
    return _blocks(value.replace("\r\n", "\n").split("\n"), 0)


def _starts_block(line: str) -> bool:
    return bool(_FENCE.match(line) or _HEADING.match(line) or _RULE.match(line)
                or _QUOTE.match(line) or _ITEM.match(line))


def _cells(line: str) -> list[str]:
    body = line.strip()
    if body.startswith("|"):
        body = body[1:]
    if body.endswith("|") and not body.endswith("\\|"):
        body = body[:-1]
    return [c.strip() for c in re.split(r"(?<!\\)\|", body)]


def _blocks(lines: list[str], depth: int) -> str:
    out: list[str] = []
    i, n = 0, len(lines)
    while i < n:
        line = lines[i]
        if not line.strip():
            i += 1
            continue
        m = _FENCE.match(line)
        if m is not None:
            fence = m.group(1)
            label = m.group(2).strip()
            body: list[str] = []
            i += 1
            while i < n:
                close = lines[i].strip()
                if close.startswith(fence[0] * len(fence)) and not close.strip(fence[0]):
                    i += 1
                    break
                body.append(lines[i])
                i += 1
            lang = f'<div class="lang">{text(label)}</div>' if label else ""
            out.append(f'<div class="code">{lang}<pre><code>{text(chr(10).join(body))}'
                       "</code></pre></div>")
            continue
        if line.startswith(("    ", "\t")):
            body = []
            while i < n and (lines[i].startswith(("    ", "\t")) or not lines[i].strip()):
                body.append(lines[i][4:] if lines[i].startswith("    ") else lines[i][1:])
                i += 1
            while body and not body[-1].strip():
                body.pop()
            out.append(f'<div class="code"><pre><code>{text(chr(10).join(body))}</code></pre>'
                       "</div>")
            continue
        m = _HEADING.match(line)
        if m is not None:
            level = min(len(m.group(1)) + 2, 6)
            out.append(f"<h{level}>{inline(m.group(2) or '')}</h{level}>")
            i += 1
            continue
        if _RULE.match(line):
            out.append("<hr>")
            i += 1
            continue
        m = _QUOTE.match(line)
        if m is not None:
            inner: list[str] = []
            while i < n and (q := _QUOTE.match(lines[i])) is not None:
                inner.append(q.group(1))
                i += 1
            body_html = _blocks(inner, depth + 1) if depth < MAX_DEPTH else \
                f"<p>{text(chr(10).join(inner))}</p>"
            out.append(f"<blockquote>{body_html}</blockquote>")
            continue
        m = _ITEM.match(line)
        if m is not None:
            i = _list(lines, i, depth, out)
            continue
        if "|" in line and i + 1 < n and _TABLE_SEP.match(lines[i + 1]) and "|" in lines[i + 1]:
            head = _cells(line)
            i += 2
            rows: list[list[str]] = []
            while i < n and "|" in lines[i] and lines[i].strip():
                rows.append(_cells(lines[i]))
                i += 1
            cells = "".join(f"<th>{inline(c)}</th>" for c in head)
            body_rows = "".join("<tr>" + "".join(f"<td>{inline(c)}</td>" for c in r) + "</tr>"
                                for r in rows)
            out.append(f'<div class="table"><table><thead><tr>{cells}</tr></thead>'
                       f"<tbody>{body_rows}</tbody></table></div>")
            continue
        para = [line]
        i += 1
        while i < n and lines[i].strip() and not _starts_block(lines[i]):
            para.append(lines[i])
            i += 1
        out.append(f"<p>{inline(chr(10).join(para))}</p>")
    return "".join(out)


def _list(lines: list[str], i: int, depth: int, out: list[str]) -> int:
    """A list starting at line i; returns the index after it. Items hold their continuation
    lines (indented, or lazy) and are rendered as blocks, so nested lists nest."""
    first = _ITEM.match(lines[i])
    assert first is not None
    indent = len(first.group(1))
    ordered = first.group(2)[0].isdigit()
    items: list[list[str]] = []
    n = len(lines)
    while i < n:
        m = _ITEM.match(lines[i])
        if m is not None and len(m.group(1)) <= indent + 1 and \
                m.group(2)[0].isdigit() == ordered:
            items.append([m.group(3)])
            i += 1
            continue
        line = lines[i]
        if not line.strip():
            if i + 1 < n and lines[i + 1].startswith(" " * (indent + 2)):
                items[-1].append("")
                i += 1
                continue
            break
        if line.startswith(" " * (indent + 2)) or (m is not None and len(m.group(1)) > indent):
            items[-1].append(line[indent + 2:] if line.startswith(" " * (indent + 2))
                             else line.lstrip())
            i += 1
            continue
        if _starts_block(line):
            break
        items[-1].append(line.strip())  # a lazy continuation of the item's paragraph
        i += 1
    tag = "ol" if ordered else "ul"
    parts = []
    for item in items:
        if depth < MAX_DEPTH:
            body = _blocks(item, depth + 1)
            if body.startswith("<p>") and body.count("<p>") == 1 and body.endswith("</p>"):
                body = body[3:-4]  # a tight item: no paragraph box
        else:
            body = text("\n".join(item))
        parts.append(f"<li>{body}</li>")
    out.append(f"<{tag}>{''.join(parts)}</{tag}>")
    return i
