"""`replay LOG --output html`, opened in a real headless Chromium (Debian's `chromium`).

Hostile logs (script tags, event-handler attributes, `javascript:` links, CSS injection, terminal
escapes, huge lines, invalid UTF-8) are exported and loaded: the DOM must show the hostile strings
as text, the title and the DOM structure must be the ones the exporter wrote, and a loopback HTTP
server the log points at must get no request at all (a control page proves the counter works).
A screenshot of a normal session is checked for the panel, the diff colours and the token style,
in light and dark and at phone width.

Locally the browser tests skip when chromium is missing (apt-get install chromium); in CI
(CI=true) they fail instead, so a missing browser can never pass for a passing test.
"""

from __future__ import annotations

import html
import http.server
import json
import os
import shutil
import struct
import subprocess
import sys
import threading
import zlib
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any, ClassVar

import pytest

from agent_cli.log import html_text
from agent_cli.log.html_export import CSP
from tests.conftest import REPO
from tests.scripts import make_session, text, tool_use

CHROME_TIMEOUT = 120


# -- the browser ---------------------------------------------------------------------------------

def find_chromium() -> str:
    """The browser on PATH; missing, a skip locally and a failure in CI (CI set)."""
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    message = ("chromium is not installed: apt-get install -y chromium (see README, Run the "
               "tests)")
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


@pytest.fixture(scope="module")
def chromium() -> str:
    return find_chromium()


def browse(chromium: str, tmp: Path, url: str, *args: str) -> subprocess.CompletedProcess[str]:
    profile = tmp / f"profile-{len(list(tmp.glob('profile-*')))}"
    profile.mkdir()
    return subprocess.run(
        [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--hide-scrollbars", f"--user-data-dir={profile}", *args, url],
        capture_output=True, text=True, timeout=CHROME_TIMEOUT, check=False)


def dump_dom(chromium: str, tmp: Path, page: Path) -> str:
    proc = browse(chromium, tmp, page.as_uri(), "--dump-dom")
    assert proc.returncode == 0 and "<html" in proc.stdout, proc.stderr[-2000:]
    return proc.stdout


class Hits(http.server.BaseHTTPRequestHandler):
    seen: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        Hits.seen.append(self.path)
        self.send_response(200)
        self.send_header("Content-Type", "image/gif")
        self.end_headers()
        self.wfile.write(b"GIF89a")

    do_POST = do_GET

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def server() -> Iterator[tuple[int, list[str]]]:
    Hits.seen = []
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Hits)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    try:
        yield srv.server_address[1], Hits.seen
    finally:
        srv.shutdown()
        srv.server_close()


# -- a DOM we can reason about ---------------------------------------------------------------------

class Dom(HTMLParser):
    """Tags in order (with their attributes) and the text, as a browser-independent parser sees
    them."""

    def __init__(self, source: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, tuple[tuple[str, str | None], ...]]] = []
        self.text: list[str] = []
        self.title = ""
        self._in_title = False
        self.feed(source)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, tuple(sorted(attrs))))
        self._in_title = tag == "title"

    def handle_endtag(self, tag: str) -> None:
        self._in_title = False

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title += data
        self.text.append(data)

    @property
    def all_text(self) -> str:
        return "".join(self.text)


LIVE_TAGS = {"script", "iframe", "img", "object", "embed", "form", "input", "link", "base",
             "svg", "a", "video", "audio", "source", "frame", "frameset", "button", "textarea",
             "math", "template", "noscript", "picture"}


def assert_inert(dom: Dom) -> None:
    names = [t for t, _ in dom.tags]
    assert not LIVE_TAGS & set(names), LIVE_TAGS & set(names)
    assert names.count("style") == 1 and names.count("title") == 1
    metas = [dict(a) for t, a in dom.tags if t == "meta"]
    assert metas[1] == {"http-equiv": "Content-Security-Policy", "content": CSP}
    assert not any(m.get("http-equiv") == "refresh" for m in metas)
    for tag, attrs in dom.tags:
        for key, _value in attrs:
            assert not key.startswith("on"), (tag, attrs)
            assert key not in ("href", "src", "srcset", "action", "formaction", "data",
                               "style", "background", "poster"), (tag, attrs)
            if tag != "meta":
                assert key in ("class", "lang", "open"), (tag, attrs)


