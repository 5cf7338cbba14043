"""The fake model server the end-to-end client tests drive: each of its three
wire APIs streams a scripted text or tool call, records the request, and
answers a tool's result with text instead of calling the tool again."""

from __future__ import annotations

import json
import urllib.request
from typing import Any

from tests.fake_model_server import FakeModelServer, Rule


def _post(server: FakeModelServer, path: str, body: dict[str, Any]) -> str:
    req = urllib.request.Request(server.url + path, data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"}, method="POST")
    with urllib.request.urlopen(req, timeout=10) as resp:
        return str(resp.read().decode("utf-8"))


def _events(raw: str) -> list[Any]:
    out = []
    for line in raw.splitlines():
        if line.startswith("data: "):
            data = line[len("data: "):]
            out.append(data if data == "[DONE]" else json.loads(data))
    return out


def test_anthropic_stream_calls_the_offered_tool_once_then_answers_its_result() -> None:
    rule = Rule(when="look it up", tool="memory_search", arguments={"query": "docker"})
    with FakeModelServer([rule]) as server:
        tools = [{"name": "Bash", "input_schema": {}}, {"name": "mcp__memex__memory_search", "input_schema": {}}]
        first = _events(_post(server, "/v1/messages", {
            "model": "m", "stream": True, "tools": tools,
            "messages": [{"role": "user", "content": [{"type": "text", "text": "Please LOOK IT UP"}]}]}))
        use = [e for e in first if e["type"] == "content_block_start" and e["content_block"]["type"] == "tool_use"]
        assert [u["content_block"]["name"] for u in use] == ["mcp__memex__memory_search"]
        deltas = [e["delta"]["partial_json"] for e in first if e["type"] == "content_block_delta"
                  and e["delta"]["type"] == "input_json_delta"]
        assert json.loads("".join(deltas)) == {"query": "docker"}
        assert first[-1] == {"type": "message_stop"}
        second = _events(_post(server, "/v1/messages", {
            "model": "m", "stream": True, "tools": tools, "messages": [
                {"role": "user", "content": "Please look it up"},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "x", "content": "found"}]}]}))
        assert not [e for e in second if e["type"] == "content_block_start"
                    and e["content_block"]["type"] == "tool_use"]
        assert '"found"' in server.of("anthropic")[-1].text


def test_a_request_without_the_tool_gets_text_and_leaves_the_rule_for_later() -> None:
    with FakeModelServer([Rule(when="docker", tool="memory_search")]) as server:
        plain = json.loads(_post(server, "/v1/messages", {
            "model": "m", "messages": [{"role": "user", "content": "docker title please"}]}))
        assert plain["stop_reason"] == "end_turn"
        called = json.loads(_post(server, "/v1/messages", {
            "model": "m", "tools": [{"name": "memory_search"}],
            "messages": [{"role": "user", "content": "docker"}]}))
        assert called["stop_reason"] == "tool_use"


def test_responses_stream_names_the_namespace_of_an_mcp_tool() -> None:
    with FakeModelServer([Rule(when="recall", tool="memory_search", arguments={"query": "q"})]) as server:
        body: dict[str, Any] = {"model": "m", "stream": True,
                "tools": [{"type": "namespace", "name": "mcp__memex",
                           "tools": [{"type": "function", "name": "memory_search"}]}],
                "input": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "recall"}]}]}
        events = _events(_post(server, "/v1/responses", body))
        done = [e["item"] for e in events if e["type"] == "response.output_item.done"]
        assert done[-1]["type"] == "function_call"
        assert (done[-1]["namespace"], done[-1]["name"]) == ("mcp__memex", "memory_search")
        assert events[-1]["type"] == "response.completed"
        assert server.of("responses")[0].tool_names() == ["mcp__memex__memory_search"]
        body["input"].append({"type": "function_call_output", "call_id": done[-1]["call_id"], "output": "hit"})
        after = _events(_post(server, "/v1/responses", body))
        assert [e["item"]["type"] for e in after if e["type"] == "response.output_item.done"] == ["message"]


def test_chat_completions_stream_a_tool_call_and_usage() -> None:
    with FakeModelServer([Rule(when="store", tool="memory_store", arguments={"text": "t"})]) as server:
        events = _events(_post(server, "/v1/chat/completions", {
            "model": "m", "stream": True, "stream_options": {"include_usage": True},
            "tools": [{"type": "function", "function": {"name": "memory_store"}}],
            "messages": [{"role": "system", "content": "sys"}, {"role": "user", "content": "store this"}]}))
        assert events[-1] == "[DONE]"
        calls = [c for e in events[:-1] for ch in e["choices"] for c in ch["delta"].get("tool_calls", [])]
        assert calls[0]["function"] == {"name": "memory_store", "arguments": json.dumps({"text": "t"})}
        assert [ch["finish_reason"] for e in events[:-1] for ch in e["choices"]][-1] == "tool_calls"
        assert events[-2]["usage"]["total_tokens"] > 0


def test_it_listens_on_loopback_only() -> None:
    with FakeModelServer() as server:
        assert server.url.startswith("http://127.0.0.1:")
        assert server._httpd.server_address[0] == "127.0.0.1"
