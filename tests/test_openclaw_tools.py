"""memex's agent tools in OpenClaw and the memory slot's search, on the
Python side (memex/agents/openclaw_tools.py): the MCP tools' behaviour under
the gateway's scope rules. Real turns in which OpenClaw's model calls them:
tests/test_openclaw_e2e.py."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from memex.agents import openclaw_engine, openclaw_tools
from memex.context import archive
from memex.errors import InvalidArgument, MemexError
from memex.vault import Vault
from tests.hook_helpers import MEMEX, set_config
from tests.test_openclaw_plugin import KEY, SESSION, assistant, text, user
from tests.test_openclaw_plugin import tool_call as tool_call_block


def tool(vault: Vault, name: str, owner: bool | None = None, key: str = KEY, **arguments: Any) -> dict[str, Any]:
    params: dict[str, Any] = {"name": name, "arguments": arguments, "sessionKey": key, "sessionId": "run-1"}
    if owner is not None:
        params["senderIsOwner"] = owner
    return openclaw_tools.call_tool(vault, params)


def test_store_goes_to_the_gateways_scope_and_passes_dedup(vault: Vault) -> None:
    first = tool(vault, "memex_store", text="The staging database is called heron.", category="fact")
    assert first["status"] == "created"
    memory = vault.get(first["id"])
    assert memory.record["scope"] == "agent:openclaw" and memory.record["source"] == "tool"
    assert memory.record["session"] == SESSION
    again = tool(vault, "memex_store", text="The staging database is called heron.")
    assert again["status"] == "duplicate" and again["existing_id"] == first["id"]
    # The model cannot choose a scope: a gateway stranger must not write the user's memories.
    with pytest.raises(InvalidArgument, match="unknown argument 'scope'"):
        tool(vault, "memex_store", text="I am the admin now.", scope="user")


def test_arguments_are_checked_and_refused_in_one_line(vault: Vault) -> None:
    with pytest.raises(InvalidArgument, match=r"memex_search: limit: input should be less than or equal to 50"):
        tool(vault, "memex_search", query="x", limit=500)
    with pytest.raises(InvalidArgument, match="query is required"):
        tool(vault, "memex_recall")
    with pytest.raises(InvalidArgument, match="unknown tool 'memory_add'"):
        openclaw_tools.call_tool(vault, {"name": "memory_add", "arguments": {}})


def test_reads_are_limited_to_the_scopes_the_gateway_recalls(vault: Vault) -> None:
    private = vault.add("The user's bank PIN reminder lives in the blue notebook.", scope="user")
    shared = vault.add("The bot answers questions about the blue notebook product line.", scope="agent:openclaw")
    found = tool(vault, "memex_search", query="blue notebook")
    assert [h["id"] for h in found["hits"]] == [shared.id] and "bank PIN" not in found["memories"]
    with pytest.raises(MemexError, match="no memory with id"):
        tool(vault, "memex_get", id=private.id)
    with pytest.raises(MemexError, match="no memory with id"):
        tool(vault, "memex_supersede", old_id=private.id, text="Changed.")
    with pytest.raises(MemexError, match="no memory with id"):
        tool(vault, "memex_forget", id=private.id)
    assert vault.get(private.id).body.startswith("The user's bank PIN")
    assert tool(vault, "memex_get", id=shared.id)["id"] == shared.id
    # [openclaw] recall_scopes widens what the gateway reads (a gateway only its owner talks to).
    set_config(vault.root, "openclaw", 'recall_scopes = ["user"]')
    widened = Vault(vault.root, embedder=vault.embedder)
    try:
        hits = tool(widened, "memex_search", query="blue notebook")["hits"]
        assert {h["id"] for h in hits} == {private.id, shared.id}
    finally:
        widened.close()


def test_recall_answers_as_the_engine_injects(vault: Vault) -> None:
    stored = vault.add("Deploys to production happen on Tuesdays after the standup.", scope="agent:openclaw")
    answer = tool(vault, "memex_recall", query="When do production deploys happen?")
    assert answer["ids"] == [stored.id]
    assert answer["memories"].startswith("<relevant-memories>") and "Tuesdays" in answer["memories"]
    nothing = tool(vault, "memex_recall", query="zebra migration patterns in Kenya")
    assert nothing["ids"] == [] and "memex_search" in nothing["note"]


def test_forget_is_for_the_owner_only_when_openclaw_knows(vault: Vault) -> None:
    stored = vault.add("The wifi password rotates monthly.", scope="agent:openclaw")
    with pytest.raises(InvalidArgument, match="only the gateway's owner"):
        tool(vault, "memex_forget", owner=False, id=stored.id)
    assert vault.get(stored.id)
    assert tool(vault, "memex_forget", owner=True, id=stored.id)["erased"] == [stored.id]


def test_forget_restores_or_erases_what_the_memory_replaced(vault: Vault) -> None:
    from memex.consolidation.supersede import supersede

    old = vault.add("The wifi password rotates monthly.", scope="agent:openclaw").id
    new = supersede(vault, old, "The wifi password rotates weekly.").result.id
    answer = tool(vault, "memex_forget", owner=True, id=new)
    assert answer["result"]["restored"] == [old] and [m.id for m in vault.list()] == [old]
    newer = supersede(vault, old, "The wifi password rotates daily.").result.id
    answer = tool(vault, "memex_forget", owner=True, id=newer, with_superseded=True)
    assert sorted(answer["erased"]) == sorted([old, newer])
    assert answer["result"]["superseded"] == [old] and vault.list(include_superseded=True) == []


def test_forget_by_query_erases_only_a_clear_match(vault: Vault) -> None:
    vault.add("The release train leaves every second Wednesday.", scope="agent:openclaw")
    vault.add("The release notes go to the changelog channel.", scope="agent:openclaw")
    vague = tool(vault, "memex_forget", query="release")
    assert vague["erased"] == [] and len(vague["candidates"]) == 2
    assert len(vault.list()) == 2


def _remembered_in_a_turn(vault: Vault) -> str:
    """A memory captured from a committed OpenClaw turn: the turn's archive quotes it."""
    turn = [user("remember that the on-call phone is in drawer 3", ts=1), assistant(text("Noted."), ts=2)]
    out = openclaw_engine.commit_turn(vault, {"advancementKey": "t1", "sessionKey": KEY, "sessionId": "run-1",
                                              "messages": turn}, commit="none")
    [captured] = out["captured"]
    return str(captured["id"])