# -- hostile logs --------------------------------------------------------------------------------

def hostile_strings(port: int) -> list[str]:
    url = f"http://127.0.0.1:{port}"
    return [
        "<script>document.title='PWNED-script'</script>",
        f'<img src="{url}/img" onerror="document.title=\'PWNED-img\'">',
        '<a href="javascript:alert(1)">click</a>',
        "[click me](javascript:alert(document.cookie))",
        f"[exfil]({url}/md-link) and <{url}/autolink>",
        f"![pic]({url}/md-img)",
        f"<style>body{{background:url({url}/css)}} *{{display:none}}</style>",
        f'</pre></div></main><iframe src="{url}/iframe"></iframe>',
        f'<link rel="stylesheet" href="{url}/link-css">',
        f'<meta http-equiv="refresh" content="0;url={url}/refresh">',
        "\"><svg onload=\"document.title='PWNED-svg'\">",
        "</title><title>PWNED-title</title>",
        f'<object data="{url}/object"></object><embed src="{url}/embed">',
        f"@import url({url}/import);",
        "data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==",
        f'<base href="{url}/base/">',
        f'<form action="{url}/form"><input autofocus onfocus="document.title=1"></form>',
        f'<div style="background-image:url({url}/inline-style)">styled</div>',
        "<!-- comment --><![CDATA[ x ]]>&lt;already&gt; &amp; &#x3C;script&#x3E;",
    ]


ESCAPES = "\x1b[2J\x1b]8;;http://127.0.0.1/osc\x07osc link\x1b]8;;\x07 \u202eevil bidi \u200b"


def hostile_log(tmp: Path, port: int) -> Path:
    """A real session through the real loop, every field it can carry made hostile, then
    raw bytes appended that are not UTF-8."""
    ws = tmp / "ws"
    ws.mkdir()
    bad = hostile_strings(port)
    joined = "\n\n".join(bad)
    (ws / "evil.txt").write_text(joined + "\n" + ESCAPES + "\n" + "A" * 300_000 + "\n",
                                 encoding="utf-8")
    replies = [
        tool_use("toolu_1", "read_file", {"path": "evil.txt"}, "Reading.\n\n" + joined),
        tool_use('toolu_2"><img src=x onerror=alert(1)>', "write_file",
                 {"path": "out.txt", "content": joined + ESCAPES}, "# Heading " + bad[0]),
        tool_use("toolu_3", "write_file", {"path": "x.txt", "content": bad[6]}),
        tool_use("toolu_4", "<script>alert('tool')</script>", {"k": bad[1]}),
        text("Done. " + joined + "\n\n" + ESCAPES + "\n\n| a | b |\n|---|---|\n| "
             + bad[0] + " | " + bad[1] + " |\n\n```html\n" + joined + "\n```\n" + "B" * 200_000),
    ]
    log = tmp / "hostile.jsonl"
    session = make_session(ws, replies, log, answers=["y", "n " + bad[0] + ESCAPES])
    session.start()
    session.send("please " + joined + ESCAPES)
    session.close()
    with open(log, "ab") as f:
        f.write(b'{"type":"user_message","text":"\xff\xfe<script>bad utf8</script>"}\n')
        f.write(b"\xc3\x28 not json <script>document.title='PWNED-bad'</script>\n")
    return log


def export(log: Path, out: Path) -> str:
    proc = subprocess.run([sys.executable, "-m", "agent_cli", "replay", str(log), "--output",
                           "html"], capture_output=True, timeout=CHROME_TIMEOUT, cwd=REPO,
                          env=dict(os.environ))
    assert proc.returncode == 0, proc.stderr.decode("utf-8", "replace")
    out.write_bytes(proc.stdout)
    return proc.stdout.decode("utf-8")


