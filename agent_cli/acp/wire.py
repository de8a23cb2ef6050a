"""JSON-RPC 2.0 over two file descriptors, one JSON object a line: the Agent Client Protocol's
stdio transport, written small and synchronous so the engine's threads can use it directly.

Why not the `agent-client-protocol` package's agent side: it is an asyncio framework that wants
to own the event loop and call async handlers, and our engine is synchronous with a worker thread
per turn. The wire is simple enough that owning it costs less than bridging two concurrency
models (the tests drive this module with the package's real client).

`Channel` reads requests and notifications on a thread of its own and hands them to a handler;
writes from any thread are serialised by one lock, each message one `write` of one line. Requests
the agent sends (session/request_permission) get a `Pending` that the answer resolves.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603

MAX_LINE = 64 * 1024 * 1024
"""A line longer than this is refused (a client that never sends a newline must not fill memory)."""


class RpcError(Exception):
    """A JSON-RPC error to send back as the answer to a request."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data

    def as_json(self) -> dict[str, Any]:
        err: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            err["data"] = self.data
        return err


@dataclass
class Message:
    """One incoming request (`id` set) or notification (`id` None)."""

    method: str
    params: dict[str, Any]
    id: int | str | None = None


@dataclass
class Pending:
    """A request the agent sent; `wait` returns its result or raises RpcError."""

    id: int
    done: threading.Event = field(default_factory=threading.Event)
    result: Any = None
    error: dict[str, Any] | None = None
    on_done: Callable[[Pending], None] | None = None
    """Called once with this Pending when it is resolved (on the reader thread)."""

    def wait(self, timeout: float | None = None) -> Any:
        if not self.done.wait(timeout):
            return None
        if self.error is not None:
            raise RpcError(int(self.error.get("code", INTERNAL_ERROR)),
                           str(self.error.get("message", "error")), self.error.get("data"))
        return self.result


class Channel:
    """The two ends of the stream: `read_fd` (the client's requests, our answers' answers) and
    `write_fd` (everything we say). `handler(message)` runs on the reader thread for each
    incoming request or notification; it must not block for long (long work goes elsewhere)."""

    def __init__(self, read_fd: int, write_fd: int) -> None:
        self._read_fd = read_fd
        self._write_fd = write_fd
        self._lock = threading.Lock()
        self._next_id = 0
        self._pending: dict[int, Pending] = {}
        self._broken = False
        self.closed = threading.Event()
        """Set when the client closed its end (EOF on read) or a write failed."""

    # -- writing -------------------------------------------------------------------------------

    def _send(self, obj: dict[str, Any]) -> None:
        data = (json.dumps(obj, ensure_ascii=False, separators=(",", ":")) + "\n").encode()
        with self._lock:
            if self._broken:
                return
            view = memoryview(data)
            try:
                while view:
                    n = os.write(self._write_fd, view)
                    view = view[n:]
            except OSError:  # the client went away: nothing more can be said
                self._broken = True
                self.closed.set()

    def notify(self, method: str, params: dict[str, Any]) -> None:
        self._send({"jsonrpc": "2.0", "method": method, "params": params})

    def respond(self, msg_id: int | str, result: Any) -> None:
        self._send({"jsonrpc": "2.0", "id": msg_id, "result": result})

    def fail(self, msg_id: int | str | None, error: RpcError) -> None:
        self._send({"jsonrpc": "2.0", "id": msg_id, "error": error.as_json()})

    def request(self, method: str, params: dict[str, Any],
                on_done: Callable[[Pending], None] | None = None) -> Pending:
        """Send a request; its answer (or the client's leaving) resolves the returned Pending
        and calls `on_done` with it."""
        with self._lock:
            self._next_id += 1
            pending = Pending(self._next_id, on_done=on_done)
            self._pending[pending.id] = pending
        self._send({"jsonrpc": "2.0", "id": pending.id, "method": method, "params": params})
        if self.closed.is_set():
            self._resolve(pending.id, None, {"code": INTERNAL_ERROR,
                                             "message": "the client closed the connection"})
        return pending

    def forget(self, msg_id: int) -> None:
        """Stop waiting for an answer: one that comes later is ignored."""
        with self._lock:
            self._pending.pop(msg_id, None)

    def _resolve(self, msg_id: Any, result: Any, error: dict[str, Any] | None) -> None:
        with self._lock:
            pending = self._pending.pop(msg_id, None) if isinstance(msg_id, int) else None
        if pending is None:
            return  # an answer to nothing we asked (or asked and gave up on): ignored
        pending.result, pending.error = result, error
        pending.done.set()
        if pending.on_done is not None:
            pending.on_done(pending)

    # -- reading -------------------------------------------------------------------------------

    def serve(self, handler: Callable[[Message], None]) -> None:
        """Read lines until EOF, on the calling thread; each request or notification goes to
        `handler`, each answer to the `Pending` it answers."""
        buf = b""
        try:
            while True:
                try:
                    chunk = os.read(self._read_fd, 65536)
                except InterruptedError:
                    continue
                except OSError:
                    break
                if not chunk:
                    break
                buf += chunk
                while b"\n" in buf:
                    line, buf = buf.split(b"\n", 1)
                    if line.strip():
                        self._dispatch(line, handler)
                if len(buf) > MAX_LINE:
                    self.fail(None, RpcError(PARSE_ERROR, "line too long"))
                    buf = b""
            if buf.strip():
                self._dispatch(buf, handler)
        finally:
            self.closed.set()
            with self._lock:
                left = list(self._pending)
            for msg_id in left:
                self._resolve(msg_id, None, {"code": INTERNAL_ERROR,
                                             "message": "the client closed the connection"})

    def _dispatch(self, line: bytes, handler: Callable[[Message], None]) -> None:
        try:
            obj = json.loads(line)
        except ValueError:
            self.fail(None, RpcError(PARSE_ERROR, "not a JSON object"))
            return
        if not isinstance(obj, dict):
            self.fail(None, RpcError(INVALID_REQUEST, "a message is one JSON object"))
            return
        method = obj.get("method")
        if method is None and "id" in obj:  # an answer to one of our requests
            self._resolve(obj.get("id"), obj.get("result"),
                          obj["error"] if isinstance(obj.get("error"), dict) else None)
            return
        msg_id = obj.get("id")
        if not isinstance(method, str) or (msg_id is not None
                                           and not isinstance(msg_id, int | str)):
            self.fail(msg_id if isinstance(msg_id, int | str) else None,
                      RpcError(INVALID_REQUEST, "a request needs a method name"))
            return
        params = obj.get("params")
        if params is None:
            params = {}
        if not isinstance(params, dict):
            if msg_id is not None:
                self.fail(msg_id, RpcError(INVALID_PARAMS, "params must be an object"))
            return
        handler(Message(method, params, msg_id))