def _files_holding(root: Path, needle: bytes) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and needle in p.read_bytes())


def test_forget_erases_every_trace_as_memex_erase_does(fake_embedder: Any, tmp_path: Path) -> None:
    """The tool and `memex erase` on the same vault state: the same counts,
    and the text is in no file of the vault afterwards (memory file, index,
    vectors, the archived turn that quoted it)."""
    needle = b"drawer 3"
    vault_root, other_root = tmp_path / "vault", tmp_path / "twin"
    for root in (vault_root, other_root):  # twins, made the same way
        subprocess.run([MEMEX, "init", str(root)], check=True, capture_output=True)
        set_config(root, "embedding", 'model = "none"')
    with Vault(vault_root, embedder=fake_embedder) as vault:
        memory_id = _remembered_in_a_turn(vault)
        assert _files_holding(vault_root, needle), "the text is on disk before the erase"
        answer = tool(vault, "memex_forget", id=memory_id, reason="asked by the user")
    with Vault(other_root, embedder=fake_embedder) as twin:
        twin_id = _remembered_in_a_turn(twin)
    cli = subprocess.run([MEMEX, "--vault", str(other_root), "erase", twin_id, "--reason", "asked by the user",
                          "--json"], capture_output=True, text=True, timeout=300)
    assert cli.returncode == 0, cli.stderr
    by_cli = json.loads(cli.stdout)
    assert answer["erased"] == [memory_id]
    by_tool = answer["result"]
    # Same session key in both vaults, so even the archive paths match.
    assert {k: v for k, v in by_tool.items() if k != "erased"} == {k: v for k, v in by_cli.items() if k != "erased"}
    assert any(a.endswith("turns.jsonl") for a in by_tool["archives"]) and by_tool["memories"] == 1
    assert _files_holding(vault_root, needle) == [] and _files_holding(other_root, needle) == []
    log = (vault_root / ".memex" / "erasure.log").read_text(encoding="utf-8")
    assert memory_id in log and "drawer" not in log


def test_archive_tools_read_only_this_conversation(vault: Vault) -> None:
    openclaw_engine.commit_turn(vault, {"advancementKey": "a", "sessionKey": KEY, "messages": [
        user("the canary host is gull-7", ts=1), assistant(text("ok"), ts=2)]}, commit="none")
    other = "agent:main:telegram:dm:99"
    openclaw_engine.commit_turn(vault, {"advancementKey": "b", "sessionKey": other, "messages": [
        user("the canary host is kite-2", ts=1), assistant(text("ok"), ts=2)]}, commit="none")
    [hit] = tool(vault, "memex_archive_search", query="canary host")["hits"]
    assert "gull-7" in hit["text"]
    expanded = tool(vault, "memex_archive_expand", archive_id=hit["archive_id"])
    assert expanded["total"] == 2 and "gull-7" in json.dumps(expanded["messages"])
    foreign = f"{archive.folder_name(openclaw_engine.memex_session({'sessionKey': other}))}#1"
    with pytest.raises(InvalidArgument, match="not a turn of this conversation"):
        tool(vault, "memex_archive_expand", archive_id=foreign)
    with pytest.raises(InvalidArgument, match="not a turn of this conversation"):
        tool(vault, "memex_archive_expand", archive_id=f"sessions/{foreign.replace('#', '/turns.jsonl#')}")


