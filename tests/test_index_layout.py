"""The embedding cache's on-disk layout (docs/models.md: index size)."""

from __future__ import annotations

from pathlib import Path

import apsw
import numpy as np
import sqlite_vec

from memex.store.sqlite import schema as db
from memex.store.sqlite.meta import scalar
from memex.embedding import embed
from memex.vault import Vault


def _vec(seed: int) -> bytes:
    v = np.random.default_rng(seed).standard_normal(384).astype(np.float32)
    return embed.to_blob(v / np.linalg.norm(v))


def _overflow_pages(conn: apsw.Connection, table: str) -> int:
    return int(scalar(conn, "SELECT count(*) FROM dbstat WHERE name = ? AND pagetype = 'overflow'", (table,)))


def _old_index(path: Path, rows: list[tuple[str, str, bytes]]) -> None:
    """An index as schema version 2 built it (4 KiB pages, WITHOUT ROWID cache)."""
    conn = apsw.Connection(str(path))
    conn.enable_load_extension(True)
    conn.load_extension(sqlite_vec.loadable_path())
    conn.execute("PRAGMA page_size=4096")
    conn.execute("PRAGMA journal_mode=WAL")
    with db.write_txn(conn):
        for step in db.MIGRATIONS[:2]:
            step(conn)
        conn.execute("PRAGMA user_version=2")
        conn.executemany("INSERT INTO embedding_cache(model, text_hash, vector) VALUES (?, ?, ?)", rows)
    conn.close()


def test_a_384_dimension_vector_row_stays_on_its_page(tmp_path: Path) -> None:
    conn = db.connect(tmp_path / "index.db")
    rows = [("all-MiniLM-L6-v2-int8", embed.text_key(f"text {i}"), _vec(i)) for i in range(200)]
    with db.write_txn(conn):
        embed.store_cache(conn, rows)
    # Before the fix every row spilled onto an overflow page of its own.
    assert _overflow_pages(conn, "embedding_cache") == 0
    assert scalar(conn, "SELECT count(*) FROM embedding_cache") == 200


def test_version_2_index_migrates_its_cache_without_losing_a_vector(tmp_path: Path) -> None:
    path = tmp_path / "index.db"
    rows = [
        (model, embed.text_key(f"text {i}"), _vec(i + 1000 * n))
        for n, model in enumerate(("all-MiniLM-L6-v2-int8", "multilingual-e5-small-q4"))
        for i in range(50)
    ]
    _old_index(path, rows)
    conn = db.connect(path)
    assert scalar(conn, "PRAGMA user_version") == db.SCHEMA_VERSION
    kept = {(m, k): bytes(v) for m, k, v in conn.execute("SELECT model, text_hash, vector FROM embedding_cache")}
    assert kept == {(m, k): v for m, k, v in rows}
    sql = str(scalar(conn, "SELECT sql FROM sqlite_schema WHERE name = 'embedding_cache'"))
    assert "WITHOUT ROWID" not in sql.upper()
    # The key stays unique: storing a row again replaces it.
    model, key, _ = rows[0]
    with db.write_txn(conn):
        embed.store_cache(conn, [(model, key, _vec(99))])
    assert scalar(conn, "SELECT count(*) FROM embedding_cache") == len(rows)
    assert bytes(scalar(conn, "SELECT vector FROM embedding_cache WHERE model = ? AND text_hash = ?",
                           (model, key))) == _vec(99)
    # The purge looks a hash up across models through the index, not a scan.
    plan = " ".join(str(r) for r in conn.execute(
        "EXPLAIN QUERY PLAN DELETE FROM embedding_cache WHERE text_hash = ?", (key,)))
    assert "embedding_cache_key" in plan


def test_a_migrated_vault_still_finds_what_it_stored(tmp_path: Path, vault_root: Path) -> None:
    from tests.fakes import HashEmbedder

    with Vault(vault_root, embedder=HashEmbedder()) as v:
        added = v.add("The staging deploy uses rsync over ssh.", scope="user")
    # Turn the index back into a version-2 one: the old cache layout, same rows.
    conn = apsw.Connection(str(vault_root / ".memex" / "index.db"))
    with db.write_txn(conn):
        conn.execute(
            """
            CREATE TABLE old_cache (model TEXT NOT NULL, text_hash TEXT NOT NULL, vector BLOB NOT NULL,
                                    PRIMARY KEY (model, text_hash)) WITHOUT ROWID;
            INSERT INTO old_cache SELECT model, text_hash, vector FROM embedding_cache;
            DROP TABLE embedding_cache;
            ALTER TABLE old_cache RENAME TO embedding_cache;
            PRAGMA user_version=2;
            """
        )
    conn.close()
    embedder = HashEmbedder()
    with Vault(vault_root, embedder=embedder) as v:
        report = v.reindex(full=True)
        assert report.errors == []
        assert embedder.texts_embedded == 0  # every vector came from the migrated cache
        assert [h.id for h in v.search("rsync deploy")][:1] == [added.id]
