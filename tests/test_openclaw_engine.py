"""The Python side of the OpenClaw context engine: OpenClaw's messages in and
out, and the JSON-lines process the plugin talks to (plumbing, fake embedder;
tests/test_openclaw_plugin.py runs it under the real OpenClaw)."""

from __future__ import annotations

import io
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from memex import context
from memex.agents import openclaw_engine, openclaw_server, openclaw_tools
from memex.context import archive
from memex.vault import Vault
from tests.hook_helpers import MEMEX, lexical_only
from tests.node_tools import PLUGIN_DIR, ROOT, node, openclaw_package
from tests.test_openclaw_plugin import KEY, SESSION, assistant, text, tool_call, tool_result, user


def serve(vault: Vault, *lines: bytes) -> list[dict[str, Any]]:
    out = io.BytesIO()
    openclaw_server.serve(vault, io.BytesIO(b"".join(lines)), out)
    return [json.loads(line) for line in out.getvalue().splitlines()]


def request(rid: int, op: str, **params: Any) -> bytes:
    return json.dumps({"id": rid, "op": op, "params": params}).encode() + b"\n"


def test_session_key_names_the_session_across_rotated_ids() -> None:
    a = openclaw_engine.memex_session({"sessionId": "run-1", "sessionKey": KEY})
    b = openclaw_engine.memex_session({"sessionId": "run-2-after-compaction", "sessionKey": KEY})
    assert a == b == SESSION
    assert openclaw_engine.memex_session({"sessionId": "run-1"}) == "run-1"


def test_messages_convert_with_tool_pairs_kept() -> None:
    converted = openclaw_engine.to_memex([
        user("hi"), assistant(text("look"), tool_call("c1", "read", {"p": 1})), tool_result("c1", "read", "out"),
    ])
    assert converted[1]["content"][1] == {"type": "tool_use", "id": "c1", "name": "read", "input": {"p": 1}}
    assert converted[2]["content"] == [{"type": "tool_result", "tool_use_id": "c1", "content": "out"}]
    assert [m["_oc"] for m in converted] == [0, 1, 2]


def test_assemble_without_memories_returns_openclaws_messages_unchanged(vault: Vault) -> None:
    messages = [user("hi", ts=1), assistant(text("hello"), ts=2), user("what's new?", ts=3)]
    result = openclaw_engine.assemble(vault, {"sessionId": "s", "sessionKey": KEY, "messages": messages,
                                              "tokenBudget": 100_000})
    assert result["messages"] == messages and result["estimatedTokens"] > 0
    assert "systemPromptAddition" not in result


@pytest.mark.model
def test_recalled_block_is_bounded(vault_root: Path, real_embedder: Any) -> None:
    """Two 18.8k-character memories (a case from docs/openclaw.md) give a block within recall_max_injected_chars."""
    with Vault(vault_root, embedder=real_embedder) as vault:
        for topic in ("deploy the payments service to kubernetes", "roll back the payments service on kubernetes"):
            vault.add(f"Runbook: how to {topic}. " + "Check the pods and the ingress. " * 590, scope="agent:openclaw")
        result = openclaw_engine.assemble(vault, {
            "sessionKey": KEY, "sessionId": "s", "tokenBudget": 100_000,
            "messages": [user("How do I deploy the payments service to kubernetes?")]})
        limit = context.load_settings(vault).recall_max_injected_chars
    content = result["messages"][-1]["content"]
    assert content.startswith("<relevant-memories>")
    block = content[: content.index("</relevant-memories>") + len("</relevant-memories>")]
    assert len(block) <= limit + 1000  # memory text within the limit, plus tags and header


def test_ingest_captures_only_user_requests_in_the_gateway_scope(vault: Vault) -> None:
    ask = {"sessionId": "s", "sessionKey": KEY, "message": user("remember that backups run at 02:00")}
    assert openclaw_engine.ingest(vault, ask) == {"ingested": True}
    said = {"sessionId": "s", "sessionKey": KEY, "message": assistant(text("remember that I said hi"))}
    assert openclaw_engine.ingest(vault, said) == {"ingested": False}
    [memory] = vault.list()
    assert memory.scope == "agent:openclaw" and memory.session == SESSION


def test_after_turn_archives_only_the_new_messages(vault: Vault) -> None:
    old = [user("earlier", ts=1), assistant(text("before"), ts=2)]
    new = [user("deploy now", ts=3), assistant(text("deployed"), ts=4)]
    params = {"sessionId": "s", "sessionKey": KEY, "messages": old + new, "prePromptMessageCount": 2}
    assert openclaw_engine.after_turn(vault, params, commit="none")["archived"] == 2
    texts = [m["content"] for t in archive.read_turns(vault, SESSION) for m in t["messages"]]
    assert texts == [[{"type": "text", "text": "deploy now"}], [{"type": "text", "text": "deployed"}]]


