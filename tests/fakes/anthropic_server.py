"""Fake Anthropic Messages API on 127.0.0.1, for tests and benchmarks.

Why a real loopback server rather than a mocked transport: the SDK sends through httpx2, which
respx and pytest-httpx cannot see, and a socket exercises the SDK's own HTTP, SSE parsing and retry
code exactly as production does. Everything here is stdlib so the fake costs nothing to import.

The lifecycle, queueing, recording and fault machinery (``FakeServerBase``, ``Fault``) is shared
with ``openai_server``; only the wire format differs.
"""

from __future__ import annotations

import contextlib
import json
import random
import socket
import socketserver
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, fields
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, ClassVar, Generic, TypeVar

LOOPBACK = "127.0.0.1"

JSON = dict[str, Any]


# --------------------------------------------------------------------------- shared machinery


@dataclass
class RecordedRequest:
    """One request as the fake saw it, so tests can assert on what the client really sent."""

    method: str
    path: str
    headers: dict[str, str]  # keys lowercased
    body: JSON
    stream: bool
    raw_body: bytes = b""
    client_port: int = 0  # same port on two requests = the client reused the connection


@dataclass(kw_only=True)
class Fault:
    """Fault-injection knobs shared by both fakes.

    status          HTTP status to answer with (200 = normal reply); non-200 sends an error body.
    error_type      error ``type`` in the body (default picked from the status).
    error_message   error ``message`` in the body.
    error_body      full error JSON to send instead of the generated one.
    retry_after     value of the ``retry-after`` header (seconds, as a string).
    headers         extra response headers (e.g. ``{"x-should-retry": "false"}``).
    error_event_after  streaming only: send this many SSE events, then an error event, then end.
    reset_after     close the connection abruptly after this many SSE events (0 = before any
                    response bytes at all; for a non-stream reply, any value > 0 sends the headers
                    and half the body first).
    end_after       streaming only: send this many SSE events, then end the response cleanly (the
                    chunked terminator, no error): a stream that stops before its last event.
    delay_s         sleep before answering (e.g. to trigger client timeouts).
    event_delay_s   sleep between SSE events (to watch text arrive incrementally).
    chunk_bytes     streaming only: write the event stream in pieces of this many bytes, each
                    sent on its own (``event_delay_s`` apart), so events and UTF-8 characters
                    arrive split across reads.
    """

    status: int = 200
    error_type: str | None = None
    error_message: str | None = None
    error_body: JSON | None = None
    retry_after: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    error_event_after: int | None = None
    reset_after: int | None = None
    end_after: int | None = None
    delay_s: float = 0.0
    event_delay_s: float = 0.0
    chunk_bytes: int | None = None


R = TypeVar("R", bound=Fault)


def split_random(text: str, rng: random.Random, lo: int, hi: int) -> list[str]:
    """Cut ``text`` into pieces of lo..hi characters, so clients must really reassemble deltas."""
    pieces: list[str] = []
    i = 0
    while i < len(text):
        n = rng.randint(lo, hi)
        pieces.append(text[i : i + n])
        i += n
    return pieces


def dumps(obj: object) -> str:
    """Compact JSON with raw UTF-8, like the real APIs send."""
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