def test_hostile_log_is_inert_in_chromium(chromium: str, tmp_path: Path,
                                          server: tuple[int, list[str]]) -> None:
    port, hits = server
    log = hostile_log(tmp_path, port)
    page = tmp_path / "session.html"
    source = export(log, page)
    written = Dom(source)
    assert_inert(written)

    dom_text = dump_dom(chromium, tmp_path, page)
    loaded = Dom(dom_text)
    title = f"agent-cli session · {log.name}"
    assert written.title == title and loaded.title == title
    # The browser built exactly the tree the exporter wrote: no string from the log opened,
    # closed or added an element or attribute.
    assert loaded.tags == written.tags
    assert_inert(loaded)
    shown = loaded.all_text
    for s in hostile_strings(port):
        assert s in shown, s
    assert "PWNED" not in loaded.title
    # escapes show as the terminal's tokens, never as the characters
    assert "\\x1b[2J" in shown and "<U+202E>evil bidi" in shown and "<U+200B>" in shown
    assert "\x1b" not in dom_text and "\u202e" not in dom_text
    assert "B" * 200_000 in shown  # a huge line is kept whole, never clipped silently
    assert "characters cut from the middle of this output" in shown  # the loop's cap, stated
    assert "<script>bad utf8</script>" in shown  # the forged line is shown as text...
    first_bad = log.read_bytes().count(b"\n") - 1  # the two raw lines hostile_log appended
    # ...and the export says where the chain breaks
    assert f"hash chain BROKEN: line {first_bad}" in shown
    assert "skipped a bad log line" in shown
    assert hits == []


def test_control_page_proves_the_request_counter(chromium: str, tmp_path: Path,
                                                 server: tuple[int, list[str]]) -> None:
    """Without the escaping, the same payload does reach the server: the zero above means
    something."""
    port, hits = server
    page = tmp_path / "control.html"
    page.write_text(f"<!DOCTYPE html><title>control</title>{hostile_strings(port)[1]}",
                    encoding="utf-8")
    dump = dump_dom(chromium, tmp_path, page)
    assert "/img" in hits
    assert "<title>PWNED-img</title>" in dump  # its handler ran: the DOM shows it


def test_csp_is_a_second_wall(chromium: str, tmp_path: Path,
                              server: tuple[int, list[str]]) -> None:
    """If a bug ever let markup through, the page's own CSP would still block the request and
    the script."""
    port, hits = server
    page = tmp_path / "csp.html"
    page.write_text(f'<!DOCTYPE html><meta http-equiv="Content-Security-Policy" '
                    f'content="{CSP}"><title>csp</title>{hostile_strings(port)[1]}'
                    "<script>document.title='PWNED'</script>", encoding="utf-8")
    dump = dump_dom(chromium, tmp_path, page)
    assert "<title>csp</title>" in dump
    assert hits == []


def test_markdown_renderer_allow_list() -> None:
    out = html_text.markdown(
        "# T\n**b** *e* `c<d>` ~~s~~ [t](javascript:x) ![i](http://h/p.png) <http://h/a>\n\n"
        "- one\n  - two\n\n> q\n\n```\n<b>x</b>\n```")
    assert "<strong>b</strong>" in out and "<em>e</em>" in out and "<code>c&lt;d&gt;</code>" in out
    assert "<del>s</del>" in out and "<blockquote>" in out and "<ul><li>" in out
    assert '<span class="link">t</span> <span class="url">(javascript:x)</span>' in out
    assert "[image: i]" in out and "href" not in out and "src" not in out
    assert "&lt;b&gt;x&lt;/b&gt;" in out


def test_markdown_keeps_list_numbers_and_shows_raw_html_as_text() -> None:
    out = html_text.markdown("3. three\n4. four\n\n<script>alert(1)</script>\n\n"
                             "a <b onclick=x>b</b> c")
    assert '<ol start="3"><li>three</li><li>four</li></ol>' in out
    assert "<script" not in out and "&lt;script&gt;alert(1)&lt;/script&gt;" in out
    assert "<b " not in out and "&lt;b onclick=x&gt;b&lt;/b&gt;" in out


