"""memex's OpenClaw plugin, loaded by OpenClaw's own plugin loader (the real
``openclaw`` npm package) and driven through the context engine it registers:
ingest -> assemble -> afterTurn -> compact, with OpenClaw's message types.

Each test runs tests/openclaw/harness.mjs under Node; the engine talks to a
real ``memex openclaw-engine`` process on a real vault.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from memex import context
from memex.vault import Vault
from tests.hook_helpers import set_config
from tests.node_tools import PLUGIN_DIR, ROOT, node, openclaw_package

KEY = "agent:main:telegram:dm:42"
SESSION = context.session_id(session_key=KEY)
MEMEX = str(Path(sys.executable).with_name("memex"))


def user(text: str, ts: int = 1) -> dict[str, Any]:
    return {"role": "user", "content": text, "timestamp": ts}


def assistant(*blocks: dict[str, Any], ts: int = 2) -> dict[str, Any]:
    return {"role": "assistant", "content": list(blocks), "api": "anthropic-messages", "provider": "anthropic",
            "model": "claude-sonnet-4", "usage": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0,
                                                  "totalTokens": 0, "cost": {"input": 0, "output": 0,
                                                                             "cacheRead": 0, "cacheWrite": 0,
                                                                             "total": 0}},
            "stopReason": "stop", "timestamp": ts}


def text(t: str) -> dict[str, Any]:
    return {"type": "text", "text": t}


def tool_call(cid: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"type": "toolCall", "id": cid, "name": name, "arguments": args}


def tool_result(cid: str, name: str, out: str, ts: int = 3) -> dict[str, Any]:
    return {"role": "toolResult", "toolCallId": cid, "toolName": name, "content": [text(out)], "isError": False,
            "timestamp": ts}


def drive(tmp_path: Path, command: list[str], steps: list[dict[str, Any]],
          timeout_ms: dict[str, int] | None = None, config_file: Path | None = None,
          wait_for_exit: bool = False) -> dict[str, Any]:
    package, version = openclaw_package()
    home = tmp_path / "home"
    (home / ".openclaw").mkdir(parents=True, exist_ok=True)
    spec = {"openclaw": str(package), "version": version, "pluginDir": str(PLUGIN_DIR), "command": command,
            "workspace": str(tmp_path), "steps": steps, "timeoutMs": timeout_ms,
            "configFile": str(config_file) if config_file else None, "waitForExit": wait_for_exit}
    spec_path = tmp_path / "spec.json"
    spec_path.write_text(json.dumps(spec), encoding="utf-8")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "OPENCLAW_STATE_DIR": str(home / ".openclaw"),
           "MEMEX_WARM": "0", "MEMEX_CACHE_DIR": str(tmp_path / "cache")}
    proc = subprocess.run([node(), str(ROOT / "tests" / "openclaw" / "harness.mjs"), str(spec_path)],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60 if wait_for_exit else 600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    out["stderr"] = proc.stderr
    return out


def engine_command(vault_root: Path, log: Path | None = None) -> list[str]:
    """``memex --vault V openclaw-engine``, through a wrapper that notes each start."""
    cmd = [MEMEX, "--vault", str(vault_root), "openclaw-engine"]
    if log is None:
        return cmd
    wrapper = (f"import os; open({str(log)!r}, 'a').write(str(os.getpid()) + '\\n'); "
               f"os.execv({MEMEX!r}, {cmd!r})")
    return [sys.executable, "-c", wrapper]


@pytest.mark.model
def test_engine_through_openclaws_loader(vault_root: Path, tmp_path: Path) -> None:
    starts = tmp_path / "starts.log"
    question = user("Which day do we ship the blue-green release?", ts=10)
    turn = [
        user("remember that we deploy with blue-green releases on Fridays", ts=1),
        assistant(text("Noted."), tool_call("call_1", "read", {"path": "deploy.yaml"}), ts=2),
        tool_result("call_1", "read", "strategy: blue-green", ts=3),
        assistant(text("deploy.yaml confirms the blue-green strategy."), ts=4),
    ]
    out = drive(tmp_path, engine_command(vault_root, starts), [
        # OpenClaw calls ingest only for engines without afterTurn; other hosts may.
        {"op": "ingest", "params": {"sessionId": "run-0", "sessionKey": KEY,
                                    "message": user("remember that the on-call phone is in drawer 3")}},
        {"op": "ingest", "params": {"sessionId": "run-1", "sessionKey": KEY, "message": user("ping"),
                                    "isHeartbeat": True}},
        {"op": "afterTurn", "fresh": True, "params": {"sessionId": "run-1", "sessionKey": KEY,
                                                      "sessionFile": "/dev/null", "messages": turn,
                                                      "prePromptMessageCount": 0, "tokenBudget": 200000}},
        # As OpenClaw's embedded runner calls it: the history, and the new prompt apart.
        {"op": "assemble", "fresh": True, "params": {"sessionId": "run-2", "sessionKey": KEY, "messages": turn,
                                                     "tokenBudget": 200000, "prompt": question["content"]}},
        # As another host may: the prompt is the last message.
        {"op": "assemble", "params": {"sessionId": "run-2", "sessionKey": KEY, "messages": [*turn, question],
                                      "tokenBudget": 200000}},
        {"op": "compact", "fresh": True, "params": {"sessionId": "run-2", "sessionKey": KEY, "tokenBudget": 200000,
                                                    "force": True, "currentTokenCount": 900}},
    ])
    assert out["plugin"]["status"] == "loaded" and out["plugin"]["error"] is None, out
    assert out["plugin"]["contextEngineIds"] == ["memex"]
    assert out["engineId"] == "memex" and out["ownsCompaction"] is True
    ingest, heartbeat, after, assembled, inline, compacted = (s["result"] for s in out["steps"])
    assert all(s["engineId"] == "memex" for s in out["steps"])
    assert ingest == {"ingested": True} and heartbeat == {"ingested": False}
    assert after is None  # afterTurn returns void
    # OpenClaw appends the prompt after assembly: the history comes back as it
    # was, the recalled memory in the system prompt addition.
    assert assembled["messages"] == turn
    assert assembled["systemPromptAddition"].startswith("<relevant-memories>")
    assert "blue-green releases on Fridays" in assembled["systemPromptAddition"]
    assert assembled["estimatedTokens"] > 0
    # With the prompt as the last message, the block goes before its text.
    messages = inline["messages"]
    assert messages[:4] == turn and messages[4]["role"] == "user" and messages[4]["timestamp"] == 10
    assert messages[4]["content"].startswith("<relevant-memories>")
    assert "blue-green releases on Fridays" in messages[4]["content"]
    assert messages[4]["content"].endswith(question["content"])
    assert "systemPromptAddition" not in inline
    assert compacted["ok"] is True and compacted["result"]["tokensBefore"] == 900
    # ONE process served every engine instance of this gateway.
    assert len(starts.read_text().split()) == 1
    with Vault(vault_root) as vault:
        memories = {m.body: m for m in vault.list(source="openclaw")}
        # Keyword capture stores what the request asks to remember (memex.context.extract.remember_facts).
        assert sorted(memories) == ["the on-call phone is in drawer 3",
                                    "we deploy with blue-green releases on Fridays"]
        # afterTurn stored the turn's request at once (no commit was due).
        assert all(m.scope == "agent:openclaw" and m.session == SESSION for m in memories.values())
        archived = context.archive_search(vault, SESSION, "blue-green")
        assert archived, "afterTurn archived the turn under the session key's memex session"


def test_over_budget_keeps_newest_messages_and_summary_in_system_prompt(vault_root: Path, tmp_path: Path) -> None:
    set_config(vault_root, "embedding", 'model = "none"')
    filler = "word " * 700  # about 700 tokens a message
    history: list[dict[str, Any]] = []
    for i in range(12):
        history.append(user(f"question {i}: {filler}", ts=10 * i))
        history.append(assistant(text(f"answer {i}"), tool_call(f"c{i}", "read", {"n": i}), ts=10 * i + 1))
        history.append(tool_result(f"c{i}", "read", f"result {i}", ts=10 * i + 2))
        history.append(assistant(text(f"done {i}"), ts=10 * i + 3))
    params = {"sessionId": "r", "sessionKey": KEY, "messages": history, "tokenBudget": 25_000, "prompt": "and now?"}
    out = drive(tmp_path, engine_command(vault_root), [
        {"op": "afterTurn", "params": {"sessionId": "r", "sessionKey": KEY, "messages": history,
                                       "sessionFile": "/dev/null", "prePromptMessageCount": 0}},
        {"op": "compact", "params": {"sessionId": "r", "sessionKey": KEY, "tokenBudget": 25_000, "force": True,
                                     "currentTokenCount": 9000}},
        {"op": "assemble", "params": params},
    ])
    assembled = out["steps"][2]["result"]
    kept = assembled["messages"]
    # A suffix of OpenClaw's own messages, unchanged, opening with the user,
    # never a tool result without its call.
    assert 1 < len(kept) < len(history) and kept == history[-len(kept):]
    assert kept[0]["role"] == "user" and kept[-1] == history[-1]  # OpenClaw appends the prompt after
    # 25,000 - reserve max(15%, 20,000) = 5,000 tokens for messages and summary.
    assert assembled["estimatedTokens"] <= 5_000
    assert assembled["systemPromptAddition"].strip()


def test_fails_open_when_memex_cannot_start(tmp_path: Path) -> None:
    messages = [user("hello", ts=1)]
    out = drive(tmp_path, [str(tmp_path / "no-such-memex"), "openclaw-engine"], [
        {"op": "ingest", "params": {"sessionId": "s", "sessionKey": KEY, "message": messages[0]}},
        {"op": "assemble", "params": {"sessionId": "s", "sessionKey": KEY, "messages": messages,
                                      "tokenBudget": 100_000}},
        {"op": "afterTurn", "params": {"sessionId": "s", "sessionKey": KEY, "sessionFile": "/dev/null",
                                       "messages": messages, "prePromptMessageCount": 0}},
        {"op": "compact", "params": {"sessionId": "s", "sessionKey": KEY, "force": True}},
    ])
    ingest, assembled, after, compacted = (s["result"] for s in out["steps"])
    assert out["engineId"] == "memex"
    assert ingest == {"ingested": False}
    assert assembled["messages"] == messages and assembled["estimatedTokens"] > 0
    assert after is None and compacted["ok"] is False and "not reachable" in compacted["reason"]
    assert "fail open" in out["stderr"]


def test_fails_open_on_timeout(tmp_path: Path) -> None:
    stuck = [sys.executable, "-c", "import time; time.sleep(60)"]
    messages = [user("hello", ts=1)]
    out = drive(tmp_path, stuck, [
        {"op": "assemble", "params": {"sessionId": "s", "sessionKey": KEY, "messages": messages,
                                      "tokenBudget": 100_000}},
    ], timeout_ms={"assemble": 300})
    [step] = out["steps"]
    assert step["result"]["messages"] == messages and step["ms"] < 5000
    assert "timed out" in out["stderr"]


def test_idle_memex_process_lets_openclaw_exit(vault_root: Path, tmp_path: Path) -> None:
    """A one-shot `openclaw` command ends when its work is done; the memex process then ends too."""
    set_config(vault_root, "embedding", 'model = "none"')
    starts = tmp_path / "starts.log"
    out = drive(tmp_path, engine_command(vault_root, starts), [
        {"op": "assemble", "params": {"sessionId": "s", "sessionKey": KEY, "messages": [user("hi")],
                                      "tokenBudget": 100_000}},
    ], wait_for_exit=True)  # Node ending on its own, not by process.exit()
    assert out["steps"][0]["result"]["messages"] == [user("hi")]
    [pid] = starts.read_text().split()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and Path(f"/proc/{pid}").exists():
        if "Z" in Path(f"/proc/{pid}/stat").read_text().split()[2]:
            break  # exited, waiting to be reaped by init
        time.sleep(0.1)
    gone = not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text().split()[2]
    assert gone, "the memex process outlived the gateway"


def test_session_end_hook_commits_a_short_conversation(vault_root: Path, tmp_path: Path) -> None:
    """OpenClaw's context engine has no end-of-session call; the plugin's
    session_end hook (run by OpenClaw's hook runner) is one: a short
    conversation's decision is extracted then, not left in the archive."""
    set_config(vault_root, "embedding", 'model = "none"')  # plumbing: no model load in the engine process
    turn = [user("We decided to use PostgreSQL for billing.", ts=1), assistant(text("Good choice."), ts=2)]
    out = drive(tmp_path, engine_command(vault_root), [
        {"op": "afterTurn", "params": {"sessionId": "run-1", "sessionKey": KEY, "sessionFile": "/dev/null",
                                       "messages": turn, "prePromptMessageCount": 0, "tokenBudget": 200000}},
        {"hook": "session_end", "event": {"sessionId": "run-1", "sessionKey": KEY, "messageCount": 2,
                                          "reason": "idle"},
         "ctx": {"sessionId": "run-1", "sessionKey": KEY, "agentId": "main"}},
    ])
    assert out["plugin"]["status"] == "loaded", out
    assert [s["result"] for s in out["steps"]] == [None, None], out
    # The hook returned at once (OpenClaw waits 2 s for session_end handlers at
    # shutdown); the commit runs on in the memex process, even though this
    # "gateway" has exited meanwhile.
    assert out["steps"][1]["ms"] < 2000, out["steps"]
    deadline = time.monotonic() + 60
    while True:
        with Vault(vault_root) as vault:
            found = vault.list()
        if found or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    [memory] = found
    assert memory.body.strip() == "We decided to use PostgreSQL for billing." and memory.session == SESSION