class _HTTPServer(ThreadingHTTPServer):
    """ThreadingHTTPServer that skips the reverse-DNS lookup HTTPServer.server_bind does."""

    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128
    fake: FakeServerBase[Any]

    def server_bind(self) -> None:
        socketserver.TCPServer.server_bind(self)
        host, port = self.server_address[:2]
        self.server_name = str(host)
        self.server_port = int(port)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Clients hanging up (resets, broken pipes) are routine here; only report real bugs."""
        exc = sys.exc_info()[1]
        if isinstance(exc, (ConnectionError, TimeoutError)):
            return
        super().handle_error(request, client_address)


class FakeHandler(BaseHTTPRequestHandler):
    """Parses and records a request, then lets the owning fake answer it."""

    protocol_version = "HTTP/1.1"  # keep-alive, so clients reuse the connection
    disable_nagle_algorithm = True  # small SSE writes must not wait for delayed ACKs
    timeout = 120  # an idle keep-alive connection never pins a thread forever
    server: _HTTPServer
    headers_sent: bool

    def setup(self) -> None:
        super().setup()
        self.server.fake._track(self.connection, add=True)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.fake._track(self.connection, add=False)

    def log_message(self, format: str, *args: Any) -> None:
        """Silence access logs: they would clutter test output and could leak headers."""

    def _read_body(self) -> bytes:
        if self.headers.get("transfer-encoding", "").lower() == "chunked":
            out = bytearray()
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return bytes(out)
                out += self.rfile.read(size)
                self.rfile.readline()
        length = int(self.headers.get("content-length") or 0)
        return self.rfile.read(length) if length else b""

    def _dispatch(self) -> None:
        self.headers_sent = False
        raw = self._read_body()
        try:
            body = json.loads(raw) if raw else {}
            parsed_ok = isinstance(body, dict)
        except ValueError:
            body, parsed_ok = {}, False
        if not parsed_ok:
            body = {}
        req = RecordedRequest(
            method=self.command,
            path=self.path,
            headers={k.lower(): v for k, v in self.headers.items()},
            body=body,
            stream=bool(body.get("stream")),
            raw_body=raw,
            client_port=int(self.client_address[1]),
        )
        fake = self.server.fake
        fake._record(req)
        try:
            if not parsed_ok:
                fake.send_error_json(self, 400, None, "request body is not a JSON object")
            else:
                fake.handle(self, req)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        except Exception as exc:  # a bug in the fake must surface, not hang the client
            if self.headers_sent:
                self.abort()
            else:
                fake.send_error_json(self, 500, None, f"fake server error: {exc!r}")

    def do_POST(self) -> None:
        self._dispatch()

    def do_GET(self) -> None:
        self._dispatch()

    # ---- response helpers used by the fakes

    def send_json(
        self,
        status: int,
        obj: object,
        headers: dict[str, str] | None = None,
        *,
        truncate: bool = False,
    ) -> None:
        """Send a JSON response with Content-Length (keep-alive friendly).

        ``truncate`` sends only half the body, then drops the connection.
        """
        data = dumps(obj).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.headers_sent = True
        if truncate:
            self.wfile.write(data[: len(data) // 2])
            self.abort()
        else:
            self.wfile.write(data)

    def send_sse(
        self, events: list[bytes], fault: Fault, headers: dict[str, str], tail: bytes | None
    ) -> None:
        """Stream SSE events with chunked encoding so the connection stays reusable.

        ``tail`` is an extra event (an error) sent after ``fault.error_event_after`` events.
        """
        if fault.error_event_after is not None and tail is not None:
            events = [*events[: fault.error_event_after], tail]
        reset = fault.reset_after is not None and fault.reset_after < len(events)
        if reset:
            events = events[: fault.reset_after]
        if fault.end_after is not None:
            events = events[: fault.end_after]
        self.send_response(200)
        self.send_header("content-type", "text/event-stream; charset=utf-8")
        self.send_header("cache-control", "no-cache")
        self.send_header("transfer-encoding", "chunked")
        for k, v in headers.items():
            self.send_header(k, v)
        self.end_headers()
        self.headers_sent = True
        if fault.chunk_bytes:
            body = b"".join(events)
            step = fault.chunk_bytes
            events = [body[i:i + step] for i in range(0, len(body), step)]
        frames = [b"%x\r\n%s\r\n" % (len(e), e) for e in events]
        try:
            if fault.event_delay_s > 0:
                for frame in frames:
                    self.wfile.write(frame)
                    self.wfile.flush()
                    time.sleep(fault.event_delay_s)
            else:
                self.wfile.write(b"".join(frames))
        except OSError:
            self.server.fake.streams.append("cut by the client")
            raise
        self.server.fake.streams.append("whole")
        if reset:
            self.abort()
        else:
            self.wfile.write(b"0\r\n\r\n")

    def abort(self) -> None:
        """Drop the connection mid-response; the client sees an incomplete message."""
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)
        self.close_connection = True


class FakeServerBase(Generic[R]):
    """Lifecycle, reply queue and request log shared by the fakes.

    Each request that reaches the model endpoint consumes one queued reply (or asks the
    responder); with neither, the fake answers 500 instead of hanging.
    """

    name: ClassVar[str] = "FakeServer"
    reply_cls: ClassVar[type[Fault]] = Fault

    def __init__(
        self,
        replies: Iterable[R | JSON] | None = None,
        *,
        responder: Callable[[JSON], R | JSON] | None = None,
        host: str = LOOPBACK,
        seed: int = 0,
        validate: bool = True,
    ) -> None:
        if host != LOOPBACK:
            raise ValueError(f"{self.name} only binds {LOOPBACK}, not {host!r}")
        self.responder = responder
        self.seed = seed
        self.validate = validate
        self.requests: list[RecordedRequest] = []
        self.streams: list[str] = []
        """How each streamed reply ended: "whole", or "cut by the client" (it hung up)."""
        self._queue: deque[R] = deque()
        self._lock = threading.Lock()
        self._conns: set[socket.socket] = set()
        self._server: _HTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._served = 0
        if replies:
            self.add(*replies)

    # ---- public API

    def add(self, *replies: R | JSON) -> None:
        """Queue more replies, answered in order."""
        coerced = [self.coerce(r) for r in replies]
        with self._lock:
            self._queue.extend(coerced)

    @property
    def pending(self) -> int:
        """Replies still queued (handy to assert a test used them all)."""
        with self._lock:
            return len(self._queue)

    @property
    def base_url(self) -> str:
        if self._server is None:
            raise RuntimeError(f"{self.name} is not started")
        return f"http://{LOOPBACK}:{self._server.server_port}"

    @property
    def last_request(self) -> RecordedRequest:
        return self.requests[-1]

    def start(self) -> FakeServerBase[R]:
        if self._server is not None:
            return self
        server = _HTTPServer((LOOPBACK, 0), FakeHandler)
        server.fake = self
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.02}, name=self.name, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        server, self._server = self._server, None
        if server is None:
            return
        server.shutdown()
        with self._lock:
            conns = list(self._conns)
        for conn in conns:  # wake handler threads parked on idle keep-alive connections
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=2)

    def __enter__(self) -> FakeServerBase[R]:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # ---- hooks for subclasses

    def coerce(self, reply: R | JSON) -> R:
        """Turn a dict into the reply dataclass; unknown keys are an error, to catch typos."""
        if isinstance(reply, self.reply_cls):
            return reply
        if not isinstance(reply, dict):
            raise TypeError(
                f"reply must be a dict or {self.reply_cls.__name__}, got {type(reply).__name__}"
            )
        known = {f.name for f in fields(self.reply_cls)}
        extra = set(reply) - known - self.ignored_reply_keys()
        if extra:
            raise TypeError(f"unknown reply keys for {self.name}: {sorted(extra)}")
        return self.reply_cls(**{k: v for k, v in reply.items() if k in known})  # type: ignore[return-value]

    def ignored_reply_keys(self) -> set[str]:
        return set()

    def handle(self, h: FakeHandler, req: RecordedRequest) -> None:
        raise NotImplementedError

    def send_error_json(
        self, h: FakeHandler, status: int, etype: str | None, message: str, **extra: Any
    ) -> None:
        raise NotImplementedError

    # ---- helpers for subclasses

    def next_reply(self, body: JSON) -> tuple[R | None, int]:
        """Pop the next reply (or ask the responder); also returns the 1-based reply number."""
        with self._lock:
            self._served += 1
            n = self._served
            reply = self._queue.popleft() if self._queue else None
        if reply is None and self.responder is not None:
            reply = self.coerce(self.responder(body))
        return reply, n

    def rng(self, n: int) -> random.Random:
        """Deterministic per-reply randomness: same seed, same chunk boundaries."""
        return random.Random(self.seed * 1_000_003 + n)

    def _record(self, req: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(req)

    def _track(self, conn: socket.socket, *, add: bool) -> None:
        with self._lock:
            if add:
                self._conns.add(conn)
            else:
                self._conns.discard(conn)


def fault_headers(fault: Fault) -> dict[str, str]:
    headers = dict(fault.headers)
    if fault.retry_after is not None:
        headers["retry-after"] = fault.retry_after
    return headers


def partial_json_loads(raw: str) -> JSON:
    """Best-effort parse of a possibly truncated JSON object (for non-stream raw_input)."""
    try:
        value = json.loads(raw)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}



# --------------------------------------------------------------------------- prompt-cache billing

CACHE_LOOKBACK_BLOCKS = 20
"""The API looks for an earlier cache entry at most this many blocks before a breakpoint."""
MIN_CACHEABLE_TOKENS = 1024
"""A prefix shorter than this is never cached (the documented minimum for Sonnet/Opus models)."""


def estimate_tokens(text: str) -> int:
    """The fake's deterministic tokenizer: a token per four characters (at least one)."""
    return max(1, len(text) // 4)


def _segments(body: JSON) -> list[tuple[str, bool]]:
    """The prompt as the cache sees it, in the API's order (tools, system, messages), one entry
    per block: its canonical JSON without ``cache_control``, and whether it carries a breakpoint.
    Moving a breakpoint therefore never changes a prefix's key; changing a byte does."""
    out: list[tuple[str, bool]] = []

    def add(kind: str, item: Any) -> None:
        marked = isinstance(item, dict) and "cache_control" in item
        if isinstance(item, dict):
            item = {k: v for k, v in item.items() if k != "cache_control"}
        out.append((json.dumps([kind, item], sort_keys=True, ensure_ascii=False), marked))

    for tool in body.get("tools") or []:
        add("tool", tool)
    system = body.get("system")
    if isinstance(system, str):
        add("system", {"type": "text", "text": system})
    elif isinstance(system, list):
        for block in system:
            add("system", block)
    for msg in body.get("messages") or []:
        content = msg.get("content")
        role = str(msg.get("role"))
        if isinstance(content, str):
            add(role, {"type": "text", "text": content})
        else:
            for block in content or []:
                add(role, block)
    return out


def _cache_controls(body: JSON) -> list[Any]:
    """Every cache_control value in the request (tools, system blocks, message blocks)."""
    found: list[Any] = []
    items: list[Any] = list(body.get("tools") or [])
    if isinstance(body.get("system"), list):
        items += body["system"]
    for msg in body.get("messages") or []:
        if isinstance(msg, dict) and isinstance(msg.get("content"), list):
            items += msg["content"]
    for item in items:
        if isinstance(item, dict) and "cache_control" in item:
            found.append(item["cache_control"])
    return found


def strip_cache_control(value: Any) -> Any:
    """`value` without any ``cache_control`` key, for comparing what was sent with a history."""
    if isinstance(value, dict):
        return {k: strip_cache_control(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [strip_cache_control(v) for v in value]
    return value


class PromptCache:
    """What the API would bill for a request, from the prefixes it has cached before.

    Each prefix ending at a ``cache_control`` breakpoint is stored under a hash of its exact
    canonical bytes (and the model). A request reads the longest stored prefix found at or up to
    CACHE_LOOKBACK_BLOCKS blocks before one of its breakpoints, writes the rest up to its last
    breakpoint, and pays full price for what follows. Entries never expire (the real ones live
    five minutes after their last use: a scripted session is faster than that).
    """

    def __init__(self, min_tokens: int = MIN_CACHEABLE_TOKENS) -> None:
        self.min_tokens = min_tokens
        self._entries: dict[str, int] = {}
        self._lock = threading.Lock()

    def bill(self, body: JSON) -> dict[str, int]:
        import hashlib

        segments = _segments(body)
        h = hashlib.sha256(str(body.get("model")).encode())
        keys: list[str] = []
        cumulative: list[int] = []
        total = 0
        for text, _ in segments:
            h.update(text.encode("utf-8", "replace"))
            keys.append(h.hexdigest())
            total += estimate_tokens(text)
            cumulative.append(total)
        # the request's own framing (model, max_tokens, ...) is always billed as input
        framing = estimate_tokens(json.dumps(
            {k: v for k, v in body.items() if k not in ("tools", "system", "messages")},
            sort_keys=True))
        marks = [i for i, (_, marked) in enumerate(segments) if marked]
        if not marks:
            return {"input_tokens": total + framing, "cache_creation_input_tokens": 0,
                    "cache_read_input_tokens": 0}
        with self._lock:
            read = 0
            for mark in marks:
                for i in range(mark, max(-1, mark - CACHE_LOOKBACK_BLOCKS), -1):
                    if keys[i] in self._entries:
                        read = max(read, cumulative[i])
                        break
            cached_to = read
            for mark in marks:
                if cumulative[mark] >= self.min_tokens:
                    self._entries[keys[mark]] = cumulative[mark]
                    cached_to = max(cached_to, cumulative[mark])
        return {"input_tokens": total - cached_to + framing,
                "cache_creation_input_tokens": cached_to - read,
                "cache_read_input_tokens": read}


# --------------------------------------------------------------------------- Anthropic


@dataclass(kw_only=True)
class Reply(Fault):
    """One Messages API answer plus optional faults.

    ``content`` holds response blocks: ``{"type": "text", "text": ...}``,
    ``{"type": "tool_use", "id": ..., "name": ..., "input": {...}}``, ``thinking`` blocks, or any
    other block (sent as-is). A tool_use block may carry ``"raw_input": "<json text>"`` instead of
    ``input`` to stream exactly that text (e.g. JSON truncated by max_tokens).
    ``stop_reason`` None means: "tool_use" if any tool_use block, else "end_turn".
    ``usage`` entries override the computed token counts (input tokens are billed by
    ``PromptCache``: uncached input, cache writes and cache reads); ``delta_usage`` entries
    override those of the ``message_delta`` event only.
    ``split_seed`` fixes where the deltas are cut: two replies with the same value and content
    stream the same events (otherwise each reply's cuts follow its number).
    ``raw_sse`` streams exactly these bytes as the event stream instead (a malformed stream).
    """

    content: list[JSON] = field(default_factory=list)
    stop_reason: str | None = None
    stop_sequence: str | None = None
    usage: dict[str, Any] | None = None
    delta_usage: dict[str, Any] | None = None
    model: str | None = None
    split_seed: int | None = None
    raw_sse: bytes | None = None


def text_reply(text: str) -> JSON:
    """A plain assistant text answer."""
    return {"content": [{"type": "text", "text": text}], "stop_reason": "end_turn"}


def tool_reply(*calls: tuple[str, str, JSON], text: str | None = None) -> JSON:
    """An answer asking for tool calls; ``calls`` are ``(id, name, input)``."""
    content: list[JSON] = [{"type": "text", "text": text}] if text else []
    content += [
        {"type": "tool_use", "id": cid, "name": name, "input": inp} for cid, name, inp in calls
    ]
    return {"content": content, "stop_reason": "tool_use"}


_ANTHROPIC_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    408: "timeout_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    503: "api_error",
    504: "timeout_error",
    529: "overloaded_error",
}

_ANTHROPIC_ERROR_MESSAGES = {
    "invalid_request_error": "Invalid request",
    "authentication_error": "invalid x-api-key",
    "permission_error": "Your API key does not have permission to use the specified resource.",
    "not_found_error": "Not found",
    "request_too_large": "Request exceeds the maximum allowed number of bytes.",
    "rate_limit_error": "Number of request tokens has exceeded your per-minute rate limit",
    "api_error": "Internal server error",
    "overloaded_error": "Overloaded",
    "timeout_error": "Request timed out",
}

# API versions from this date on reject sampling parameters (the shared notes on SDK quirks).
_NO_SAMPLING_PARAMS_SINCE = "2026-10-21"


class FakeAnthropic(FakeServerBase[Reply]):
    """Fake ``POST /v1/messages`` (streaming and not) with fault injection.

    Accepts the key as ``x-api-key`` or ``Authorization: Bearer``. With ``validate=True`` it
    rejects, like the real API, requests missing model/max_tokens/messages and histories whose
    tool_use / tool_result blocks do not pair up.
    """

    name = "FakeAnthropic"
    reply_cls = Reply

    def __init__(self, *args: Any, cache_min_tokens: int = MIN_CACHEABLE_TOKENS,
                 **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.prompt_cache = PromptCache(cache_min_tokens)
        """Input tokens are billed as the API would, from the breakpoints each request sends."""

    def ignored_reply_keys(self) -> set[str]:
        # lets a dumped real Message be replayed as a reply
        return {"id", "type", "role", "stop_details", "container"}

    def start(self) -> FakeAnthropic:
        super().start()
        return self

    def __enter__(self) -> FakeAnthropic:
        return self.start()

    # ---- request handling

    def send_error_json(
        self, h: FakeHandler, status: int, etype: str | None, message: str, **extra: Any
    ) -> None:
        etype = etype or _ANTHROPIC_ERROR_TYPES.get(status, "api_error")
        body = {
            "type": "error",
            "error": {"type": etype, "message": message},
            "request_id": extra.get("rid", "req_fake"),
        }
        h.send_json(status, body, extra.get("headers"))

    def handle(self, h: FakeHandler, req: RecordedRequest) -> None:
        path = req.path.split("?", 1)[0]
        if req.method != "POST" or path != "/v1/messages":
            self.send_error_json(h, 404, None, f"{req.method} {path} is not served by {self.name}")
            return
        has_auth = req.headers.get("x-api-key") or req.headers.get("authorization", "").startswith(
            "Bearer "
        )
        if not has_auth:
            self.send_error_json(h, 401, None, "x-api-key header is required")
            return
        if self.validate:
            problem = _validate_messages_request(req)
            if problem:
                self.send_error_json(h, 400, None, problem)
                return
        try:
            reply, n = self.next_reply(req.body)
        except Exception as exc:
            self.send_error_json(h, 500, None, f"{self.name} responder raised {exc!r}")
            return
        rid = f"req_fake_{n:04d}"
        if reply is None:
            self.send_error_json(
                h,
                500,
                None,
                f"{self.name} ran out of replies at request #{n}; queue more with add()",
                rid=rid,
                headers={"request-id": rid, "x-should-retry": "false"},
            )
            return
        if reply.delay_s:
            time.sleep(reply.delay_s)
        if reply.reset_after == 0:
            h.abort()
            return
        headers = {"request-id": rid, **fault_headers(reply)}
        if reply.status != 200:
            if reply.error_body is not None:
                h.send_json(reply.status, reply.error_body, headers)
                return
            etype = reply.error_type or _ANTHROPIC_ERROR_TYPES.get(reply.status, "api_error")
            msg = reply.error_message or _ANTHROPIC_ERROR_MESSAGES.get(etype, "error")
            self.send_error_json(h, reply.status, etype, msg, rid=rid, headers=headers)
            return
        message, raws = self._message(reply, req, n)
        if req.stream:
            tail = _sse(
                "error",
                reply.error_body
                or {
                    "type": "error",
                    "error": {
                        "type": reply.error_type or "overloaded_error",
                        "message": reply.error_message or "Overloaded",
                    },
                },
            )
            rng = self.rng(n if reply.split_seed is None else -1 - reply.split_seed)
            events = ([reply.raw_sse] if reply.raw_sse is not None
                      else _stream_events(message, raws, rng, reply.delta_usage))
            h.send_sse(events, reply, headers, tail)
        else:
            h.send_json(200, message, headers, truncate=reply.reset_after is not None)

    def _message(self, reply: Reply, req: RecordedRequest, n: int) -> tuple[JSON, dict[int, str]]:
        """Full Messages API response for ``reply`` (stream events are derived from it), plus the
        raw tool-input text to stream for blocks given as ``raw_input``."""
        content: list[JSON] = []
        raws: dict[int, str] = {}
        out_chars = 0
        for i, block in enumerate(reply.content):
            block = dict(block)
            if "raw_input" in block:
                raws[i] = block.pop("raw_input")
                block["input"] = partial_json_loads(raws[i])
            out_chars += len(dumps(block))
            content.append(block)
        stop_reason = reply.stop_reason or (
            "tool_use" if any(b.get("type") == "tool_use" for b in content) else "end_turn"
        )
        usage: JSON = {
            **self.prompt_cache.bill(req.body),
            "output_tokens": max(1, out_chars // 4),
            "service_tier": "standard",
        }
        usage.update(reply.usage or {})
        message = {
            "id": f"msg_fake_{n:04d}",
            "type": "message",
            "role": "assistant",
            "model": reply.model or req.body.get("model") or "claude-fake",
            "content": content,
            "stop_reason": stop_reason,
            "stop_sequence": reply.stop_sequence,
            "usage": usage,
        }
        return message, raws


def _sse(event: str, data: object) -> bytes:
    """One SSE event; the SDK drops events that lack an ``event:`` line, so always send it."""
    return f"event: {event}\ndata: {dumps(data)}\n\n".encode()


def _stream_events(message: JSON, raws: dict[int, str], rng: random.Random,
                   delta_usage: JSON | None = None) -> list[bytes]:
    """The SSE sequence the real API sends for ``message``, with deltas cut at random points."""
    usage = message["usage"]
    start = {
        k: v
        for k, v in message.items()
        if k not in ("content", "stop_reason", "stop_sequence", "usage")
    }
    start.update(
        content=[], stop_reason=None, stop_sequence=None, usage={**usage, "output_tokens": 1}
    )
    events = [_sse("message_start", {"type": "message_start", "message": start})]
    ping = _sse("ping", {"type": "ping"})
    if not message["content"]:
        events.append(ping)
    for i, block in enumerate(message["content"]):
        btype = block.get("type")
        deltas: list[JSON] = []
        if btype == "text":
            first: JSON = {"type": "text", "text": ""}
            deltas = [
                {"type": "text_delta", "text": p}
                for p in split_random(block.get("text", ""), rng, 3, 8)
            ]
        elif btype in ("tool_use", "server_tool_use"):
            first = {**block, "input": {}}
            raw = raws[i] if i in raws else dumps(block.get("input", {}))
            deltas = [
                {"type": "input_json_delta", "partial_json": p}
                for p in split_random(raw, rng, 1, 9)
            ]
        elif btype == "thinking":
            first = {"type": "thinking", "thinking": "", "signature": ""}
            deltas = [
                {"type": "thinking_delta", "thinking": p}
                for p in split_random(block.get("thinking", ""), rng, 3, 8)
            ]
            deltas.append(
                {"type": "signature_delta", "signature": block.get("signature", "sig_fake")}
            )
        else:
            first = block
        events.append(
            _sse(
                "content_block_start",
                {"type": "content_block_start", "index": i, "content_block": first},
            )
        )
        if i == 0:
            events.append(ping)
        for d in deltas:
            events.append(
                _sse("content_block_delta", {"type": "content_block_delta", "index": i, "delta": d})
            )
        events.append(_sse("content_block_stop", {"type": "content_block_stop", "index": i}))
    delta_usage = {**{k: v for k, v in usage.items() if k != "service_tier"},
                   **(delta_usage or {})}
    events.append(
        _sse(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {
                    "stop_reason": message["stop_reason"],
                    "stop_sequence": message["stop_sequence"],
                },
                "usage": delta_usage,
            },
        )
    )
    events.append(_sse("message_stop", {"type": "message_stop"}))
    return events


def _validate_messages_request(req: RecordedRequest) -> str | None:
    """The real API's cheap structural checks; returns the error message or None."""
    body = req.body
    for key in ("model", "max_tokens", "messages"):
        if key not in body:
            return f"{key}: Field required"
    if not isinstance(body["max_tokens"], int) or body["max_tokens"] < 1:
        return "max_tokens: Input should be a positive integer"
    version = req.headers.get("anthropic-version", "")
    if version >= _NO_SAMPLING_PARAMS_SINCE:
        for key in ("temperature", "top_p", "top_k"):
            if key in body:
                return f"{key}: Extra inputs are not permitted"
    messages = body["messages"]
    if not isinstance(messages, list) or not messages:
        return "messages: at least one message is required"
    for i, msg in enumerate(messages):
        if (
            not isinstance(msg, dict)
            or msg.get("role") not in ("user", "assistant")
            or "content" not in msg
        ):
            return f"messages.{i}: each message needs role 'user' or 'assistant' and content"
    for tool in body.get("tools") or []:
        if isinstance(tool, dict) and "input_schema" in tool and not tool.get("name"):
            return "tools: each custom tool needs a name"
    controls = _cache_controls(body)
    if len(controls) > 4:
        return f"A maximum of 4 blocks with cache_control may be provided. Found {len(controls)}."
    if any(not isinstance(c, dict) or c.get("type") != "ephemeral" for c in controls):
        return "cache_control: type must be 'ephemeral'"
    names = {t.get("name") for t in body.get("tools") or [] if isinstance(t, dict)}
    choice = body.get("tool_choice")
    if choice is not None:
        if not isinstance(choice, dict) or choice.get("type") not in ("auto", "any", "none",
                                                                      "tool"):
            return "tool_choice: Input tag does not match 'auto', 'any', 'tool' or 'none'"
        if not names:
            return "tool_choice may only be specified while providing tools."
        if choice["type"] == "tool" and choice.get("name") not in names:
            return f"tool_choice: tool {choice.get('name')!r} was not found in tools"

    def blocks(msg: JSON, btype: str) -> list[JSON]:
        content = msg["content"]
        if not isinstance(content, list):
            return []
        return [b for b in content if isinstance(b, dict) and b.get("type") == btype]

    for i, msg in enumerate(messages):
        if msg["role"] == "assistant":
            use_ids = [b.get("id") for b in blocks(msg, "tool_use")]
            if not use_ids:
                continue
            nxt = messages[i + 1] if i + 1 < len(messages) else None
            result_ids = (
                {b.get("tool_use_id") for b in blocks(nxt, "tool_result")}
                if nxt and nxt["role"] == "user"
                else set()
            )
            missing = [u for u in use_ids if u not in result_ids]
            if missing:
                return (
                    f"messages.{i}: `tool_use` ids were found without `tool_result` blocks "
                    f"immediately after: {', '.join(map(str, missing))}. Each `tool_use` block "
                    "must have a corresponding `tool_result` block in the next message."
                )
        else:
            results = blocks(msg, "tool_result")
            if not results:
                continue
            prev = messages[i - 1] if i > 0 else None
            prev_ids = (
                {b.get("id") for b in blocks(prev, "tool_use")}
                if prev and prev["role"] == "assistant"
                else set()
            )
            for j, b in enumerate(results):
                if b.get("tool_use_id") not in prev_ids:
                    return (
                        f"messages.{i}.content.{j}: unexpected `tool_use_id` found in "
                        f"`tool_result` blocks: {b.get('tool_use_id')}. Each `tool_result` block "
                        "must have a corresponding `tool_use` block in the previous message."
                    )
    if not names and any(isinstance(m.get("content"), list) and any(
            isinstance(b, dict) and b.get("type") in ("tool_use", "tool_result")
            for b in m["content"]) for m in messages if isinstance(m, dict)):
        return ("Requests which include `tool_use` or `tool_result` blocks must define tools.")
    return None
