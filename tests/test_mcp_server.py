"""The MCP server, driven by the official SDK client over stdio (`memex --vault X mcp`)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters

from memex import context
from memex.agents import mcp_server
from memex.vault import Vault
from tests.hook_helpers import MEMEX

EXPECTED_TOOLS = {
    "memory_add", "memory_search", "memory_get", "memory_supersede", "memory_forget",
    "memory_handoff", "memory_archive_search", "memory_archive_expand", "memory_add_resource",
}


def _data(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content
    if result.structured_content is not None:
        data: dict[str, Any] = result.structured_content
        return data
    return json.loads(result.content[0].text)  # type: ignore[no-any-return]


def _error_text(result: Any) -> str:
    assert result.is_error
    return " ".join(getattr(c, "text", "") for c in result.content)


async def _round_trip(vault_root: Path, docs: Path, home: Path) -> dict[str, Any]:
    env = {"HOME": str(home), "MEMEX_CACHE_DIR": os.environ["MEMEX_CACHE_DIR"]}
    # Started in the project folder, as agents start MCP servers: resources
    # come from there (memex/agents/resources.py, allowed roots).
    params = StdioServerParameters(
        command=MEMEX, args=["--vault", str(vault_root), "mcp"], env=env, cwd=str(docs.parent)
    )
    seen: dict[str, Any] = {}
    async with Client(params, read_timeout_seconds=120) as client:
        tools = (await client.list_tools()).tools
        seen["tools"] = {t.name: t.description for t in tools}
        call = client.call_tool
        seen["add"] = _data(await call("memory_add", {"text": "The user deploys shop-api with blue-green releases"}))
        seen["again"] = _data(await call("memory_add", {"text": "the user deploys shop-api with blue-green releases"}))
        seen["search"] = _data(await call("memory_search", {"query": "how is shop-api deployed?"}))
        seen["get"] = _data(await call("memory_get", {"id": seen["add"]["id"]}))
        seen["supersede"] = _data(await call("memory_supersede", {
            "old_id": seen["add"]["id"], "text": "The user deploys shop-api with canary releases"}))
        seen["missing"] = _error_text(await call("memory_get", {"id": "01NOSUCHMEMORY"}))
        seen["resource"] = _data(await call("memory_add_resource", {"path": str(docs)}))
        seen["resource_again"] = _data(await call("memory_add_resource", {"path": str(docs)}))
        seen["resource_search"] = _data(await call("memory_search", {
            "query": "rotate the signing keys", "scope": ["resources"]}))
        seen["handoff"] = _data(await call("memory_handoff", {"session": "s-1"}))
        seen["archive"] = _data(await call("memory_archive_search", {"query": "flamingo", "session": "s-1"}))
        if seen["archive"]["hits"]:
            seen["expand"] = _data(await call("memory_archive_expand", {
                "archive_id": seen["archive"]["hits"][0]["archive_id"]}))
        seen["forget_vague"] = _data(await call("memory_forget", {"query": "releases"}))
        seen["forget_none"] = _error_text(await call("memory_forget", {}))
    return seen


@pytest.mark.model
def test_mcp_round_trip_over_stdio(vault_root: Path, tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "ops.md").write_text(
        "# Operations\n\nRunbook for the shop-api service.\n\n"
        "## Keys\n\nRotate the signing keys every 90 days with `make rotate-keys`.\n\n"
        "## Backups\n\nNightly backups go to the cold bucket and are kept 30 days.\n",
        encoding="utf-8",
    )
    (docs / "notes.txt").write_text("not markdown, not imported", encoding="utf-8")
    with Vault(vault_root) as vault:  # an archived turn for the archive tools
        context.after_turn(vault, "s-1", [{"role": "user", "content": "my cat is called flamingo"}], 0)
    home = tmp_path / "home"
    home.mkdir()
    seen = anyio.run(_round_trip, vault_root, docs, home)

    assert set(seen["tools"]) == EXPECTED_TOOLS
    assert "supersede" in seen["tools"]["memory_add"] and "<relevant-memories>" in seen["tools"]["memory_add"]
    assert seen["add"]["status"] == "created"
    assert seen["again"]["status"] == "duplicate" and seen["again"]["existing_id"] == seen["add"]["id"]
    assert seen["search"]["hits"][0]["id"] == seen["add"]["id"]
    assert seen["get"]["source"] == "tool" and "blue-green" in seen["get"]["body"]
    assert seen["supersede"]["superseded"] == seen["add"]["id"] and seen["supersede"]["status"] == "created"
    assert "01NOSUCHMEMORY" in seen["missing"]
    assert len(seen["resource"]["created"]) == 3 and seen["resource"]["files"] == 1
    assert seen["resource_again"]["created"] == [] and len(seen["resource_again"]["already_stored"]) == 3
    top = seen["resource_search"]["hits"][0]
    assert top["scope"] == "resources" and "90 days" in top["body"] and top["body"].startswith("Operations › Keys")
    assert seen["handoff"]["session"] == "s-1"
    assert seen["archive"]["hits"], "the archived turn is found by keyword"
    assert any("flamingo" in json.dumps(m) for m in seen["expand"]["messages"])
    assert seen["forget_vague"]["erased"] == [] and seen["forget_vague"]["candidates"]
    assert "exactly one of id or query" in seen["forget_none"]
    with Vault(vault_root) as vault:  # nothing the vague forget touched is gone
        assert vault.get(seen["supersede"]["id"]).body.strip().endswith("canary releases")


def test_forget_by_query_erases_only_a_single_confident_match(model_vault: Vault) -> None:
    if not hasattr(model_vault, "erase"):
        pytest.skip("Vault.erase (issue 5) is not in this tree yet")
    tools = mcp_server.Tools(model_vault)
    keep = model_vault.add("The user's favourite editor is Helix")
    gone = model_vault.add("The wifi password at the cabin is hunter2-cabin")
    answer = tools.memory_forget(query="the wifi password at the cabin is hunter2-cabin", reason="test")
    assert answer["erased"] == [gone.id]
    assert [h.id for h in model_vault.list()] == [keep.id]


def test_tools_default_to_the_session_a_hook_saw(vault: Vault) -> None:
    from memex.agents import hook_io

    tools = mcp_server.Tools(vault)
    with pytest.raises(Exception, match="session"):
        tools.memory_handoff()
    hook_io.remember_session(vault, "claude-code", "abc-123", "/tmp")
    assert tools.memory_handoff()["session"] == "abc-123"
