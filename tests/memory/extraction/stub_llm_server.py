"""A local stand-in for an OpenAI-compatible chat-completions endpoint.

It speaks the real protocol over real HTTP (127.0.0.1, port 0), so the extractor's client,
timeouts and retries are exercised as in production. Each test programs the replies and reads
back the requests it received.

    with StubLLMServer() as stub:
        stub.answer({"reasoning": "...", "memories": [], "do_not_remember": False})
        LLMExtractor(base_url=stub.base_url, model="stub-model", timeout=2).extract(inp)
        stub.requests[0].body["messages"]
"""
from __future__ import annotations

import json
import re
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["RecordedRequest", "Reply", "StubLLMServer", "review_answer"]

CHAT_PATH = "/v1/chat/completions"


@dataclass
class Reply:
    content: str = ""  # the assistant message content (for an extractor: a JSON string)
    status: int = 200
    delay: float = 0.0  # seconds before answering (longer than the client timeout -> timeout)
    drop: bool = False  # close the connection without any response (a transport error)
    raw_body: bytes | None = None  # send this body instead of a chat.completion envelope
    # Computes the content from the request body (e.g. review_answer below) instead of `content`.
    responder: Callable[[Any], str] | None = None


@dataclass
class RecordedRequest:
    path: str
    headers: dict[str, str]
    body: Any  # parsed JSON, or the raw text when it was not JSON

    @property
    def messages(self) -> list[dict[str, Any]]:
        return self.body["messages"]

    @property
    def user_payload(self) -> dict[str, Any]:
        """The extractor sends the message and the existing memories as JSON in the user turn."""
        return json.loads(self.messages[-1]["content"])


@dataclass
class _State:
    default: Reply = field(default_factory=lambda: Reply(content=json.dumps(
        {"reasoning": "nothing to keep", "memories": [], "do_not_remember": False})))
    queue: deque[Reply] = field(default_factory=deque)
    requests: list[RecordedRequest] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    stopping: threading.Event = field(default_factory=threading.Event)


class _Handler(BaseHTTPRequestHandler):
    server: "_Server"
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
        return

    def do_POST(self) -> None:  # noqa: N802 - http.server naming
        state = self.server.state
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length).decode("utf-8") if length else ""
        try:
            body: Any = json.loads(raw)
        except ValueError:
            body = raw
        with state.lock:
            state.requests.append(RecordedRequest(self.path, {k.lower(): v for k, v in self.headers.items()}, body))
            reply = state.queue.popleft() if state.queue else state.default

        if reply.delay:
            state.stopping.wait(reply.delay)  # returns early when the server stops
        if reply.drop:
            self.close_connection = True
            return
        if self.path != CHAT_PATH:
            self._send(404, b'{"error": {"message": "not found"}}')
            return
        if reply.raw_body is not None:
            self._send(reply.status, reply.raw_body)
            return
        if reply.status != 200:
            self._send(reply.status, json.dumps({"error": {"message": "stub failure", "type": "server_error"}}).encode())
            return
        content = reply.responder(body) if reply.responder is not None else reply.content
        envelope = {
            "id": f"chatcmpl-stub-{len(state.requests)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", "stub") if isinstance(body, dict) else "stub",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                         "finish_reason": "stop"}],
            "usage": {"prompt_tokens": len(raw) // 4, "completion_tokens": len(content) // 4,
                      "total_tokens": (len(raw) + len(content)) // 4},
        }
        self._send(200, json.dumps(envelope, ensure_ascii=False).encode("utf-8"))

    def _send(self, status: int, payload: bytes) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (timeout): nothing to deliver


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, state: _State) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.state = state


