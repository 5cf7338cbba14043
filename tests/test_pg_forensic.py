"""Erasure on PostgreSQL, judged by the bytes on disk: after the purge,
VACUUM and CHECKPOINT, scan every file of the server's data folder for the
erased text and vector, and name what still holds them."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from memex.vault import Vault
from tests.conftest import use_postgres

MARKER = "quokkazebra"


def scan(data_dir: Path, needles: dict[str, bytes]) -> dict[str, set[str]]:
    """For each needle, the files (relative to the data folder) whose bytes contain it."""
    found: dict[str, set[str]] = {name: set() for name in needles}
    for folder, _, files in os.walk(data_dir):
        for name in files:
            path = Path(folder) / name
            try:
                data = path.read_bytes()
            except OSError:
                continue
            for key, needle in needles.items():
                if needle in data:
                    found[key].add(str(path.relative_to(data_dir)))
    return found


def relation_files(conn, url: str) -> dict[str, str]:  # type: ignore[no-untyped-def]
    """Data-folder path (with fork suffixes) of every relation in the database -> its name."""
    out: dict[str, str] = {}
    for name, path in conn.execute(
        "SELECT c.relname, pg_relation_filepath(c.oid) FROM pg_class c WHERE pg_relation_filepath(c.oid) IS NOT NULL"
    ):
        for suffix in ("", "_fsm", "_vm", ".1"):
            out[path + suffix] = f"{name}{suffix}"
    return out


PLAIN_LEFTOVERS = {
    "body": ["entities_key_key", "fts_postings", "fts_postings_doc", "fts_postings_order", "fts_terms", "fts_terms_pkey", "memories",
             "memories_fts", "memories_path_key"],
    "vector": ["embedding_cache", "memory_vec"],
}


@pytest.mark.parametrize("full", [True, False], ids=["vacuum-full", "vacuum"])
def test_erase_on_postgres_what_remains(vault: Vault, pg_url: str, pg_server, full: bool) -> None:  # type: ignore[no-untyped-def]
    for i in range(30):
        vault.add(f"Ordinary memory number {i} about builds and deploys", source="user")
    secret = vault.add(f"The {MARKER} launch code is 7731 and [[Quokkazebra]] owns it", source="user")
    use_postgres(vault.root, pg_url)  # the same files on PostgreSQL, as a clone there indexes them
    conf = vault.root / ".memex" / "config.local.toml"
    conf.write_text(conf.read_text().replace("[index]\n", f'[index]\nerase_vacuum = "{"full" if full else "plain"}"\n', 1))
    with Vault(vault.root, embedder=vault.embedder) as shared:
        shared.reindex()
        pg = shared.store
        blob = pg.conn.execute(
            "SELECT c.vector FROM embedding_cache c JOIN memories m ON m.embed_key = c.text_hash WHERE m.id = %s",
            (secret.id,),
        ).fetchone()[0]
        # Autovacuum's ANALYZE samples column values into pg_statistic at times
        # of its own; run it now so that every run sees what it would keep.
        pg.conn.execute("ANALYZE")
        pg.conn.execute("CHECKPOINT")
        needles = {
            "body": MARKER.encode(),
            "vector": bytes(blob),  # float32 as pgvector and the cache store it (little-endian here)
        }
        before = scan(pg_server.data_dir, needles)
        files = relation_files(pg.conn, pg_url)
        assert any(files.get(f) == "memories" for f in before["body"]), before  # the scan sees the heap
        assert any(files.get(f) == "memory_vec" for f in before["vector"]), before
        live = "SELECT (SELECT count(*) FROM fts_terms WHERE lexeme LIKE %s) + (SELECT count(*) FROM fts_postings WHERE lexeme LIKE %s)"
        assert pg.conn.execute(live, (MARKER + "%", MARKER + "%")).fetchone()[0] == 2  # its word's count and posting
        result = shared.backend.purge([secret.id])
        assert pg.conn.execute(live, (MARKER + "%", MARKER + "%")).fetchone()[0] == 0
        assert result.purged["memories"] == 1 and result.vacuum["checkpoint"] is True
        after = scan(pg_server.data_dir, needles)
    where = {key: sorted(files.get(f, f) for f in paths) for key, paths in after.items()}
    print("after erase + VACUUM + CHECKPOINT:", where)
    in_relations = {key: sorted(files[f] for f in paths if f in files) for key, paths in after.items()}
    if full:
        # No table, index, TOAST, free-space or visibility map holds them ...
        assert in_relations == {"body": [], "vector": []}, where
    else:
        # Plain VACUUM frees the space without overwriting it (docs/postgres.md).
        assert in_relations == PLAIN_LEFTOVERS, where
    # ... and outside the relations, only the write-ahead log does.
    assert all(p.startswith("pg_wal/") for paths in after.values() for p in paths if p not in files), where
    assert len(result.vacuum["retained"]) == (1 if full else 2)  # type: ignore[arg-type]


def test_a_tests_database_is_dropped_with_its_files(pg_server) -> None:  # type: ignore[no-untyped-def]
    """What keeps the scan above to one test's database (and the session's end
    quick): the database `pg_url` makes goes, files and all, when the test ends
    (PgServer.drop_database), even with a connection still open to it."""
    import psycopg

    url = pg_server.new_database()
    name = psycopg.conninfo.conninfo_to_dict(url)["dbname"]
    [(oid,)] = pg_server.sql(pg_server.url(), f"SELECT oid FROM pg_database WHERE datname = '{name}'")
    folder = pg_server.data_dir / "base" / str(oid)
    assert folder.is_dir() and any(folder.iterdir())
    left_open = psycopg.connect(url, autocommit=True)  # as a test's stray process may leave one
    try:
        pg_server.drop_database(url)
    finally:
        left_open.close()
    assert pg_server.sql(pg_server.url(), f"SELECT 1 FROM pg_database WHERE datname = '{name}'") == []
    assert not folder.exists()
