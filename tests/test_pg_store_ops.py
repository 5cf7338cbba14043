"""PgStore against SqliteStore, operation by operation: the same indexer
(memex/index/indexer.py) syncs the same files through each store, and every
read of :class:`memex.store.protocol.IndexStore` must then answer alike
(rowids differ between backends, so rows are compared by memory id)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memex.embedding import embed
from memex.index.indexer import Indexer
from memex.store import IndexStore, SqliteStore
from memex.store import Filters
from memex.store.postgres.schema import connect
from memex.store.postgres.store import PgStore
from memex.vault import Vault, init_vault
from tests.fakes import HashEmbedder

LONG = " ".join(
    f"Paragraph {i}: the ingestion worker batches {i * 7} events, compresses them with zstd level {i % 5}, "
    f"and ships them to bucket shard {i % 3} before the retention job runs."
    for i in range(40)
)

FILES = {
    "user/m1.md": "---\nid: M1\nscope: user\nsession: s1\nsource: tool\ncreated: 2026-01-01T10:00:00Z\n"
                  "entities: [Alpha, Beta]\nrelations: [[Alpha, uses, Beta]]\n---\n"
                  "Alpha uses Beta to render the daily billing report.\n",
    "project/x/m2.md": "---\nid: M2\nscope: project:x\nsession: s1\nsource: user\nsource_ref: /docs/a.md#sec\n"
                       f"created: 2026-01-02T10:00:00Z\nentities: [Alpha]\n---\n{LONG}\n",
    "user/m3.md": "---\nid: M3\nscope: user\nsession: s2\nsource: keyword\ncreated: 2026-01-03T10:00:00Z\n"
                  "superseded_by: M4\n---\nThe staging database listens on port 5432.\n",
    "user/m4.md": "---\nid: M4\nscope: user\nsession: s2\nsource: tool\ncreated: 2026-01-04T10:00:00Z\n"
                  "supersedes: M3\nconfidence: 0.95\ncategory: fact\n---\nThe staging database listens on port 5433.\n",
    "user/m5.md": "---\nid: M5\nscope: user\nsource_ref: /docs/a.md\ncreated: 2026-01-05T10:00:00Z\n---\n"
                  "Backups of the ledger run every night at two.\n",
    "user/m6.md": "---\nid: M6\nscope: user\ncreated: 2026-01-06T10:00:00Z\n---\n"
                  "Backups of the ledger run every night at two.\n",
    "user/m7.md": "---\nid: M7\nscope: user\ncreated: 2026-01-07T10:00:00Z\nentities: [Beta, Gamma]\n---\n"
                  "数据库备份每天晚上运行, and Gamma watches Beta.\n",
    "user/broken.md": "---\nid: [not, a, string\n---\nbody\n",
}


@pytest.fixture
def stores(tmp_path: Path, pg_url: str) -> Iterator[tuple[Vault, IndexStore, IndexStore, Indexer, Indexer]]:
    root = init_vault(tmp_path / "vault", git=False)
    for rel, text in FILES.items():
        path = root / "memories" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    pg = connect(pg_url)
    with Vault(root, embedder=HashEmbedder()) as vault:
        sqlite_store = vault.local_store
        pg_store = PgStore(pg)
        local = Indexer(root, vault.local_store, vault.config, vault.embedder)
        shared = Indexer(root, pg_store, vault.config, vault.embedder)
        local.sync()
        shared.sync()
        yield vault, sqlite_store, pg_store, local, shared
    pg.close()


def _ids(store: IndexStore) -> dict[int, str]:
    return {r.rowid: r.id for r in store.list_rows(Filters(include_superseded=True))}


def _by_id(store: IndexStore, value: Any) -> Any:
    """``value`` with every rowid of this store named by its memory id instead."""
    ids = _ids(store)
    if isinstance(value, dict):
        return {ids.get(k, k) if isinstance(k, int) else k: _by_id(store, v) for k, v in value.items()}
    if isinstance(value, (list, set)):
        out = [_by_id(store, v) for v in value]
        return out if isinstance(value, list) else set(out)
    if isinstance(value, tuple) and hasattr(value, "_fields") and "rowid" in value._fields:
        return value._replace(rowid=ids[value.rowid])
    return value


def _rowids(store: IndexStore, *ids: str) -> list[int]:
    found = store.rowids_by_ids(list(ids))
    return [found[i] for i in ids]


def _approx(a: dict[str, float]) -> dict[str, float]:
    return {k: round(v, 4) for k, v in a.items()}


def both(s: IndexStore, p: IndexStore, op: str, *args: Any) -> None:
    assert _by_id(s, getattr(s, op)(*args)) == _by_id(p, getattr(p, op)(*args)), op


def test_every_read_answers_alike(stores: tuple[Vault, IndexStore, IndexStore, Indexer, Indexer]) -> None:
    vault, s, p, _, _ = stores
    assert _ids(s) and sorted(_ids(s).values()) == sorted(_ids(p).values())
    for f in (Filters(), Filters(include_superseded=True), Filters(("user",)), Filters(session="s1"),
              Filters(source="tool", include_superseded=True), Filters(("project:x", "user"), session="s2")):
        both(s, p, "list_rows", f)
        both(s, p, "list_rows", f, 2)
        assert set(_by_id(s, s.all_passing(f))) == set(_by_id(p, p.all_passing(f)))
        assert _by_id(s, s.passing(_rowids(s, "M1", "M3"), f)) == _by_id(p, p.passing(_rowids(p, "M1", "M3"), f))
    for memory_id in ("M1", "M2", "M3", "nope"):
        for op in ("row_by_id", "rowid_path_of", "decay_row", "usage_of", "targets_by_id", "superseded_by", "has_id"):
            both(s, p, op, memory_id)
    assert _by_id(s, s.rows_by_rowids(_rowids(s, "M1", "M4"))) == _by_id(p, p.rows_by_rowids(_rowids(p, "M1", "M4")))
    for column in ("body", "created"):
        assert _by_id(s, s.text_column(column, _rowids(s, "M2", "M7"))) == _by_id(
            p, p.text_column(column, _rowids(p, "M2", "M7")))
    with pytest.raises(ValueError):
        p.text_column("path", [1])
    for op in ("path_scopes", "sync_rows", "index_errors", "duplicate_keys", "known_paths", "is_empty",
               "entity_counts", "active_decay_rows", "has_vectors", "orphan_vectors"):
        got_s, got_p = _by_id(s, getattr(s, op)()), _by_id(p, getattr(p, op)())
        if op == "sync_rows":  # racy: whether each sync read the file within its mtime's second
            got_s = {k: v._replace(racy=0) for k, v in got_s.items()}
            got_p = {k: v._replace(racy=0) for k, v in got_p.items()}
        if op in ("known_paths", "active_decay_rows"):
            got_s, got_p = sorted(got_s), sorted(got_p)
        assert got_s == got_p, op
    assert sorted(_by_id(s, s.bodies())) == sorted(_by_id(p, p.bodies()))
    assert set(s.index_errors()) == {"memories/user/broken.md"} and len(s.duplicate_keys()) == 1
    both(s, p, "embed_state", ["M1", "M2", "nope"])
    both(s, p, "scope_in_use", "project:x")
    both(s, p, "scope_in_use", "project:y")
    both(s, p, "active_with_hash", "user", _hash_of(vault, "M5"))
    both(s, p, "exact_duplicate", "user", _hash_of(vault, "M5"), "M5")
    both(s, p, "exact_duplicate", "user", _hash_of(vault, "M3"), None)  # superseded: not a duplicate
    for args in (("s1", ["tool", "user"], "2026-01-01T00:00:00Z", 10, True),
                 ("s2", ["keyword", "tool"], "2026-01-03T12:00:00Z", 10, False), ("s1", [], "", 5, True)):
        both(s, p, "session_rows", *args)
    both(s, p, "session_rowids", "s1", "user", 5)
    for scope in (None, "user"):
        both(s, p, "session_items", "s1", scope)
        both(s, p, "active_sessions", scope)
        assert sorted(_by_id(s, s.active_decay_rows(scope))) == sorted(_by_id(p, p.active_decay_rows(scope)))
    both(s, p, "targets_of_subject", None, "/docs/a.md", None)
    both(s, p, "targets_of_subject", "tool", None, "s2")
    both(s, p, "targets_from_ref", "/docs/a.md")
    both(s, p, "supersede_children", ["M3"])
    for word in ("LEDGER", "port 543", "备份", None):
        assert sorted(_by_id(s, s.targets_containing(word))) == sorted(_by_id(p, p.targets_containing(word)))
    for path in ("memories/user/m1.md", "memories/user/nope.md"):
        both(s, p, "has_path", path)
        both(s, p, "sync_row_at", path)
    stats_s, stats_p = s.stats(), p.stats()
    assert stats_s._replace(cached_embeddings=0) == stats_p._replace(cached_embeddings=0)
    for name in ("alpha", "beta", "nobody"):
        found_s, found_p = s.find_entity(name), p.find_entity(name)
        assert (found_s is None) == (found_p is None)
        if found_s is not None and found_p is not None:
            assert found_s.name == found_p.name
            for op in ("entity_memories", "entity_relations", "neighbours"):
                assert getattr(s, op)(found_s.rowid) == getattr(p, op)(found_p.rowid), op
    assert p.schema_version() >= 1 and p.get_meta("vector_model") == s.get_meta("vector_model")


def _hash_of(vault: Vault, memory_id: str) -> str:
    row = vault.backend.conn.execute("SELECT body_hash FROM memories WHERE id = ?", (memory_id,)).fetchone()
    return str(row[0])


def test_search_reads_answer_alike(stores: tuple[Vault, IndexStore, IndexStore, Indexer, Indexer]) -> None:
    vault, s, p, _, _ = stores
    for query in ("staging database port", "ledger backups night", "ingestion worker zstd", "数据库备份", "the"):
        # k over all 7 (ties at a cut may fall either way; "the" scores every memory alike)
        top_s, top_p = s.fts_top(query, 10), p.fts_top(query, 10)
        assert {_ids(s)[r]: round(x, 5) for r, x in top_s} == {_ids(p)[r]: round(x, 5) for r, x in top_p}, query
        assert [x for _, x in top_p] == sorted((x for _, x in top_p), reverse=True)
        for f in (Filters(), Filters(("user",), include_superseded=True)):
            assert _approx(_by_id(s, s.fts_top_passing(query, f, 10))) == _approx(_by_id(p, p.fts_top_passing(query, f, 10)))
        for exclude in (None, "M6"):
            assert sorted(_by_id(s, s.fts_neighbours(query, "user", exclude, 10))) == sorted(
                _by_id(p, p.fts_neighbours(query, "user", exclude, 10)))
        assert vault.embedder is not None
        blob = embed.to_blob(vault.embedder.embed([query])[0])  # k over all 7: ties at a cut may fall either way
        assert _approx(_by_id(s, s.knn(blob, 10))) == _approx(_by_id(p, p.knn(blob, 10)))
        assert _approx(_by_id(s, s.knn_bodies(blob, 10))) == _approx(_by_id(p, p.knn_bodies(blob, 10)))
        for f in (Filters(("user",)), Filters(session="s1", include_superseded=True)):
            assert _approx(_by_id(s, s.scan(blob, f, 10))) == _approx(_by_id(p, p.scan(blob, f, 10)))
    wanted = ("M1", "M3", "M5")
    assert sorted(_by_id(s, s.neighbours_among(_rowids(s, *wanted), "user", "M5"))) == sorted(
        _by_id(p, p.neighbours_among(_rowids(p, *wanted), "user", "M5")))
    for store in (s, p):  # body and chunk vectors of M2 (chunked) and M1, named by memory id
        ids = _ids(store)
        found = sorted((ids[r.rowid], r.blob) for r in store.vectors_of(_rowids(store, "M1", "M2")))
        owned = sorted((ids[r.owner], r.blob) for r in store.memory_vectors_of(_rowids(store, "M1", "M2")))
        if store is s:
            want_found, want_owned = found, owned
    assert (found, owned) == (want_found, want_owned) and len(found) > len(owned) == 2
    assert _by_id(s, s.body_vectors(_rowids(s, "M1", "M7"))) == _by_id(p, p.body_vectors(_rowids(p, "M1", "M7")))
    assert sorted(b for _, _, b in s.all_memory_vectors()) == sorted(b for _, _, b in p.all_memory_vectors())
    chunks_s = sorted((_ids(s)[o], b) for _, o, b in s.all_chunk_vectors())
    assert chunks_s == sorted((_ids(p)[o], b) for _, o, b in p.all_chunk_vectors()) and chunks_s


def test_words_stem_as_fts5_porter_does(stores: tuple[Vault, IndexStore, IndexStore, Indexer, Indexer]) -> None:
    _, s, p, _, _ = stores
    # "nightly": FTS5 nightli, Snowball English night (docs/postgres.md, "Words")
    for query in ("nightly", "added", "always"):
        assert [_ids(s)[r] for r, _ in s.fts_top(query, 5)] == [_ids(p)[r] for r, _ in p.fts_top(query, 5)], query


def test_writes_through_the_indexer_keep_the_stores_alike(
    stores: tuple[Vault, IndexStore, IndexStore, Indexer, Indexer],
) -> None:
    vault, s, p, local, shared = stores
    base = vault.root / "memories" / "user"
    (base / "m1.md").rename(base / "m1-moved.md")  # same bytes, new path: move_row
    os.utime(base / "m5.md", ns=(1_700_000_000_000_000_000, 1_700_000_000_000_000_000))  # touch_row
    (base / "m6.md").unlink()  # purge_memory
    (base / "m7.md").write_text("---\nid: M7\nscope: user\nentities: [Gamma]\n---\nGamma alone now.\n", encoding="utf-8")
    (base / "broken.md").unlink()  # drop_index_error
    for indexer in (local, shared):
        report = indexer.sync()
        assert (report.moved, report.removed, report.updated) == (1, 1, 1)
    for store in (s, p):
        store.record_use(["M1", "M4"], "2026-02-01T00:00:00Z")
        store.record_use(["M1"], "2026-02-01T00:00:00Z")
        with store.write_txn():
            store.record_index_error("memories/user/x.md", "bad frontmatter", None)
            store.set_meta("probe", "1")
            store.cache_put([("m", "k1", b"\x00" * 8), ("m", "k2", b"\x01" * 8)])
            assert store.cache_drop_unused(["k1"]) == 1
        assert store.cache_get("m", ["k1", "k2", "k3"]) == {"k2": b"\x01" * 8}
        assert store.get_meta("probe") == "1"
        assert store.drop_index_error("memories/user/x.md") == ["bad frontmatter"]
        assert store.ensure_chunk_rule("another rule", 200) is True
    for op in ("sync_rows", "entity_counts", "index_errors"):
        got_s, got_p = _by_id(s, getattr(s, op)()), _by_id(p, getattr(p, op)())
        if op == "sync_rows":
            got_s = {k: v._replace(racy=0) for k, v in got_s.items()}
            got_p = {k: v._replace(racy=0) for k, v in got_p.items()}
        assert got_s == got_p, op
    assert "memories/user/m1-moved.md" in p.sync_rows() and not p.has_id("M6")
    for memory_id in ("M1", "M4", "M5"):
        assert s.usage_of(memory_id) == p.usage_of(memory_id)
    assert s.last_accesses(["M1", "M5"]) == p.last_accesses(["M1", "M5"]) == {"M1": "2026-02-01T00:00:00Z"}
    with p.write_txn():
        counts = p.purge_memory(p.rowids_by_ids(["M2"])["M2"])
    assert counts.memories == 1 and counts.chunks > 0 and counts.vectors == 1
    p.optimize_fts()
    assert p.checkpoint() is True  # the tests' role is a superuser: CHECKPOINT allowed
    assert not p.has_id("M2") and p.orphan_vectors() == 0
    with p.write_txn():
        assert p.remove_orphan_vectors() == 0


def test_an_index_other_clones_write_follows_with_the_same_indexer(tmp_path: Path, pg_url: str) -> None:
    """What a shared index needs of the one indexer (Indexer.follow): a whole
    sync purges only the rows of files this clone lost, the vectors this clone
    just computed are taken from its own cache (the model is not asked again),
    and an id another clone erased is refused."""
    root = init_vault(tmp_path / "vault", git=False)
    for rel, text in FILES.items():
        path = root / "memories" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    pg = connect(pg_url)
    model = HashEmbedder()
    try:
        with Vault(root, embedder=model) as vault:
            local = Indexer(root, vault.local_store, vault.config, model)
            shared = Indexer(root, PgStore(pg), vault.config, model, borrow=vault.local_store)
            local.sync()
            calls = model.calls
            report = shared.sync(lost=[])
            assert report.added == 7 and report.embedded == 0 and model.calls == calls  # all borrowed
            body = "Backups of the ledger run every night at two."
            held = PgStore(pg).cache_get(model.model_id, [embed.text_key(body)])
            assert held == vault.local_store.cache_get(model.model_id, [embed.text_key(body)]) != {}
            # Another clone's memory, whose file is not here: a whole sync keeps its row.
            other = (root / "memories" / "user" / "m5.md").read_text(encoding="utf-8").replace("id: M5", "id: M9")
            (root / "memories" / "user" / "m9.md").write_text(other, encoding="utf-8")
            shared.index_paths(["memories/user/m9.md"])
            (root / "memories" / "user" / "m9.md").unlink()
            (root / "memories" / "user" / "m6.md").unlink()  # this clone lost this one
            report = shared.sync(lost=["memories/user/m6.md"])
            assert report.removed == 1 and PgStore(pg).has_id("M9") and not PgStore(pg).has_id("M6")
            # An id another clone erased is not indexed back from this clone's file.
            from memex.store.postgres import erasure

            erasure.purge(pg, ["M7"], vacuum=False)
            os.utime(root / "memories" / "user" / "m7.md")
            report = shared.sync(lost=[])
            assert not PgStore(pg).has_id("M7")
            assert {"path": "memories/user/m7.md", "reason": "erased on another clone; not indexed"} in report.errors
    finally:
        pg.close()
