"""A fake model server on 127.0.0.1 for driving the real agent clients offline.

Claude Code, Codex and OpenClaw each talk to a model over HTTP; pointed at
this server instead, they run real turns (hooks, MCP servers, plugins) with
no network. It speaks the three wire APIs those clients use, streaming with
SSE when the request asks for it (all three do) and plain JSON otherwise:

- Anthropic Messages: ``POST /v1/messages`` (and ``/v1/messages/count_tokens``);
- OpenAI Responses: ``POST /v1/responses``;
- OpenAI chat completions: ``POST /v1/chat/completions``.

Every request body is recorded (:attr:`FakeModelServer.requests`), so a test
asserts on what the model was shown: the memory in its input, the tools it
was offered, a tool's result coming back. The replies are scripted with
:class:`Rule`: a rule that names a tool makes the model call that tool (once
by default) when the latest user input contains its trigger and the request
offers the tool; anything else gets a plain text reply. A tool is matched
by its name or by the end of it, so ``memory_search`` finds Claude Code's
``mcp__memex__memory_search`` as well as a Codex MCP tool of that name
inside the ``mcp__memex`` namespace.

The server only listens on the loopback interface and refuses any other
peer. Run it alone with ``python tests/fake_model_server.py --port 0
--log FILE``: it prints ``PORT`` on its first line and appends every request
to FILE as a JSON line (used by the end-to-end overhead benchmark).
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from ipaddress import ip_address
from typing import Any, Iterator

DEFAULT_TEXT = "Done."
LOOPBACK = "127.0.0.1"
# OpenClaw sends its own runtime context (exec sessions, subagents) as a user
# message after the prompt, and again after a tool's result: a rule must match
# what the user said, and a tool's result must still read as one.
OPENCLAW_CONTEXT = "<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>"


@dataclass
class Rule:
    """One scripted reply.

    ``when``: a substring of the latest user input (case-insensitive; empty:
    any request). ``tool``: the tool to call (its name or the end of it);
    None for a text reply. ``arguments``: the tool call's arguments.
    ``times``: how many requests the rule answers (None: any number).
    """

    when: str = ""
    text: str = DEFAULT_TEXT
    tool: str | None = None
    arguments: dict[str, Any] = field(default_factory=dict)
    times: int | None = 1
    used: int = 0


@dataclass(frozen=True)
class Recorded:
    """One request the server received."""

    api: str  # "anthropic", "responses" or "chat"
    path: str
    body: dict[str, Any]
    headers: dict[str, str]

    @property
    def text(self) -> str:
        """The whole body as text, for "is X anywhere in the model's input"."""
        return json.dumps(self.body, ensure_ascii=False)

    def tool_names(self) -> list[str]:
        """The full names of every tool offered (``namespace__name`` inside a namespace)."""
        return [full for full, _, _ in _tools(self.body)]


@dataclass(frozen=True)
class _Call:
    name: str  # the name to send back (without the namespace)
    namespace: str | None
    arguments: dict[str, Any]


def _tools(body: dict[str, Any]) -> Iterator[tuple[str, str, str | None]]:
    """(full name, name, namespace) of each tool in a request, in any of the three APIs."""
    def walk(tools: Any, namespace: str | None) -> Iterator[tuple[str, str, str | None]]:
        for tool in tools if isinstance(tools, list) else []:
            if not isinstance(tool, dict):
                continue
            if isinstance(tool.get("tools"), list):  # a namespace of tools (Codex's MCP servers)
                yield from walk(tool["tools"], str(tool.get("name") or "") or namespace)
                continue
            name = tool.get("name") or (tool.get("function") or {}).get("name")
            if isinstance(name, str) and name:
                full = f"{namespace}__{name}" if namespace else name
                yield full, name, namespace
    yield from walk(body.get("tools"), None)


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, dict):
                for key in ("text", "input_text", "content"):
                    if isinstance(part.get(key), (str, list)):
                        parts.append(_text_of(part[key]))
                        break
            elif isinstance(part, str):
                parts.append(part)
        return "\n".join(parts)
    return ""


def latest_user_input(api: str, body: dict[str, Any]) -> tuple[str, bool]:
    """The text of the latest user input, and whether it is a tool's result.

    A request whose last item is a tool result is the client reporting a
    call: a rule must not answer it with the same call again.
    """
    items = body.get("input") if api == "responses" else body.get("messages")
    if isinstance(items, str):
        return items, False
    for item in reversed(items if isinstance(items, list) else []):
        if not isinstance(item, dict):
            continue
        kind, role = item.get("type"), item.get("role")
        if kind in ("function_call_output", "custom_tool_call_output") or role == "tool":
            return "", True
        if role == "user":
            content = item.get("content")
            if _text_of(content).lstrip().startswith(OPENCLAW_CONTEXT):
                continue  # not what the user said (see OPENCLAW_CONTEXT)
            if isinstance(content, list) and any(
                isinstance(p, dict) and p.get("type") == "tool_result" for p in content
            ):
                return "", True
            return _text_of(content), False
    return "", False


class FakeModelServer:
    """The server and its script. Use as a context manager, or start()/stop()."""

    def __init__(self, rules: list[Rule] | None = None, log: str | None = None, port: int = 0) -> None:
        self.rules: list[Rule] = list(rules or [])
        self.requests: list[Recorded] = []
        self._log = log
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._httpd = ThreadingHTTPServer((LOOPBACK, port), _handler(self))
        self._httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        return f"http://{LOOPBACK}:{self.port}"

    def start(self) -> FakeModelServer:
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="fake-model", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=10)

    def __enter__(self) -> FakeModelServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def add(self, rule: Rule) -> Rule:
        with self._lock:
            self.rules.append(rule)
        return rule

    def of(self, api: str) -> list[Recorded]:
        """The requests received on one API, oldest first."""
        with self._lock:
            return [r for r in self.requests if r.api == api]

    def new_id(self, prefix: str) -> str:
        return f"{prefix}_{next(self._ids):06d}"

    def record(self, api: str, path: str, body: dict[str, Any], headers: dict[str, str]) -> None:
        with self._lock:
            self.requests.append(Recorded(api, path, body, headers))
            if self._log:
                with open(self._log, "a", encoding="utf-8") as out:
                    out.write(json.dumps({"api": api, "path": path, "body": body}, ensure_ascii=False) + "\n")

    def choose(self, api: str, body: dict[str, Any]) -> tuple[str, _Call | None]:
        """The reply to one request: its text, and the tool call if a rule makes one."""
        latest, after_tool = latest_user_input(api, body)
        offered = list(_tools(body))
        with self._lock:
            for rule in self.rules:
                if rule.times is not None and rule.used >= rule.times:
                    continue
                if rule.when and (after_tool or rule.when.lower() not in latest.lower()):
                    continue
                if rule.tool is None:
                    rule.used += 1
                    return rule.text, None
                if after_tool:
                    continue
                found = next(((n, ns) for full, n, ns in offered
                              if full == rule.tool or full.endswith(rule.tool)), None)
                if found is None:  # a side request without tools (a title, a summary)
                    continue
                rule.used += 1
                return rule.text, _Call(found[0], found[1], dict(rule.arguments))
        return DEFAULT_TEXT, None


def _sse(event: str | None, data: Any) -> bytes:
    head = f"event: {event}\n" if event else ""
    payload = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
    return f"{head}data: {payload}\n\n".encode("utf-8")


def _usage_tokens(body: dict[str, Any]) -> int:
    return max(1, len(json.dumps(body)) // 4)


def _anthropic(server: FakeModelServer, body: dict[str, Any], text: str, call: _Call | None) -> tuple[list[bytes], dict[str, Any]]:
    model = str(body.get("model") or "fake-model")
    msg_id = server.new_id("msg")
    blocks: list[dict[str, Any]] = []
    if text:
        blocks.append({"type": "text", "text": text})
    if call is not None:
        blocks.append({"type": "tool_use", "id": server.new_id("toolu"), "name": call.name, "input": call.arguments})
    stop = "tool_use" if call is not None else "end_turn"
    usage = {"input_tokens": _usage_tokens(body), "output_tokens": 5,
             "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
    whole = {"id": msg_id, "type": "message", "role": "assistant", "model": model, "content": blocks,
             "stop_reason": stop, "stop_sequence": None, "usage": usage}
    events = [_sse("message_start", {"type": "message_start", "message": {
        **whole, "content": [], "stop_reason": None, "usage": {**usage, "output_tokens": 1}}})]
    for index, block in enumerate(blocks):
        if block["type"] == "text":
            events.append(_sse("content_block_start", {"type": "content_block_start", "index": index,
                                                        "content_block": {"type": "text", "text": ""}}))
            delta: dict[str, Any] = {"type": "text_delta", "text": block["text"]}
        else:
            events.append(_sse("content_block_start", {"type": "content_block_start", "index": index,
                                                        "content_block": {**block, "input": {}}}))
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        events.append(_sse("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}))
        events.append(_sse("content_block_stop", {"type": "content_block_stop", "index": index}))
    events.append(_sse("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                                         "usage": {"output_tokens": 5}}))
    events.append(_sse("message_stop", {"type": "message_stop"}))
    return events, whole


def _responses(server: FakeModelServer, body: dict[str, Any], text: str, call: _Call | None) -> tuple[list[bytes], dict[str, Any]]:
    model = str(body.get("model") or "fake-model")
    resp_id = server.new_id("resp")
    items: list[dict[str, Any]] = []
    if text:
        items.append({"type": "message", "id": server.new_id("msg"), "status": "completed", "role": "assistant",
                      "content": [{"type": "output_text", "text": text, "annotations": []}]})
    if call is not None:
        item: dict[str, Any] = {"type": "function_call", "id": server.new_id("fc"), "call_id": server.new_id("call"),
                                "name": call.name, "arguments": json.dumps(call.arguments), "status": "completed"}
        if call.namespace:
            item["namespace"] = call.namespace
        items.append(item)
    created = int(time.time())
    usage = {"input_tokens": _usage_tokens(body), "input_tokens_details": {"cached_tokens": 0},
             "output_tokens": 5, "output_tokens_details": {"reasoning_tokens": 0},
             "total_tokens": _usage_tokens(body) + 5}
    base = {"id": resp_id, "object": "response", "created_at": created, "model": model}
    events = [_sse("response.created", {"type": "response.created", "response": {**base, "status": "in_progress",
                                                                                  "output": []}})]
    for index, item in enumerate(items):
        if item["type"] == "message":
            events.append(_sse("response.output_item.added", {"type": "response.output_item.added",
                                                              "output_index": index, "item": {**item, "content": [],
                                                                                              "status": "in_progress"}}))
            events.append(_sse("response.output_text.delta", {
                "type": "response.output_text.delta", "item_id": item["id"], "output_index": index,
                "content_index": 0, "delta": text}))
            events.append(_sse("response.output_text.done", {
                "type": "response.output_text.done", "item_id": item["id"], "output_index": index,
                "content_index": 0, "text": text}))
        else:
            events.append(_sse("response.output_item.added", {"type": "response.output_item.added",
                                                              "output_index": index, "item": item}))
        events.append(_sse("response.output_item.done", {"type": "response.output_item.done",
                                                         "output_index": index, "item": item}))
    whole = {**base, "status": "completed", "output": items, "usage": usage}
    events.append(_sse("response.completed", {"type": "response.completed", "response": whole}))
    return events, whole


def _chat(server: FakeModelServer, body: dict[str, Any], text: str, call: _Call | None) -> tuple[list[bytes], dict[str, Any]]:
    model = str(body.get("model") or "fake-model")
    chat_id, created = server.new_id("chatcmpl"), int(time.time())
    base = {"id": chat_id, "object": "chat.completion.chunk", "created": created, "model": model}
    usage = {"prompt_tokens": _usage_tokens(body), "completion_tokens": 5, "total_tokens": _usage_tokens(body) + 5}
    finish = "tool_calls" if call is not None else "stop"
    tool_calls = [] if call is None else [{"index": 0, "id": server.new_id("call"), "type": "function",
                                           "function": {"name": call.name, "arguments": json.dumps(call.arguments)}}]

    def chunk(delta: dict[str, Any], reason: str | None) -> bytes:
        return _sse(None, {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": reason}]})

    events = [chunk({"role": "assistant", "content": ""}, None)]
    if text:
        events.append(chunk({"content": text}, None))
    if tool_calls:
        events.append(chunk({"tool_calls": tool_calls}, None))
    events.append(chunk({}, finish))
    if (body.get("stream_options") or {}).get("include_usage"):
        events.append(_sse(None, {**base, "choices": [], "usage": usage}))
    events.append(_sse(None, "[DONE]"))
    message: dict[str, Any] = {"role": "assistant", "content": text or None}
    if tool_calls:
        message["tool_calls"] = [{k: v for k, v in c.items() if k != "index"} for c in tool_calls]
    whole = {**base, "object": "chat.completion",
             "choices": [{"index": 0, "message": message, "finish_reason": finish}], "usage": usage}
    return events, whole


_APIS = {"/v1/messages": ("anthropic", _anthropic), "/v1/responses": ("responses", _responses),
         "/v1/chat/completions": ("chat", _chat)}


def _handler(server: FakeModelServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet: tests read the record
            return

        def setup(self) -> None:
            super().setup()
            if not ip_address(self.client_address[0]).is_loopback:  # never serve another machine
                self.connection.close()

        def _send_json(self, status: int, data: Any) -> None:
            raw = json.dumps(data).encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        def do_GET(self) -> None:  # noqa: N802 - http.server's naming
            path = self.path.split("?", 1)[0].rstrip("/")
            if path.endswith("/models"):
                self._send_json(200, {"object": "list", "data": [{"id": "fake-model", "object": "model",
                                                                   "created": 0, "owned_by": "fake"}]})
            else:
                self._send_json(404, {"error": {"type": "not_found", "message": path}})

        def do_POST(self) -> None:  # noqa: N802
            path = self.path.split("?", 1)[0].rstrip("/")
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw.decode("utf-8") or "{}")
            except ValueError:
                self._send_json(400, {"error": {"type": "invalid_request_error", "message": "body is not JSON"}})
                return
            if path == "/v1/messages/count_tokens":
                server.record("anthropic", path, body, dict(self.headers))
                self._send_json(200, {"input_tokens": _usage_tokens(body)})
                return
            if path not in _APIS or not isinstance(body, dict):
                self._send_json(404, {"error": {"type": "not_found", "message": path}})
                return
            api, build = _APIS[path]
            server.record(api, path, body, dict(self.headers))
            text, call = server.choose(api, body)
            events, whole = build(server, body, text, call)
            if not body.get("stream"):
                self._send_json(200, whole)
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Connection", "close")
            self.end_headers()
            for event in events:
                self.wfile.write(event)
                self.wfile.flush()
            self.close_connection = True

    return Handler


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Fake model server on 127.0.0.1 (see the module docstring).")
    parser.add_argument("--port", type=int, default=0, help="0: any free port (printed on the first line)")
    parser.add_argument("--log", help="append every request to this file as a JSON line")
    parser.add_argument("--rules", help="JSON list of rules ({when, text, tool, arguments, times})")
    args = parser.parse_args(argv)
    rules = [Rule(**r) for r in json.loads(args.rules)] if args.rules else []
    server = FakeModelServer(rules, log=args.log, port=args.port).start()
    print(server.port, flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        server.stop()


if __name__ == "__main__":
    main(sys.argv[1:])
