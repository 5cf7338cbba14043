"""Loading many memories at once into an empty PostgreSQL index (a first
reindex of a large vault, the benchmark's 1M rows).

Row-at-a-time :func:`memex.store.postgres.rows.upsert` costs a handful of
statements per memory and keeps the HNSW graph and GIN index up to date
on every insert. A bulk load instead drops those indexes, streams rows
with ``COPY`` (vectors in pgvector's binary form), computes the text
search vectors in one ``INSERT ... SELECT``, and builds the indexes once at
the end with ``maintenance_work_mem`` raised so the HNSW graph is built in
memory, with one parallel worker per spare core.
"""

from __future__ import annotations

from collections.abc import Iterable

from memex import text
from memex.records import Record
from memex.store import facts
from memex.store.postgres import density, lexemes, postings, schema
from memex.store.postgres.connection import PgConnection, Vec
from memex.store.postgres.rows import _COLUMNS, _values

# What the index build may use: the HNSW graph of 1M 384-dim vectors is
# about 2 GB; a smaller budget makes the build spill and run far slower.
BUILD_MEMORY = "3GB"


def load(
    conn: PgConnection,
    batch: Iterable[tuple[Record, bytes]],
    model: str,
) -> int:
    """COPY records with their body vectors into the index (no indexes rebuilt:
    call :func:`finish` once after the last batch). Returns rows loaded."""
    raw = conn.raw
    n = 0
    with conn.write_txn():
        postings.bulk_mode(conn)  # finish() derives the postings of every row at once
        rows = list(batch)
        cols = ", ".join(_COLUMNS)
        conn.execute("DROP TABLE IF EXISTS bulk_rows")
        conn.execute(
            f"CREATE TEMP TABLE bulk_rows ON COMMIT DROP AS "
            f"SELECT {cols}, embedded, fts, fts_len, asks FROM memories WITH NO DATA"
        )
        with raw.cursor() as cur:
            with cur.copy(f"COPY bulk_rows ({cols}, embedded, fts, fts_len, asks) FROM STDIN") as copy:
                for rec, _ in rows:
                    fts, length = lexemes.tsvector(text.fts_document(rec.embed_text))
                    copy.write_row((*_values(rec), 1, fts, length, int(text.asks_question(rec.body))))
        ids = conn.execute(
            f"INSERT INTO memories ({cols}, embedded, fts, fts_len, asks) "
            f"SELECT {cols}, embedded, fts, fts_len, asks FROM bulk_rows "
            "RETURNING id, rowid"
        ).fetchall()
        rowid_of = {str(i): int(r) for i, r in ids}
        with raw.cursor() as cur:
            with cur.copy("COPY memory_vec (rowid, embedding) FROM STDIN (FORMAT BINARY)") as copy:
                copy.set_types(["int8", "vector"])
                for rec, blob in rows:
                    copy.write_row((rowid_of[rec.id], Vec(blob)))
            with cur.copy("COPY embedding_cache (model, text_hash, vector) FROM STDIN (FORMAT BINARY)") as copy:
                copy.set_types(["text", "text", "bytea"])
                for rec, blob in rows:
                    copy.write_row((model, text.text_key(rec.embed_text), blob))
        density.stale(conn)  # vectors written without notes: finish computes every list
        n = len(rows)
    return n


def start(conn: PgConnection) -> None:
    """Drop the indexes a bulk load would otherwise update row by row."""
    with conn.write_txn():
        schema.drop_vector_indexes(conn)
        conn.execute("DROP INDEX IF EXISTS memories_fts")
        postings.drop_indexes(conn)


def finish(conn: PgConnection, workers: int = 1) -> None:
    """Recount the BM25 totals, derive the postings and build the text and vector indexes."""
    with conn.write_txn():
        conn.execute("UPDATE fts_totals SET docs = s.docs, tokens = s.tokens FROM "
                     "(SELECT count(*) AS docs, coalesce(sum(fts_len), 0) AS tokens FROM memories) s")
        conn.execute(f"SET LOCAL maintenance_work_mem = '{BUILD_MEMORY}'")
        conn.execute(f"SET LOCAL max_parallel_maintenance_workers = {int(workers)}")
        postings.rebuild(conn)
        facts.relink_all(conn.execute, facts.POSTGRES)  # every session's order, once
        conn.execute("CREATE INDEX IF NOT EXISTS memories_fts ON memories USING gin(fts) WITH (fastupdate = off)")
        schema.create_vector_indexes(conn)
        density.recompute_all(conn)  # every memory's density, at this commit (cost: docs/postgres.md)
    conn.execute("VACUUM ANALYZE memories, memory_vec, embedding_cache, fts_postings, fts_terms, memory_density")