def test_add_resource_reads_the_vault_and_roots_not_the_working_folder(
        vault: Vault, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    inside = vault.root / "docs" / "runbook.md"
    inside.parent.mkdir()
    inside.write_text("# Runbook\n\n## Restart\n\nRestart the queue workers before the API nodes.\n",
                      encoding="utf-8")
    answer = tool(vault, "memex_add_resource", path=str(inside))
    [created] = answer["created"]
    assert answer["scope"] == "agent:openclaw" and vault.get(created).record["scope"] == "agent:openclaw"
    workdir = tmp_path / "gateway-cwd"
    workdir.mkdir()
    (workdir / "notes.md").write_text("# Secret\n\nThe gateway host's private notes, not for strangers.\n",
                                      encoding="utf-8")
    monkeypatch.chdir(workdir)
    with pytest.raises(InvalidArgument, match="outside the folders"):
        tool(vault, "memex_add_resource", path="notes.md")


def test_memory_slot_search_and_read(vault: Vault) -> None:
    """OpenClaw's MemorySearchManager (the gateway's memory.search), answered by memex."""
    shown = vault.add("Invoices are archived for ten years in the cold bucket.", scope="agent:openclaw")
    hidden = vault.add("Invoices for the user's flat go to their personal mailbox.", scope="user")
    results = openclaw_tools.memory_search(vault, {"query": "invoices archived", "maxResults": 5})
    assert [r["citation"] for r in results] == [shown.id]
    [hit] = results
    assert hit["source"] == "memory" and hit["path"] == shown.path and hit["startLine"] == 1
    assert "ten years" in hit["snippet"] and 0 < hit["score"] <= 1
    read = openclaw_tools.memory_read(vault, {"relPath": hit["path"]})
    assert read["status"] == "ok" and "cold bucket" in read["text"]
    for path in (hidden.path, "memories/../.memex/config.toml", "MEMORY.md"):
        assert openclaw_tools.memory_read(vault, {"relPath": path})["status"] == "not_found"
    with pytest.raises(InvalidArgument, match="query"):
        openclaw_tools.memory_search(vault, {"query": " "})


def _tool_search_result(call_id: str, tool: str, answer: dict[str, Any]) -> dict[str, Any]:
    """A toolResult as OpenClaw records a call made through Tool Search's tool_call."""
    wrapped = {"tool": {"id": f"openclaw:memex:{tool}", "name": tool, "source": "openclaw"},
               "result": {"content": [{"type": "text", "text": json.dumps(answer)}], "details": {"memex": answer}}}
    return {"role": "toolResult", "toolCallId": call_id, "toolName": "tool_call",
            "content": [text(json.dumps(wrapped, indent=2))], "isError": False, "timestamp": 3}


def test_memex_answers_are_not_archived_so_forget_leaves_no_copy(vault: Vault) -> None:
    """A turn in which the model recalled a memory through the tool: the
    answer (memory text in JSON in JSON) is not copied into the archive, so
    forgetting the memory leaves its text in no file (regression: the
    archive kept it, escaped twice, where erase did not recognise it)."""
    stored = tool(vault, "memex_store", text="The staging database is called heron.")
    answer = tool(vault, "memex_recall", query="staging database name")
    assert "called heron" in answer["memories"]
    turn = [user("what is staging called?", ts=1),
            {**assistant(tool_call_block("c1", "tool_call", {"id": "memex_recall", "args": {"query": "staging"}}),
                         ts=2)},
            _tool_search_result("c1", "memex_recall", answer),
            {"role": "toolResult", "toolCallId": "c2", "toolName": "memex_search", "isError": False, "timestamp": 4,
             "content": [text(json.dumps(answer))]},
            {"role": "toolResult", "toolCallId": "c3", "toolName": "read", "isError": False, "timestamp": 5,
             "content": [text("deploy.yaml: strategy blue-green")]},
            assistant(text("Found it."), ts=6)]
    openclaw_engine.commit_turn(vault, {"advancementKey": "k", "sessionKey": KEY, "messages": turn}, commit="none")
    [record] = archive.read_turns(vault, SESSION)
    results = [b["content"] for m in record["messages"] for b in m["content"] if b.get("type") == "tool_result"]
    assert results == ["[memex_recall: memex's answer, read from the vault; not archived]",
                       "[memex_search: memex's answer, read from the vault; not archived]",
                       "deploy.yaml: strategy blue-green"]
    assert _files_holding(vault.root, b"staging database is called heron")  # the memory file
    tool(vault, "memex_forget", id=stored["id"])
    assert _files_holding(vault.root, b"staging database is called heron") == []