def test_server_answers_in_order_and_survives_bad_requests(vault: Vault) -> None:
    answers = serve(
        vault,
        request(1, "ping"),
        b"not json\n",
        request(2, "assemble", messages="nope"),
        request(3, "rm -rf"),
        b"\n",
        json.dumps({"id": 4, "op": "assemble", "params": []}).encode() + b"\n",
        request(5, "assemble", sessionId="s", messages=[user("still here")], tokenBudget=50_000),
    )
    assert [a["id"] for a in answers] == [1, None, 2, 3, 4, 5]
    assert [a["ok"] for a in answers] == [True, False, False, False, False, True]
    assert "messages" in answers[2]["error"] and "unknown op" in answers[3]["error"]
    assert answers[5]["result"]["messages"] == [user("still here")]


def test_engine_process_prints_nothing_but_answers(vault_root: Path) -> None:
    lexical_only(vault_root)
    lines = request(1, "ingest", sessionId="s", sessionKey=KEY,
                    message=user("remember that the VPN needs MFA")) + request(2, "ping")
    proc = subprocess.run([MEMEX, "--vault", str(vault_root), "openclaw-engine"],
                          input=lines, capture_output=True, timeout=120)
    answers = [json.loads(line) for line in proc.stdout.splitlines()]
    assert proc.returncode == 0 and [a["id"] for a in answers] == [1, 2], proc.stderr
    assert answers[0]["result"] == {"ingested": True}