class StubLLMServer:
    def __init__(self) -> None:
        self._state = _State()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> "StubLLMServer":
        self._server = _Server(self._state)
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="stub-llm", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._state.stopping.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> "StubLLMServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        assert self._server is not None, "start() the stub first"
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    # ------------------------------------------------------------------ programming
    def answer(self, obj: Any) -> None:
        """Every following request gets `obj` (JSON-encoded) as the assistant's content."""
        self._set_default(Reply(content=json.dumps(obj, ensure_ascii=False)))

    def answer_text(self, text: str) -> None:
        """Reply with arbitrary content, e.g. prose instead of JSON."""
        self._set_default(Reply(content=text))

    def respond(self, responder: Callable[[Any], str], *, delay: float = 0.0) -> None:
        """Every following request is answered by `responder(request body)`."""
        self._set_default(Reply(responder=responder, delay=delay))

    def answer_reviews(self) -> None:
        """Answer the reviewer's prompt (memory/prompts/review_v*.md) as a model would, from the items it
        was sent (review_answer below)."""
        self.respond(lambda body: json.dumps(review_answer(json.loads(body["messages"][-1]["content"])),
                                             ensure_ascii=False))

    def fail(self, status: int = 500) -> None:
        self._set_default(Reply(status=status))

    def slow(self, seconds: float, obj: Any | None = None) -> None:
        payload = obj if obj is not None else {"reasoning": "late", "memories": [], "do_not_remember": False}
        self._set_default(Reply(content=json.dumps(payload, ensure_ascii=False), delay=seconds))

    def drop(self) -> None:
        self._set_default(Reply(drop=True))

    def enqueue(self, *replies: Reply) -> None:
        """One-shot replies, served in order before the default one (e.g. drop once, then answer)."""
        with self._state.lock:
            self._state.queue.extend(replies)

    def _set_default(self, reply: Reply) -> None:
        with self._state.lock:
            self._state.default = reply

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._state.lock:
            return list(self._state.requests)


# ---------------------------------------------------------------------- the reviewer's stand-in
# A deterministic reading of the reviewer's items, so tests state what they write, not what the stub
# answers: cues in the text decide, as a model would read them. Not a judge of anything real.
_CHANGE = re.compile(r"\bnow\b|switched|changed|moved|upgraded|现在|改成|改用|换成|升到|搬到", re.I)
_ADDITION = re.compile(r"\balso\b|\btoo\b|另外|也有", re.I)
_TASK = re.compile(r"this time|just for now|这次|今天只", re.I)
_SMALL_TALK = re.compile(r"^(thanks|thank you|hello|hi|ok)\b|谢谢|你好|[?？]\s*$", re.I)
_UNSURE = re.compile(r"\bmaybe\b|可能|也许", re.I)
_PREFERENCE = re.compile(r"prefer|\blike\b|always|喜欢|习惯|偏好", re.I)


def _norm(text: str) -> str:
    return re.sub(r"[\W_]+", "", text.lower())


def _pair(older: dict, newer: dict) -> str:
    if _norm(older["content"]) == _norm(newer["content"]):
        return "duplicate"
    if older["kind"] == newer["kind"] == "event" or _ADDITION.search(newer["content"]):
        return "coexists"
    if _UNSURE.search(newer["content"]):
        return "unsure"
    return "replaces" if _CHANGE.search(newer["content"]) else "unsure"


def _statement(item: dict) -> dict:
    text = item["content"]
    if _UNSURE.search(text):
        return {"decision": "unsure", "kind": None}
    if _TASK.search(text):
        return {"decision": "task_only", "kind": None}
    if _SMALL_TALK.search(text.strip()):
        return {"decision": "drop", "kind": None}
    kind = "preference" if _PREFERENCE.search(text) else ("event" if item["kind"] == "event" else "fact")
    return {"decision": "keep", "kind": kind}


def review_answer(payload: dict) -> dict:
    """The answer to one reviewer batch: an entry per item, by its short id."""
    return {"pairs": [{"id": p["id"], "decision": _pair(p["older"], p["newer"])} for p in payload.get("pairs", [])],
            "statements": [{"id": s["id"], **_statement(s)} for s in payload.get("statements", [])]}
