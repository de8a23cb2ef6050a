"""Fake OpenAI chat-completions API on 127.0.0.1, for tests of OpenAI-compatible providers.

Same machinery as the Anthropic fake (queue, recording, faults); see ``anthropic_server``. The
streamed tool-call deltas are the interesting part: argument text is cut at arbitrary character
positions and, with ``interleave=True``, fragments of parallel calls alternate, which is what some
OpenAI-compatible servers do and what a client's reassembly by ``index`` must survive.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field
from typing import Any

from .anthropic_server import (
    JSON,
    FakeHandler,
    FakeServerBase,
    Fault,
    RecordedRequest,
    dumps,
    fault_headers,
    split_random,
)

__all__ = ["FakeOpenAI", "RecordedRequest", "Reply", "text_reply", "tool_reply"]


@dataclass(kw_only=True)
class Reply(Fault):
    """One chat-completion answer in a neutral shape, plus optional faults.

    ``tool_calls`` items are ``{"id", "name", "arguments"}``; ``arguments`` is the raw JSON text
    sent to the client (it may be invalid on purpose) or a dict, which is serialised.
    ``finish_reason`` None means "tool_calls" when there are calls, else "stop".
    ``interleave`` alternates the streamed fragments of parallel calls.
    """

    content: str | None = None
    tool_calls: list[JSON] = field(default_factory=list)
    finish_reason: str | None = None
    usage: dict[str, int] | None = None
    model: str | None = None
    interleave: bool = False


def text_reply(text: str) -> JSON:
    """A plain assistant text answer."""
    return {"content": text, "finish_reason": "stop"}


def tool_reply(*calls: tuple[str, str, JSON | str], text: str | None = None) -> JSON:
    """An answer with tool calls; ``calls`` are ``(id, name, arguments dict or raw JSON text)``."""
    return {
        "content": text,
        "tool_calls": [{"id": cid, "name": name, "arguments": args} for cid, name, args in calls],
        "finish_reason": "tool_calls",
    }


_OPENAI_ERRORS: dict[int, tuple[str, str | None, str]] = {
    400: ("invalid_request_error", None, "Invalid request"),
    401: ("invalid_request_error", "invalid_api_key", "Incorrect API key provided."),
    403: ("invalid_request_error", "unsupported_country_region_territory", "Forbidden"),
    404: ("invalid_request_error", "model_not_found", "The model does not exist."),
    413: ("invalid_request_error", "request_too_large", "Request too large."),
    429: ("requests", "rate_limit_exceeded", "Rate limit reached for requests."),
    500: ("server_error", None, "The server had an error while processing your request."),
    503: ("server_error", None, "The engine is currently overloaded, please try again later."),
}


def _arguments(call: JSON) -> str:
    args = call.get("arguments", "")
    return args if isinstance(args, str) else dumps(args)


class FakeOpenAI(FakeServerBase[Reply]):
    """Fake ``POST /v1/chat/completions`` (also served at ``/chat/completions``).

    ``base_url`` is the server root; OpenAI-style clients usually want ``v1_url``. With
    ``validate=True`` it rejects, like the real API, requests without model/messages and histories
    where assistant ``tool_calls`` and ``tool`` messages do not pair up.
    """

    name = "FakeOpenAI"
    reply_cls = Reply

    def start(self) -> FakeOpenAI:
        super().start()
        return self

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    @property
    def v1_url(self) -> str:
        return self.base_url + "/v1"

    def send_error_json(
        self, h: FakeHandler, status: int, etype: str | None, message: str, **extra: Any
    ) -> None:
        default_type, default_code, _ = _OPENAI_ERRORS.get(status, ("server_error", None, ""))
        err = {
            "message": message,
            "type": etype or default_type,
            "param": None,
            "code": extra.get("code", default_code),
        }
        h.send_json(status, {"error": err}, extra.get("headers"))

    def handle(self, h: FakeHandler, req: RecordedRequest) -> None:
        path = req.path.split("?", 1)[0]
        if req.method != "POST" or path not in ("/v1/chat/completions", "/chat/completions"):
            msg = f"Invalid URL ({req.method} {path})"
            self.send_error_json(h, 404, None, msg, code=None)
            return
        auth = req.headers.get("authorization", "")
        if not (auth.startswith("Bearer ") and auth[7:].strip()) and not req.headers.get("api-key"):
            self.send_error_json(
                h, 401, None, "You didn't provide an API key. Send it as Authorization: Bearer."
            )
            return
        if self.validate:
            problem = _validate_chat_request(req.body)
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
            msg = f"{self.name} ran out of replies at request #{n}; queue more with add()"
            self.send_error_json(h, 500, None, msg, headers={"x-request-id": rid})
            return
        if reply.delay_s:
            time.sleep(reply.delay_s)
        if reply.reset_after == 0:
            h.abort()
            return
        headers = {"x-request-id": rid, **fault_headers(reply)}
        if reply.status != 200:
            if reply.error_body is not None:
                h.send_json(reply.status, reply.error_body, headers)
                return
            etype, code, default_msg = _OPENAI_ERRORS.get(
                reply.status, ("server_error", None, "error")
            )
            self.send_error_json(
                h,
                reply.status,
                reply.error_type or etype,
                reply.error_message or default_msg,
                code=code,
                headers=headers,
            )
            return
        cid = f"chatcmpl-fake{n:04d}"
        model = reply.model or req.body.get("model") or "gpt-fake"
        usage = self._usage(reply, req)
        if req.stream:
            opts = req.body.get("stream_options") or {}
            include_usage = bool(opts.get("include_usage"))
            events = _stream_chunks(reply, cid, model, usage, include_usage, self.rng(n))
            err = reply.error_body or {
                "error": {
                    "message": reply.error_message or "The server had an error.",
                    "type": reply.error_type or "server_error",
                    "param": None,
                    "code": None,
                }
            }
            h.send_sse(events, reply, headers, _data(err))
            return
        message: JSON = {"role": "assistant", "content": reply.content, "refusal": None}
        if reply.tool_calls:
            message["tool_calls"] = [
                {
                    "id": c["id"],
                    "type": "function",
                    "function": {"name": c["name"], "arguments": _arguments(c)},
                }
                for c in reply.tool_calls
            ]
        completion = {
            "id": cid,
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "logprobs": None,
                    "finish_reason": _finish_reason(reply),
                }
            ],
            "usage": usage,
            "system_fingerprint": "fp_fake",
        }
        h.send_json(200, completion, headers, truncate=reply.reset_after is not None)

    def _usage(self, reply: Reply, req: RecordedRequest) -> JSON:
        out_chars = len(reply.content or "") + sum(
            len(c.get("name", "")) + len(_arguments(c)) for c in reply.tool_calls
        )
        prompt = max(1, len(req.raw_body) // 4)
        completion = max(1, out_chars // 4)
        usage: JSON = {"prompt_tokens": prompt, "completion_tokens": completion}
        usage.update(reply.usage or {})
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        return usage


def _finish_reason(reply: Reply) -> str:
    return reply.finish_reason or ("tool_calls" if reply.tool_calls else "stop")


def _data(obj: object) -> bytes:
    """OpenAI streams data-only SSE events."""
    return f"data: {dumps(obj)}\n\n".encode()


def _stream_chunks(
    reply: Reply, cid: str, model: str, usage: JSON, include_usage: bool, rng: random.Random
) -> list[bytes]:
    """The ``chat.completion.chunk`` sequence for ``reply``, ending with ``data: [DONE]``."""
    created = int(time.time())

    def chunk(delta: JSON, finish: str | None = None) -> bytes:
        obj: JSON = {
            "id": cid,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "system_fingerprint": "fp_fake",
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        }
        if include_usage:
            obj["usage"] = None
        return _data(obj)

    events = [chunk({"role": "assistant", "content": "", "refusal": None})]
    for piece in split_random(reply.content or "", rng, 3, 8):
        events.append(chunk({"content": piece}))

    per_call: list[list[JSON]] = []
    for idx, call in enumerate(reply.tool_calls):
        frags = split_random(_arguments(call), rng, 1, 9)
        # the first chunk carries id/type/name and either no arguments yet or a first fragment
        first_args = frags.pop(0) if frags and rng.random() < 0.5 else ""
        deltas: list[JSON] = [
            {
                "index": idx,
                "id": call["id"],
                "type": "function",
                "function": {"name": call["name"], "arguments": first_args},
            }
        ]
        deltas += [{"index": idx, "function": {"arguments": f}} for f in frags]
        per_call.append(deltas)
    if reply.interleave:
        ordered: list[JSON] = []
        while any(per_call):
            for deltas in per_call:
                if deltas:
                    ordered.append(deltas.pop(0))
    else:
        ordered = [d for deltas in per_call for d in deltas]
    for d in ordered:
        events.append(chunk({"tool_calls": [d]}))

    events.append(chunk({}, _finish_reason(reply)))
    if include_usage:
        events.append(
            _data(
                {
                    "id": cid,
                    "object": "chat.completion.chunk",
                    "created": created,
                    "model": model,
                    "system_fingerprint": "fp_fake",
                    "choices": [],
                    "usage": usage,
                }
            )
        )
    events.append(b"data: [DONE]\n\n")
    return events


def _validate_chat_request(body: JSON) -> str | None:
    """The real API's structural checks on the history; returns the error message or None."""
    for key in ("model", "messages"):
        if key not in body:
            return f"Missing required parameter: '{key}'."
    messages = body["messages"]
    if not isinstance(messages, list) or not messages:
        return "Invalid 'messages': empty array. Expected an array with minimum length 1."
    pending: list[str] = []  # tool_call ids still waiting for their tool message
    for i, msg in enumerate(messages):
        if not isinstance(msg, dict) or "role" not in msg:
            return f"Missing required parameter: 'messages[{i}].role'."
        role = msg["role"]
        if role == "tool":
            if msg.get("tool_call_id") not in pending:
                return (
                    f"Invalid parameter: messages with role 'tool' must be a response to a "
                    f"preceeding message with 'tool_calls'. (messages[{i}])"
                )
            pending.remove(msg["tool_call_id"])
            continue
        if pending:
            return (
                "An assistant message with 'tool_calls' must be followed by tool messages "
                "responding to each 'tool_call_id'. The following tool_call_ids did not have "
                f"response messages: {', '.join(pending)}"
            )
        if role == "assistant":
            pending = [str(c.get("id")) for c in msg.get("tool_calls") or [] if isinstance(c, dict)]
            for c in msg.get("tool_calls") or []:
                fn = c.get("function") if isinstance(c, dict) else None
                if not isinstance(fn, dict) or not isinstance(fn.get("arguments"), str):
                    return (
                        f"Invalid 'messages[{i}].tool_calls': function.arguments must be a string."
                    )
    if pending:
        return (
            "An assistant message with 'tool_calls' must be followed by tool messages "
            "responding to each 'tool_call_id'. The following tool_call_ids did not have "
            f"response messages: {', '.join(pending)}"
        )
    return None