def test_built_plugin_matches_its_typescript_source() -> None:
    """index.js is index.ts with the types stripped: edit one, rebuild the other."""
    proc = subprocess.run([node(), str(ROOT / "scripts" / "build_openclaw_plugin.mjs"), "--check"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    manifest = json.loads((PLUGIN_DIR / "openclaw.plugin.json").read_text(encoding="utf-8"))
    package = json.loads((PLUGIN_DIR / "package.json").read_text(encoding="utf-8"))
    assert manifest["id"] == "memex" and manifest["kind"] == ["context-engine", "memory"]
    assert package["openclaw"]["extensions"] == ["./index.js"]


def test_plugins_tool_list_is_generated_from_the_python_tools() -> None:
    """tools.json (what the plugin registers) is tool_specs(); the manifest
    declares the same names (OpenClaw discovers plugin tools by contracts.tools)."""
    shipped = json.loads((PLUGIN_DIR / "tools.json").read_text(encoding="utf-8"))
    assert shipped == openclaw_tools.tool_specs(), (
        "run: python -m memex.agents.openclaw_tools > memex/agents/openclaw_plugin/tools.json")
    manifest = json.loads((PLUGIN_DIR / "openclaw.plugin.json").read_text(encoding="utf-8"))
    assert manifest["contracts"]["tools"] == [t["name"] for t in shipped] == list(openclaw_tools.NAMES)


@pytest.mark.parametrize("bad", [{"messages": [1]}, {"messages": [user("x")], "prePromptMessageCount": "2"}])
def test_bad_after_turn_params_are_named(vault: Vault, bad: dict[str, Any]) -> None:
    with pytest.raises(Exception, match="messages|prePromptMessageCount"):
        openclaw_engine.after_turn(vault, {"sessionId": "s", **bad}, commit="none")


def test_prompt_already_last_is_not_counted_twice(vault: Vault) -> None:
    messages = [user("hi", ts=1), assistant(text("hello"), ts=2), user("what's new?", ts=3)]
    with_prompt = openclaw_engine.assemble(vault, {"sessionId": "s", "messages": messages, "tokenBudget": 100_000,
                                                   "prompt": "what's new?"})
    without = openclaw_engine.assemble(vault, {"sessionId": "s", "messages": messages, "tokenBudget": 100_000})
    assert with_prompt == without


def test_pending_prompt_may_leave_no_history(vault: Vault) -> None:
    """Over budget with the prompt apart: the history may go entirely, never half a tool pair."""
    big = "word " * 30_000
    messages = [user(big, ts=1), assistant(text("ok"), tool_call("c", "read", {}), ts=2),
                tool_result("c", "read", big, ts=3), assistant(text("done"), ts=4)]
    result = openclaw_engine.assemble(vault, {"sessionId": "s", "messages": messages, "tokenBudget": 30_000,
                                              "prompt": "next question"})
    kept = result["messages"]
    assert kept == messages[len(messages) - len(kept):]
    assert not kept or kept[0]["role"] == "user"


def test_plugin_source_type_checks_against_openclaws_sdk() -> None:
    """index.ts against OpenClaw's own declarations (OpenClawPluginApi, ContextEngine)."""
    package, _ = openclaw_package()
    tsc = ROOT / ".node" / "node_modules" / "typescript" / "bin" / "tsc"
    if not tsc.exists():
        pytest.skip("TypeScript is not installed in .node/; run `bash scripts/openclaw_env.sh`")
    proc = subprocess.run([node(), str(tsc), "-p", str(ROOT / "tests" / "openclaw" / "tsconfig.json")],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (package / "dist" / "plugin-sdk" / "core.d.ts").exists()


def test_after_turn_stores_a_request_to_remember_at_once(vault: Vault) -> None:
    """OpenClaw calls afterTurn instead of ingest: the request must not wait for a commit."""
    turn = [user("remember that the staging cluster is called kestrel", ts=1), assistant(text("Noted."), ts=2)]
    result = openclaw_engine.after_turn(vault, {"sessionId": "s", "sessionKey": KEY, "messages": turn,
                                                "prePromptMessageCount": 0}, commit="none")
    assert [c["status"] for c in result["captured"]] == ["created"]
    [memory] = vault.list()
    assert "kestrel" in memory.body and memory.scope == "agent:openclaw" and memory.session == SESSION
    # The same messages seen again by a later call (the tool loop) store nothing new.
    again = openclaw_engine.after_turn(vault, {"sessionId": "s", "sessionKey": KEY, "messages": turn,
                                               "prePromptMessageCount": 2}, commit="none")
    assert again["captured"] == [] and len(vault.list()) == 1


def test_session_end_commits_a_short_conversations_decisions(vault: Vault) -> None:
    """OpenClaw's session_end plugin hook: what a short conversation decided
    is extracted then, not left in the archive until 20,000 tokens are pending."""
    turn = [user("We decided to use PostgreSQL for billing.", ts=1), assistant(text("Good choice."), ts=2)]
    params = {"sessionId": "s", "sessionKey": KEY, "messages": turn, "prePromptMessageCount": 0}
    openclaw_engine.after_turn(vault, params, commit="background")  # far below commit_token_threshold
    assert vault.list() == [] and archive.load_state(vault, SESSION).pending_tokens > 0
    end = json.loads(request(1, "sessionEnd", sessionId="s", sessionKey=KEY, reason="idle"))
    # Answered before the work: OpenClaw gives session_end handlers 2 s at gateway shutdown.
    answer, later = openclaw_server.answer_first(vault, end)
    assert answer["ok"] is True and answer["result"] == {"session": SESSION, "reason": "idle", "deferred": True}
    assert later is not None and vault.list() == []
    # The process does the work before it reads the next request, or exits.
    [answer] = serve(vault, request(1, "sessionEnd", sessionId="s", sessionKey=KEY, reason="idle"))
    assert answer["result"]["deferred"] is True
    [memory] = vault.list()
    assert memory.body.strip() == "We decided to use PostgreSQL for billing." and memory.session == SESSION
    assert archive.load_state(vault, SESSION).pending_tokens == 0
    # A second end (gateway shutdown after /new) has nothing left to commit.
    [again] = serve(vault, request(2, "sessionEnd", sessionId="s2", sessionKey=KEY, reason="shutdown"))
    assert again["ok"] is True and len(vault.list()) == 1


def test_deferred_work_that_fails_is_reported_and_the_process_goes_on(vault: Vault,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    def broken() -> None:
        raise OSError("disk full")

    openclaw_server.run_later(broken)
    assert "deferred work failed: OSError: disk full" in capsys.readouterr().err
    [answer] = serve(vault, request(1, "ping"))
    assert answer["ok"] is True


def commit(key: str, *messages: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"advancementKey": key, "sessionId": "run-1", "sessionKey": KEY, "messages": list(messages), **extra}


def test_commit_turn_stores_a_turn_once_per_advancement_key(vault: Vault) -> None:
    """OpenClaw retries commitTurn with the same key after a failure: the
    second call changes nothing and answers duplicate."""
    turn = [user("remember that the staging cluster is called kestrel", ts=1), assistant(text("Noted."), ts=2)]
    first = openclaw_engine.commit_turn(vault, commit("turn-1", *turn), commit="none")
    assert first["status"] == "committed" and first["archived"] == 2
    assert [c["status"] for c in first["captured"]] == ["created"]
    again = openclaw_engine.commit_turn(vault, commit("turn-1", *turn), commit="none")
    assert again == {"status": "duplicate"}
    [record] = archive.read_turns(vault, SESSION)
    assert record["key"] == "turn-1" and record["seq"] == 1 and len(vault.list()) == 1
    # Another turn is another key.
    nxt = openclaw_engine.commit_turn(vault, commit("turn-2", user("thanks", ts=3), assistant(text("np"), ts=4)),
                                      commit="none")
    assert nxt["status"] == "committed" and nxt["archive_id"].endswith("#2")
    assert archive.load_state(vault, SESSION).messages_seen == 4


def test_commit_turn_after_a_crash_before_the_state_was_saved(vault: Vault) -> None:
    """The archive line is the commit point: a crash after it, before
    state.json, still answers duplicate for that key, and the next turn gets
    the next sequence number, not one already in the file."""
    openclaw_engine.commit_turn(vault, commit("k1", user("one", ts=1), assistant(text("a"), ts=2)), commit="none")
    state_file = archive.session_dir(vault, SESSION) / archive.STATE
    state_file.unlink()  # as if the process died between the append and the state's save
    assert openclaw_engine.commit_turn(vault, commit("k1", user("one", ts=1)), commit="none") == {
        "status": "duplicate"}
    second = openclaw_engine.commit_turn(vault, commit("k2", user("two", ts=3)), commit="none")
    assert [t["seq"] for t in archive.read_turns(vault, SESSION)] == [1, 2] and second["archive_id"].endswith("#2")


def test_commit_turn_of_a_heartbeat_keeps_nothing(vault: Vault) -> None:
    out = openclaw_engine.commit_turn(vault, commit("hb", user("remember that ping"), isHeartbeat=True))
    assert out["status"] == "committed" and vault.list() == [] and archive.read_turns(vault, SESSION) == []


@pytest.mark.parametrize("bad", [{"advancementKey": ""}, {"advancementKey": None}, {"messages": "x"}])
def test_bad_commit_turn_params_are_named(vault: Vault, bad: dict[str, Any]) -> None:
    with pytest.raises(Exception, match="advancementKey|messages"):
        openclaw_engine.commit_turn(vault, {**commit("k", user("x")), **bad}, commit="none")


def test_the_engine_follows_an_index_deleted_and_rebuilt_under_it(vault_root: Path) -> None:
    """Found from outside: the gateway's memex process kept a deleted index.db
    open, so memories added after `rm .memex/index.db*; memex reindex` were
    never found (as the MCP server and the watcher did)."""
    import os

    with Vault(vault_root, embedder=None) as served:
        served.add("The gateway relays through the puffin node", scope="agent:openclaw")
        [first] = serve(served, request(1, "memorySearch", query="puffin"))
        assert [h["snippet"] for h in first["result"]] == ["The gateway relays through the puffin node"]
        for name in os.listdir(vault_root / ".memex"):
            if name.startswith("index.db"):
                os.unlink(vault_root / ".memex" / name)
        with Vault(vault_root, embedder=None) as cli:
            cli.reindex()
            later = cli.add("The gateway's fallback is the gannet node", scope="agent:openclaw")
        [second] = serve(served, request(2, "memorySearch", query="gannet"))
        assert [h["citation"] for h in second["result"]] == [later.id]


def test_a_request_nested_too_deeply_is_answered_and_the_engine_goes_on(vault: Vault) -> None:
    """Found from outside: a 200 kB line of nested brackets raised RecursionError
    out of the serve loop, ending the gateway's memex process."""
    answers = serve(vault, b"[" * 100_000 + b"]" * 100_000 + b"\n",
                    b'{"id": 1, "op": "ping", "params": {}, "n": ' + b"9" * 5000 + b"}\n", request(2, "ping"))
    assert [a["ok"] for a in answers] == [False, False, True]
    assert answers[2]["id"] == 2


def test_a_request_holding_half_an_emoji_is_read(vault: Vault) -> None:
    """Found from outside: OpenClaw is a JavaScript program, so a string cut
    mid-emoji reaches memex as a lone surrogate ("\\ud83d"); memex_store then
    refused the fact ("unable to parse raw data as a unicode string")."""
    line = (b'{"id": 1, "op": "tool", "params": {"name": "memex_store", "sessionKey": "' + KEY.encode()
            + b'", "arguments": {"text": "The heron pond \\ud83d is north of the barn"}}}\n')
    [answer] = serve(vault, line)
    assert answer["ok"] is True, answer
    assert [m.body for m in vault.list()] == ["The heron pond \ufffd is north of the barn"]


def test_a_request_holding_half_an_emoji_as_raw_bytes_is_read(vault: Vault) -> None:
    """Found in review: json.loads reads bytes with "surrogatepass", so a lone
    surrogate written as its three UTF-8-style bytes (ED A0 BD, not the
    "\\ud83d" escape) came through unreplaced and memex_store refused the fact."""
    line = (b'{"id": 1, "op": "tool", "params": {"name": "memex_store", "sessionKey": "' + KEY.encode()
            + b'", "arguments": {"text": "The heron pond \xed\xa0\xbd is north of the barn"}}}\n')
    [answer] = serve(vault, line)
    assert answer["ok"] is True, answer
    assert [m.body for m in vault.list()] == ["The heron pond \ufffd is north of the barn"]