def test_markdown_nested_too_deep_hides_nothing() -> None:
    for depth in (12, 200):
        out = html_text.markdown("> " * depth + "hello\n\nafter")
        assert "hello" in out and "after" in out
        assert out.count("<blockquote>") <= html_text.MAX_DEPTH
    out = html_text.markdown("*" * 40 + "deep" + "*" * 40)
    assert "deep" in out and out.count("<strong>") + out.count("<em>") <= html_text.MAX_DEPTH


def test_markdown_grows_linearly() -> None:
    """60 KB of `*a ` took 101 s with the hand-written renderer (quadratic); now the time grows
    with the size. Measured against an eighth of the input in the same test, so the two growths
    are far apart (linear about 8x, quadratic 64x): the thread's own CPU time (time spent waiting
    for a loaded machine's cores is not counted), the collector off (its passes over a large heap
    are not the renderer's), best of three."""
    import gc
    import time

    def best(payload: str) -> float:
        times = []
        for _ in range(3):
            gc.disable()
            try:
                start = time.thread_time()
                html_text.markdown(payload)
                times.append(time.thread_time() - start)
            finally:
                gc.enable()
        return min(times)

    small, large = best("*a " * 2_500), best("*a " * 20_000)
    assert large < 24 * small + 0.05, (small, large)


def test_renderer_stays_fast_on_hostile_markdown() -> None:
    import time

    for payload in ("**a" * 50_000, "`a" * 50_000, "[a](" * 50_000, "> " * 50_000,
                    "- " * 10_000 + "x", "_a" * 50_000):
        start = time.process_time()  # CPU: a loaded machine must not decide it
        html_text.markdown(payload)
        assert time.process_time() - start < 10, payload[:10]


# -- a normal session, looked at -----------------------------------------------------------------

