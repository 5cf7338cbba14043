"""Erase by id: what is purged, the answer, the audit log, the erased list, the CLI."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner

from memex.cli import app
from memex.errors import IndexStoreError, InvalidArgument, MemoryNotFound
from memex.vault import Vault
from memex.erase.steps import erase
from memex.index.graph import list_entities

# Run on the SQLite and on the PostgreSQL index (docs/postgres.md).
pytestmark = pytest.mark.both_backends

LONG = " ".join(f"Sentence {i} about the quarterly budget review and its owners." for i in range(60))  # three windows of the model


def _row_counts(vault: Vault, memory_id: str) -> dict[str, int]:
    """What the index holds, read through the store the vault answers from (the
    shared one on PostgreSQL), and this clone's embedding cache (where adds write)."""
    store = vault.store
    stats = store.stats()
    return {
        "memories": sum(stats.by_status.values()), "chunks": stats.chunks, "entities": stats.entities,
        "embedding_cache": vault.local_store.stats().cached_embeddings,
        "usage": store.usage_of(memory_id)[0],
        "relations": sum(e.relations for e in store.entity_counts()),
        "memory_vec": len(store.all_memory_vectors()), "chunk_vec": len(store.all_chunk_vectors()),
    }


def test_erase_by_id_purges_every_derived_row(vault: Vault) -> None:
    keep = vault.add("Backups of SQLite run nightly", entities=["SQLite"])
    gone = vault.add(
        LONG, entities=["SQLite", "Budget"],
        extra={"relations": [["Budget", "reviewed_by", "Finance"]]},
    )
    vault.recall("quarterly budget review")
    before = _row_counts(vault, gone.id)
    assert before["chunks"] >= 2 and before["usage"] >= 1
    path = vault.root / vault.get(gone.id).path

    result = erase(vault, gone.id, reason="asked by the user")

    assert not path.exists()
    after = _row_counts(vault, gone.id)
    data = result.as_dict()
    assert data["erased"] == [gone.id] and data["derived"] == []
    assert data["files_deleted"] == 1
    assert (data["memories"], data["fts_rows"], data["vectors"]) == (1, 1, 1)
    assert data["chunks"] == data["chunk_vectors"] == before["chunks"] - after["chunks"] >= 2
    assert data["cache_entries"] == before["embedding_cache"] - after["embedding_cache"] >= 1 + data["chunks"]
    # Budget and Finance had only this memory; SQLite is shared and stays.
    assert data["entities"] == 2 and data["relations"] == 1
    assert {e.name for e in list_entities(vault.store)} == {"SQLite"}
    assert after["relations"] == 0 and after["memories"] == 1 and after["usage"] == 0
    assert after["memory_vec"] == 1 and after["chunk_vec"] == after["chunks"]
    assert data["git_history"] == "not_a_repository"
    with pytest.raises(MemoryNotFound):
        vault.get(gone.id)
    assert [h.id for h in vault.search("quarterly budget")] in ([], [keep.id])
    assert [h.id for h in vault.list()] == [keep.id]


def test_erased_body_is_refused_until_allowed(vault: Vault) -> None:
    first = vault.add("My locker code is 4417", scope="user")
    erase(vault, first.id, reason="privacy")
    # Same body as dedup sees it: other case, other whitespace, another scope, a provenance prefix.
    for text, scope in (("my LOCKER  code is 4417", "user"), ("[hm src:keyword] My locker code is 4417", "project:x")):
        again = vault.add(text, scope=scope)
        assert (again.status, again.method, again.id) == ("refused", "erased", "")
    assert vault.list() == []
    assert vault.add("My locker code is 4418").status == "created"  # a different text is fine
    allowed = vault.add("My locker code is 4417", allow_erased=True)
    assert allowed.status == "created"


