"""`memex mcp` answers its handshake before the MCP SDK has loaded
(memex/agents/mcp_front.py).

Found with the real clients: the SDK's import alone held the handshake for
3-9 s on a loaded machine; Claude Code's `server/discover` probe timed out,
so it killed the server and started it again, and the session ended with
memex's tools never connected; Codex left them out of the first turn.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from memex.agents import mcp_front

MEMEX = str(Path(sys.executable).with_name("memex"))
PROBE = {"jsonrpc": "2.0", "id": "server-discover-probe-1", "method": "server/discover", "params": {"_meta": {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {}}}}
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}}


class Wire:
    def __init__(self) -> None:
        self.lines: list[dict[str, Any]] = []

    def write(self, data: bytes) -> None:
        self.lines.append(json.loads(data))

    def flush(self) -> None:
        pass


def _front(tmp_path: Path) -> tuple[mcp_front.Front, Wire]:
    wire = Wire()
    return mcp_front.Front(None, wire, mcp_front.HandshakeCache(tmp_path / "cache.json")), wire  # type: ignore[arg-type]


def _sdk_lines(front: mcp_front.Front) -> list[dict[str, Any]]:
    out = []
    while not front.to_sdk.empty():
        line = front.to_sdk.get_nowait()
        assert line is not None
        out.append(json.loads(line))
    return out


def test_a_cache_miss_goes_to_the_sdk_and_its_answer_is_kept(tmp_path: Path) -> None:
    front, wire = _front(tmp_path)
    front.from_agent(json.dumps(INITIALIZE).encode())
    assert _sdk_lines(front) == [INITIALIZE] and wire.lines == []
    answer = {"jsonrpc": "2.0", "id": 1, "result": {"serverInfo": {"name": "memex"}}}
    front.from_sdk(json.dumps(answer).encode())
    assert wire.lines == [answer]
    assert mcp_front.HandshakeCache(tmp_path / "cache.json").get(INITIALIZE) == answer["result"]


def test_a_cache_hit_is_answered_at_once_and_replayed_to_the_sdk(tmp_path: Path) -> None:
    front, wire = _front(tmp_path)
    front.cache.put(INITIALIZE, {"serverInfo": {"name": "memex"}})
    front.from_agent(json.dumps({**INITIALIZE, "id": 7}).encode())
    front.from_agent(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
    front.from_agent(b'{"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": {"name": "x"}}\n')
    assert wire.lines == [{"jsonrpc": "2.0", "id": 7, "result": {"serverInfo": {"name": "memex"}}}]
    # The SDK hears everything, in order, the answered request under an id of memex's own.
    sent = _sdk_lines(front)
    assert [m.get("method") for m in sent] == ["initialize", "notifications/initialized", "tools/call"]
    assert str(sent[0]["id"]).startswith(mcp_front.REPLAY_PREFIX) and sent[2]["id"] == 8
    assert front.awaiting() == 1
    # Its answer to the replay goes nowhere; its answer to the call goes to the agent.
    front.from_sdk(json.dumps({"jsonrpc": "2.0", "id": sent[0]["id"], "result": {}}).encode())
    front.from_sdk(b'{"jsonrpc": "2.0", "id": 8, "result": {"content": []}}')
    assert wire.lines[1:] == [{"jsonrpc": "2.0", "id": 8, "result": {"content": []}}]
    assert front.awaiting() == 0


def test_a_line_nested_too_deeply_goes_to_the_sdk_and_the_front_goes_on(tmp_path: Path) -> None:
    """Found from outside: one line of 100,000 nested brackets from the agent
    raised RecursionError in the front door's reading thread; `memex mcp` then
    answered nothing more (tools/list after it waited until the agent gave up)."""
    front, wire = _front(tmp_path)
    deep = b"[" * 100_000 + b"]" * 100_000 + b"\n"
    front.from_agent(deep)
    front.from_agent(json.dumps(INITIALIZE).encode())
    assert front.to_sdk.get_nowait() == deep  # the SDK's to judge, as any line that is not a request
    assert _sdk_lines(front) == [INITIALIZE]


def test_a_request_holding_half_an_emoji_reaches_the_sdk_readable(tmp_path: Path) -> None:
    """Found from outside: memory_add with a lone surrogate ("\\ud83d": a
    JavaScript client cut an emoji in half) got no answer at all: the SDK
    dropped the request, and the agent waited. It reaches the SDK as U+FFFD."""
    front, _ = _front(tmp_path)
    line = (b'{"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": "memory_add", '
            b'"arguments": {"text": "The egret marsh \\ud83d floods in april"}}}\n')
    front.from_agent(line)
    [sent] = _sdk_lines(front)
    assert sent["id"] == 9 and sent["params"]["arguments"]["text"] == "The egret marsh \ufffd floods in april"
    emoji = b'{"jsonrpc": "2.0", "id": 10, "method": "tools/call", "params": {"x": "\\ud83d\\ude00"}}\n'
    front.from_agent(emoji)  # a whole pair is left as it is
    assert front.to_sdk.get_nowait() == emoji


def test_a_request_holding_half_an_emoji_as_raw_bytes_reaches_the_sdk_readable(tmp_path: Path) -> None:
    """Found in review: json.loads reads bytes with "surrogatepass", so a lone
    surrogate written as its own three bytes (ED A0 BD, not the "\\ud83d"
    escape) was not looked for and went on to the SDK as it came."""
    front, _ = _front(tmp_path)
    line = (b'{"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": "memory_add", '
            b'"arguments": {"text": "The egret marsh \xed\xa0\xbd floods in april"}}}\n')
    front.from_agent(line)
    [sent] = _sdk_lines(front)
    assert sent["id"] == 9 and sent["params"]["arguments"]["text"] == "The egret marsh \ufffd floods in april"
    korean = '{"jsonrpc": "2.0", "id": 10, "method": "tools/call", "params": {"x": "힣"}}\n'.encode()
    front.from_agent(korean)  # ED 9E A3: a letter, not half of one, left as it is
    assert front.to_sdk.get_nowait() == korean


def test_a_listen_is_acknowledged_from_the_cache_under_the_agents_id(tmp_path: Path) -> None:
    """Claude Code counts the server connected once its subscription is acknowledged."""
    listen = {"jsonrpc": "2.0", "id": "listen:0", "method": "subscriptions/listen",
              "params": {"_meta": PROBE["params"]["_meta"], "notifications": {"toolsListChanged": True}}}
    front, wire = _front(tmp_path)
    front.from_agent(json.dumps(listen).encode())  # not cached: the SDK's acknowledgement is kept
    ack = {"jsonrpc": "2.0", "method": mcp_front.ACKNOWLEDGED, "params": {
        "_meta": {"io.modelcontextprotocol/subscriptionId": "listen:0"}, "notifications": {"toolsListChanged": True}}}
    front.from_sdk(json.dumps(ack).encode())
    assert wire.lines == [ack] and front.awaiting() == 0
    later, wire = _front(tmp_path)
    later.from_agent(json.dumps({**listen, "id": "listen:7"}).encode())
    assert wire.lines == [{**ack, "params": {**ack["params"], "_meta": {
        "io.modelcontextprotocol/subscriptionId": "listen:7"}}}]
    [replayed] = _sdk_lines(later)
    replay = replayed["id"]
    # The SDK's own acknowledgement of the replay is dropped; its later notifications come under the agent's id.
    later.from_sdk(json.dumps({**ack, "params": {**ack["params"], "_meta": {
        "io.modelcontextprotocol/subscriptionId": replay}}}).encode())
    changed = {"jsonrpc": "2.0", "method": "notifications/tools/list_changed",
               "params": {"_meta": {"io.modelcontextprotocol/subscriptionId": replay}}}
    later.from_sdk(json.dumps(changed).encode())
    assert wire.lines[1:] == [{**changed, "params": {"_meta": {"io.modelcontextprotocol/subscriptionId": "listen:7"}}}]


def test_another_client_or_version_is_not_answered_from_its_cache(tmp_path: Path) -> None:
    front, wire = _front(tmp_path)
    front.cache.put(INITIALIZE, {"protocolVersion": "2025-06-18"})
    other = {**INITIALIZE, "params": {**INITIALIZE["params"], "protocolVersion": "2024-11-05"}}
    front.from_agent(json.dumps(other).encode())
    assert wire.lines == [] and _sdk_lines(front) == [other]


def _ask(proc: subprocess.Popen[str], message: dict[str, Any]) -> dict[str, Any]:
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(json.dumps(message) + "\n")
    proc.stdin.flush()
    while True:
        line = proc.stdout.readline()
        assert line, "memex mcp ended"
        answer: dict[str, Any] = json.loads(line)
        if answer.get("id") == message["id"]:
            return answer


def _session(vault: Path, env: dict[str, str], probing: bool = False) -> tuple[dict[str, Any], ...]:
    proc = subprocess.Popen([MEMEX, "--vault", str(vault), "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    try:
        # A client that probes for the stateless protocol (Claude Code) goes on
        # in it; this session is another client's, one that never probed.
        probe = _ask(proc, PROBE) if probing else {}
        if probing:
            return (probe,)
        init = _ask(proc, INITIALIZE)
        assert proc.stdin is not None
        proc.stdin.write('{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
        listed = _ask(proc, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        called = _ask(proc, {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                             "params": {"name": "memory_search", "arguments": {"query": "staging port"}}})
    finally:
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        proc.stdin.close()
        stderr = proc.stderr.read()
        proc.wait(timeout=120)
        proc.stdout.close()
        proc.stderr.close()
        assert "Traceback" not in stderr, stderr
    return init, listed, called


@pytest.mark.model
def test_the_second_start_answers_as_the_sdk_did(model_vault: Any, vault_root: Path, tmp_path: Path) -> None:
    model_vault.add("The staging database listens on port 5433", scope="user")
    model_vault.close()
    env = {**os.environ, "MEMEX_CACHE_DIR": str(tmp_path / "cache"), "MEMEX_WARM": "0"}
    first, first_probe = _session(vault_root, env), _session(vault_root, env, probing=True)
    assert list((tmp_path / "cache").glob("mcp-handshake-*.json"))
    second, second_probe = _session(vault_root, env), _session(vault_root, env, probing=True)
    assert first_probe == second_probe and "supportedVersions" in second_probe[0]["result"]
    for asked, (one, two) in zip(("initialize", "tools/list"), zip(first, second)):
        assert one == two, asked
    assert "5433" in json.dumps(second[2].get("result")), second[2]
    assert {t["name"] for t in second[1]["result"]["tools"]} >= {"memory_search", "memory_add"}


def test_the_cache_key_follows_the_code(monkeypatch: pytest.MonkeyPatch) -> None:
    key = mcp_front.cache_key()
    assert key == mcp_front.cache_key()
    monkeypatch.setattr(mcp_front, "_SOURCES", (*mcp_front._SOURCES, "mcp_front.py"))
    assert mcp_front.cache_key() != key



def test_install_caches_the_handshake_for_the_clients_first_session(tmp_path: Path) -> None:
    """`memex install mcp` has the SDK answer the usual handshakes, and
    returns once they are cached; a client's own request (another name,
    other capabilities) is then answered from them, as the SDK would
    (checked above). Found with the real clients: started right after the
    install, the first session's `memex mcp` found nothing cached yet (the
    priming ran in the background), and Claude Code's first turn waited
    about 3 s for it, Codex's about 2 s."""
    cache = tmp_path / "cache"
    env = {**os.environ, "MEMEX_CACHE_DIR": str(cache), "HOME": str(tmp_path / "home")}
    (tmp_path / "home").mkdir()
    done = subprocess.run([MEMEX, "install", "mcp", "--agent", "codex"], capture_output=True, text=True, env=env,
                          timeout=120)
    assert done.returncode == 0, done.stderr

    def primed() -> mcp_front.HandshakeCache | None:
        found = list(cache.glob("mcp-handshake-*.json"))
        if not found:
            return None
        kept = mcp_front.HandshakeCache(found[0])
        codex = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {"elicitation": {}},
            "clientInfo": {"name": "codex-mcp-client", "version": "0.171.0"}}}
        listed = kept.get({"jsonrpc": "2.0", "id": 5, "method": "tools/list"}, "2025-06-18")
        return kept if kept.get(PROBE) is not None and kept.get(codex) is not None and listed else None

    kept = primed()
    assert kept is not None, "the install returned before the handshake's answers were cached"
    assert kept.get({"jsonrpc": "2.0", "id": 5, "method": "tools/list"}, "2025-06-18")["tools"]