def read_png(path: Path) -> tuple[int, int, list[bytes]]:
    """Width, height and RGB(A) rows of an 8-bit PNG (enough for Chromium's screenshots)."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, width, height, channels = 8, b"", 0, 0, 3
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, color = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and color in (2, 6)
            channels = 4 if color == 6 else 3
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw = zlib.decompress(idat)
    stride = width * channels
    rows: list[bytes] = []
    prev = bytearray(stride)
    for y in range(height):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for x in range(stride):
            a = line[x - channels] if x >= channels else 0
            b = prev[x]
            c = prev[x - channels] if x >= channels else 0
            if f == 1:
                line[x] = (line[x] + a) & 0xFF
            elif f == 2:
                line[x] = (line[x] + b) & 0xFF
            elif f == 3:
                line[x] = (line[x] + (a + b) // 2) & 0xFF
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                line[x] = (line[x] + pred) & 0xFF
        rows.append(bytes(line) if channels == 3 else
                    b"".join(bytes(line[i:i + 3]) for i in range(0, stride, 4)))
        prev = line
    return width, height, rows


def colour_columns(rows: list[bytes], rgb: str) -> set[int]:
    """x positions where the colour (#rrggbb) appears, anywhere in the image."""
    want = bytes.fromhex(rgb.lstrip("#"))
    xs: set[int] = set()
    for row in rows:
        start = row.find(want)
        while start != -1:
            if start % 3 == 0:
                xs.add(start // 3)
            start = row.find(want, start + 1)
    return xs


def normal_log(tmp: Path) -> Path:
    ws = tmp / "ws"
    ws.mkdir()
    (ws / "notes.txt").write_text("alpha\nbeta \x1b[31mred\x1b[0m\ngamma\n", encoding="utf-8")
    replies = [
        tool_use("toolu_1", "read_file", {"path": "notes.txt"}, "Reading the **notes**."),
        tool_use("toolu_2", "edit_file", {"path": "notes.txt", "old_string": "alpha",
                                          "new_string": "ALPHA"}, "Editing."),
        tool_use("toolu_3", "write_file", {"path": "notes.txt", "content": "gone\n"}),
        text("## Done\n\n- edited `notes.txt`\n- left the rest alone"),
    ]
    log = tmp / "normal.jsonl"
    session = make_session(ws, replies, log, answers=["y", "n keep my notes"])
    session.start()
    session.send("tidy notes.txt")
    session.close()
    return log


LIGHT = {"add": "#d9f5dd", "del": "#fde0e0", "panel": "#d9a400", "token": "#f5d90a"}
DARK = {"bg": "#15171a", "add": "#12341b", "del": "#3d1517"}


def test_screenshot_of_a_normal_session(chromium: str, tmp_path: Path) -> None:
    log = normal_log(tmp_path)
    page = tmp_path / "normal.html"
    source = export(log, page)
    assert "log verify at export: hash chain intact" in source
    assert "signed with this user&#x27;s log key" in source
    dom = Dom(dump_dom(chromium, tmp_path, page))
    shown = dom.all_text
    for needle in ("Approve call toolu_2", "edit_file", "Run this? [y/N]", "approved by user",
                   "denied by user: keep my notes", "tidy notes.txt", "Done", "edited notes.txt",
                   "-alpha", "+ALPHA", "\\x1b", "model requests"):
        assert needle in shown, needle

    shot = tmp_path / "light.png"
    proc = browse(chromium, tmp_path, page.as_uri(), f"--screenshot={shot}",
                  "--window-size=1000,1800")
    assert proc.returncode == 0 and shot.is_file(), proc.stderr[-2000:]
    width, height, rows = read_png(shot)
    assert (width, height) == (1000, 1800)
    for name, rgb in LIGHT.items():
        assert colour_columns(rows, rgb), f"no {name} colour {rgb} in the screenshot"

    dark = tmp_path / "dark.png"
    proc = browse(chromium, tmp_path, page.as_uri(), f"--screenshot={dark}",
                  "--window-size=1000,1800", "--force-dark-mode",
                  "--blink-settings=preferredColorScheme=0")
    assert proc.returncode == 0, proc.stderr[-2000:]
    _, _, rows = read_png(dark)
    for name, rgb in DARK.items():
        assert colour_columns(rows, rgb), f"no dark {name} colour {rgb}"

    phone = tmp_path / "phone.png"
    proc = browse(chromium, tmp_path, page.as_uri(), f"--screenshot={phone}",
                  "--window-size=390,2400")
    assert proc.returncode == 0, proc.stderr[-2000:]
    width, _, rows = read_png(phone)
    assert width == 390
    # The panel's right border is inside the screen: nothing is wider than a phone.
    border = colour_columns(rows, LIGHT["panel"])
    assert border and max(border) < 390 and max(border) > 340, sorted(border)[-5:]


def test_replay_html_cli_usage(tmp_path: Path) -> None:
    log = normal_log(tmp_path)
    out = export(log, tmp_path / "p.html")
    assert out.startswith("<!DOCTYPE html>")
    assert json.dumps(CSP)[1:-1] in out
    assert html.escape("tidy notes.txt") in out


def test_export_names_a_foreign_key_and_an_edit(tmp_path: Path) -> None:
    """The verify outcome at export time: another user's key is named as such; an edited line
    is named where the chain breaks."""
    recorded = REPO / "tests" / "data" / "session_edit.jsonl"
    out = export(recorded, tmp_path / "a.html")
    assert "hash chain intact" in out and "signed with another log key" in out
    edited = tmp_path / "edited.jsonl"
    edited.write_bytes(recorded.read_bytes().replace(b"Summary written.", b"Summary forged!!"))
    out = export(edited, tmp_path / "b.html")
    assert "hash chain BROKEN: line" in out and "Summary forged!!" in out


@pytest.mark.parametrize(("ci", "outcome"), [("true", pytest.fail.Exception),
                                             (None, pytest.skip.Exception)])
def test_missing_chromium_fails_in_ci(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                      ci: str | None, outcome: type[BaseException]) -> None:
    """With CI=true and no chromium on PATH, the browser tests fail (the `chromium` fixture
    fails their setup); they never skip there. Elsewhere they skip and say why. (In-process: a
    nested pytest run cost more CPU than the whole browser family.)"""
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    if ci is None:
        monkeypatch.delenv("CI", raising=False)
    else:
        monkeypatch.setenv("CI", ci)
    with pytest.raises(outcome, match="chromium is not installed"):
        find_chromium()