def test_erased_list_survives_index_deletion_and_holds_no_text(vault_root: Path, vault: Vault) -> None:
    first = vault.add("The alarm PIN is ninety nine")
    erase(vault, first.id, reason="privacy")
    vault.close()
    for name in os.listdir(vault_root / ".memex"):
        if name.startswith("index.db"):
            os.remove(vault_root / ".memex" / name)
    fresh = Vault(vault_root, embedder=vault.embedder)
    try:
        assert fresh.add("The alarm PIN is ninety nine").method == "erased"
    finally:
        fresh.close()
    key = vault_root / ".memex" / "erase.key"
    listed = (vault_root / ".memex" / "erased.txt").read_text()
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    # Two digests: the body's and the erased memory's id (an older version restored by git has the id).
    assert "alarm" not in listed.lower() and first.id.lower() not in listed.lower() and len(listed.split()) == 2
    # Without the key the list cannot be checked, and memex says so instead of letting text back in.
    key.unlink()
    with Vault(vault_root, embedder=vault.embedder) as keyless:
        with pytest.raises(IndexStoreError, match="erase.key"):
            keyless.add("The alarm PIN is ninety nine")


def test_keyed_hash_differs_between_vaults(tmp_path: Path) -> None:
    from memex.erased import erased_list

    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    erased_list.remember(a, ["same text"])
    erased_list.remember(b, ["same text"])
    assert (a / "erased.txt").read_text() != (b / "erased.txt").read_text()
    assert erased_list.remember(a, ["Same   TEXT"]) == 0  # already listed, not appended twice
    assert erased_list.is_erased(a, "same text") and not erased_list.is_erased(a, "other text")


def test_audit_log_is_append_only_json_without_text(vault: Vault) -> None:
    one = vault.add("Salary negotiation notes for Oskarsson")
    two = vault.add("Passport number ends in 5521")
    erase(vault, one.id, reason="GDPR request 17")
    erase(vault, two.id, reason="user asked")
    raw = (vault.memex_dir / "erasure.log").read_text(encoding="utf-8")
    lines = [json.loads(line) for line in raw.splitlines()]
    assert [e["phase"] for e in lines] == ["files_deleted", "complete"] * 2
    assert [e["reason"] for e in lines] == ["GDPR request 17"] * 2 + ["user asked"] * 2
    assert lines[1]["erased"] == [one.id] and lines[3]["erased"] == [two.id]
    assert lines[1]["counts"]["memories"] == 1 and lines[1]["counts"]["fts_rows"] == 1
    assert all("time" in e for e in lines)
    for word in ("salary", "oskarsson", "passport", "5521", "negotiation"):
        assert word not in raw.lower()


def test_bad_arguments_are_named(vault: Vault) -> None:
    mem = vault.add("Something to keep")
    with pytest.raises(InvalidArgument, match="reason"):
        erase(vault, mem.id, reason="  ")
    with pytest.raises(InvalidArgument, match="either a memory id or a subject"):
        erase(vault, mem.id, reason="x", session="s1")
    with pytest.raises(InvalidArgument, match="give a memory id"):
        erase(vault, None, reason="x")
    with pytest.raises(InvalidArgument, match="--source"):
        erase(vault, None, reason="x", source="claude-code")
    with pytest.raises(MemoryNotFound):
        erase(vault, "NOPE", reason="x")
    assert [h.id for h in vault.list()] == [mem.id]
    assert not (vault.memex_dir / "erasure.log").exists()


def test_cli_erase_json_and_add_allow_erased(vault: Vault) -> None:
    main = app()  # the memex group with every command, as users run it
    runner = CliRunner()
    root = str(vault.root)
    created = json.loads(runner.invoke(main, ["--vault", root, "add", "Gate code 2231 for the depot", "--json"]).output)
    out = runner.invoke(main, ["--vault", root, "erase", created["id"], "--reason", "test", "--json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    for key in ("files_deleted", "memories", "fts_rows", "vectors", "chunks", "chunk_vectors",
                "cache_entries", "entities", "relations", "derived", "git_history"):
        assert key in data
    assert data["memories"] == 1 and data["files_deleted"] == 1
    out = runner.invoke(main, ["--vault", root, "add", "Gate code 2231 for the depot"])
    assert out.exit_code == 0 and "refused (erased)" in out.output
    out = runner.invoke(main, ["--vault", root, "add", "Gate code 2231 for the depot", "--allow-erased", "--json"])
    assert json.loads(out.output)["status"] == "created"
    out = runner.invoke(main, ["--vault", root, "erase", "NOPE", "--reason", "x"])
    assert out.exit_code == 1 and "no memory with id 'NOPE'" in out.output
    out = runner.invoke(main, ["--vault", root, "erase", created["id"]])
    assert out.exit_code == 2 and "--reason" in out.output