def _sdk_loaded(pid: int) -> bool:
    """Whether process ``pid`` has loaded the MCP SDK (pydantic's compiled core, which the SDK imports)."""
    return "pydantic_core" in Path(f"/proc/{pid}/maps").read_text(encoding="utf-8", errors="replace")


@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="reads /proc/PID/maps")
def test_a_cached_start_loads_the_sdk_only_when_a_request_needs_it(vault_root: Path, tmp_path: Path) -> None:
    """Found with the real clients: every `memex mcp` loaded the SDK (about a
    second of CPU) right after answering its handshake from the cache, while
    the agent's first hooks ran, and a one-shot `claude -p` turn ended before
    it had loaded. Now the SDK waits until a request needs it (or
    MEMEX_MCP_SDK_DELAY seconds), and a session that needs none ends without it."""
    cache = tmp_path / "cache"
    env = {**os.environ, "MEMEX_CACHE_DIR": str(cache), "MEMEX_WARM": "0", mcp_front.SDK_DELAY_ENV: "600"}
    _session(vault_root, env)  # fills the cache (its misses load the SDK at once)
    proc = subprocess.Popen([MEMEX, "--vault", str(vault_root), "mcp"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        _ask(proc, INITIALIZE)
        assert proc.stdin is not None
        proc.stdin.write('{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
        listed = _ask(proc, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        assert {t["name"] for t in listed["result"]["tools"]} >= {"memory_search", "memory_add"}
        time.sleep(5)  # the SDK took about 1 s to load at once before
        assert not _sdk_loaded(proc.pid)
        called = _ask(proc, {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                             "params": {"name": "memory_search", "arguments": {"query": "staging port"}}})
        assert "result" in called, called
        assert _sdk_loaded(proc.pid)
    finally:
        assert proc.stdin is not None and proc.stderr is not None and proc.stdout is not None
        proc.stdin.close()
        stderr = proc.stderr.read()
        proc.wait(timeout=120)
        proc.stdout.close()
        proc.stderr.close()
    assert "Traceback" not in stderr, stderr


def test_a_cached_session_the_agent_ends_at_once_ends_without_the_sdk(vault_root: Path, tmp_path: Path) -> None:
    """The agent closes the wire before asking anything uncached: the server
    exits at once, not after loading the SDK for nobody."""
    cache = tmp_path / "cache"
    env = {**os.environ, "MEMEX_CACHE_DIR": str(cache), "MEMEX_WARM": "0", mcp_front.SDK_DELAY_ENV: "600"}
    _session(vault_root, env)
    proc = subprocess.Popen([MEMEX, "--vault", str(vault_root), "mcp"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    _ask(proc, INITIALIZE)
    assert proc.stdin is not None and proc.stderr is not None and proc.stdout is not None
    proc.stdin.close()
    assert proc.wait(timeout=60) == 0
    assert proc.stderr.read() == ""
    proc.stdout.close()
    proc.stderr.close()


def test_the_in_process_front_ends_without_loading_the_sdk_when_nothing_needs_it(tmp_path: Path) -> None:
    """The same through :func:`mcp_front.serve` on given pipes (the priming's
    way): a session answered wholly from the cache neither loads the SDK nor waits out the delay."""
    front_cache = tmp_path / "front.json"
    mcp_front.HandshakeCache(front_cache).put(INITIALIZE, {"serverInfo": {"name": "memex"}})
    agent_r, server_w = os.pipe()
    server_r, agent_w = os.pipe()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(mcp_front, "_cache", lambda: mcp_front.HandshakeCache(front_cache))
        patch.setenv(mcp_front.SDK_DELAY_ENV, "600")
        with os.fdopen(agent_w, "wb") as to_server, os.fdopen(agent_r, "rb") as from_server:
            to_server.write(json.dumps(INITIALIZE).encode() + b"\n")
            to_server.flush()
            wire = (os.fdopen(server_r, "rb", buffering=0), os.fdopen(server_w, "wb"))
            thread = threading.Thread(target=mcp_front.serve, args=(lambda: None, wire), daemon=True)
            thread.start()
            assert json.loads(from_server.readline())["result"] == {"serverInfo": {"name": "memex"}}
            to_server.close()
            thread.join(60)
            assert not thread.is_alive(), "the front waited out the SDK's delay"
            for end in wire:
                end.close()


@pytest.mark.parametrize("line", [
    b'{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": 5}\n',
    b'{"jsonrpc": "2.0", "id": "b", "method": "tools/call", "params": [1]}\n',
    b'{"jsonrpc": "2.0", "id": 3, "method": 7}\n',
])
def test_a_request_the_sdk_would_drop_is_answered_with_an_error(tmp_path: Path, line: bytes) -> None:
    """Found from outside: `"params": 5` (or a list, or a method that is no
    string) got no answer at all from `memex mcp`, so the agent waited."""
    front, wire = _front(tmp_path)
    front.from_agent(line)
    [answer] = wire.lines
    assert answer["id"] == json.loads(line)["id"] and answer["error"]["code"] in (-32600, -32602)
    assert front.to_sdk.empty() and front.awaiting() == 0
