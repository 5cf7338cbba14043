"""Pins the public Python API (docs/design.md, "Layers"): hooks, the MCP server and
users' scripts call it, so a change must be deliberate. If you change one of
these on purpose, update the pin here in the same commit and say so.

Changes: Vault.add is annotated `-> AddResult` (was `dedup.AddResult`):
the dedup module became the package memex/dedup/; the class is the same.
Vault.conn (this clone's raw SQLite connection) is gone, on purpose: code
outside memex/store/ reaches the index through the vault's stores and its
backend's operations (``vault.store``, ``vault.local_store``,
``vault.backend``; docs/design.md, "One seam"); VAULT_MEMBERS pins the rest.
"""

from __future__ import annotations

import dataclasses
import inspect
from pathlib import Path

import memex
from memex import Vault, open_vault

ALL = [
    "AddResult", "ConfigError", "Hit", "IndexStoreError", "InvalidArgument", "LockTimeout", "Memory",
    "MemexError", "MemoryFileError", "MemoryNotFound", "SchemaTooNew", "SimilarFact", "SyncReport",
    "Vault", "VaultNotFound", "find_vault_root", "init_vault", "open_vault",
]

SIGNATURES = {
    "open_vault": "(path: 'str | os.PathLike[str] | None' = None) -> 'Vault'",
    "Vault.add": (
        "(self, text: 'str', scope: 'str | None' = None, source: 'str | None' = 'user', "
        "session: 'str | None' = None, source_ref: 'str | None' = None, category: 'str | None' = None, "
        "confidence: 'float | None' = None, entities: 'Sequence[str] | None' = None, "
        "extra: 'dict[str, Any] | None' = None, supersedes: 'str | None' = None, "
        "allow_erased: 'bool' = False) -> 'AddResult'"
    ),
    "Vault.get": "(self, memory_id: 'str') -> 'Memory'",
    "Vault.search": (
        "(self, query: 'str', limit: 'int' = 10, scope: 'str | Sequence[str] | None' = None, "
        "source: 'str | None' = None, session: 'str | None' = None, include_superseded: 'bool' = False, "
        "floor: 'bool' = True) -> 'builtins.list[Hit]'"
    ),
    "Vault.reindex": "(self, full: 'bool' = False, progress: 'Progress | None' = None) -> 'SyncReport'",
}

# The members Vault defines (its __init__ sets root, paths, config and backend too).
VAULT_MEMBERS = [
    "add", "check_scope", "check_scope_filter", "close", "commit", "embed_query", "embedder", "embedder_status",
    "get", "indexer", "list", "local_store", "lock_wait", "memex_dir", "new_path", "recall", "record_access",
    "reindex", "reopen_if_replaced", "row_by_id", "scope_filter", "scope_rules", "search", "set_embedder", "store", "write_lock",
]


def test_all_is_pinned() -> None:
    assert sorted(memex.__all__) == sorted(ALL)
    for name in ALL:
        assert getattr(memex, name) is not None


def test_signatures_are_pinned() -> None:
    found = {
        "open_vault": open_vault,
        "Vault.add": Vault.add,
        "Vault.get": Vault.get,
        "Vault.search": Vault.search,
        "Vault.reindex": Vault.reindex,
    }
    assert {name: str(inspect.signature(fn)) for name, fn in found.items()} == SIGNATURES


def test_vault_members_are_pinned() -> None:
    assert sorted(n for n in vars(Vault) if not n.startswith("_")) == VAULT_MEMBERS
    assert not hasattr(Vault, "conn")  # no raw connection: the index is reached through the store


def test_result_shapes_are_pinned() -> None:
    hit_fields = [f.name for f in dataclasses.fields(memex.Hit)]
    assert hit_fields[:6] == ["id", "score", "body", "path", "scope", "source"]
    assert [f.name for f in dataclasses.fields(memex.AddResult)][:3] == ["status", "id", "path"]
    assert list(memex.SyncReport().as_dict()) == [
        "added", "updated", "removed", "moved", "unchanged", "embedded", "errors", "seconds",
    ]


def test_the_api_works_as_documented(vault_root: Path) -> None:
    for given in (vault_root, str(vault_root)):
        with open_vault(given) as vault:
            assert isinstance(vault, Vault) and vault.root == vault_root.resolve()
    with open_vault(vault_root) as vault:
        added = vault.add(
            "Prefer tabs over spaces", scope="user", source="user", session="s1", source_ref="ref#1",
            category="preference", confidence=0.9, entities=["Tabs"],
        )
        assert added.status == "created"
        memory = vault.get(added.id)
        assert isinstance(memory, memex.Memory)
        assert memory.meta["confidence"] == 0.9 and memory.meta["entities"] == ["Tabs"]
        hits = vault.search("indentation tabs", limit=10, scope=None)
        assert isinstance(hits[0], memex.Hit) and hits[0].id == added.id
        report = vault.reindex(full=False)
        assert isinstance(report, memex.SyncReport) and report.unchanged == 1


def test_a_vault_opens_from_a_string_path(vault_root: Path) -> None:
    with Vault(str(vault_root), embedder=None) as vault:
        assert vault.root == vault_root
        assert vault.add("Strings are paths too").status == "created"
