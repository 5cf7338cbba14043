"""Writing and purging one memory in the PostgreSQL index.

:func:`upsert` writes a memory's row, its text search vector, its vectors
(body and chunks), its entity links and relations; :func:`purge_memory`
removes every one of those, its usage, and the cached embeddings of its
texts that no other memory uses, exactly as :func:`memex.store.sqlite.purge.purge_memory`
does on SQLite. Both run inside the caller's :meth:`PgConnection.write_txn`.
"""

from __future__ import annotations

from collections.abc import Sequence

from memex import text
from memex.fields import Relation
from memex.store import facts
from memex.store.rows import CacheRow, PurgeCounts, body_cache_keys
from memex.records import Record
from memex.store.postgres import density, lexemes, postings
from memex.store.postgres.connection import PgConnection, Vec

# Body vector and (text hash, vector) per chunk, as the SQLite indexer passes them.
Vectors = tuple[bytes, list[tuple[str, bytes]]]

_COLUMNS = (
    "id", "path", "scope", "source", "session", "source_ref", "category", "confidence", "created",
    "supersedes", "superseded_by", "status", "body", "body_hash", "file_hash", "size", "mtime_ns",
    "embed_key", "racy",
)


def _values(rec: Record) -> tuple[object, ...]:
    return (
        rec.id, rec.path, rec.scope, rec.source, rec.session, rec.source_ref, rec.category,
        rec.confidence, rec.created, rec.supersedes, rec.superseded_by, rec.status, rec.body,
        rec.body_hash, rec.file_hash, rec.size, rec.mtime_ns, text.text_key(rec.embed_text), int(rec.racy),
    )


def upsert(
    conn: PgConnection, rec: Record, vectors: Vectors | None, document: str | None = None,
    *, rowid: int | None = None, checked: bool = False,
) -> tuple[int, str]:
    """Write one memory (by id); returns its rowid and ``added`` or ``updated``.
    ``document``: its tokens for full text (:func:`memex.text.fts_document`), made here if not given.
    ``checked``: the caller (the indexer, in this write transaction) made sure no other
    memory's row holds the path, and ``rowid`` is the row of the id (None: no row holds it),
    so neither is asked again."""
    if not checked:
        at_path = conn.execute("SELECT rowid, id FROM memories WHERE path = %s", (rec.path,)).fetchone()
        if at_path is not None and at_path[1] != rec.id:
            purge_memory(conn, int(at_path[0]))  # the file now carries another id
    if document is None:
        document = text.fts_document(rec.embed_text)
    fts, length = lexemes.tsvector(document)  # FTS5's tokens and count (docs/postgres.md, "Words")
    if not checked:
        old = conn.execute("SELECT rowid, fts_len FROM memories WHERE id = %s", (rec.id,)).fetchone()
    elif rowid is not None:
        old = conn.execute("SELECT rowid, fts_len FROM memories WHERE rowid = %s", (rowid,)).fetchone()
    else:
        old = None
    values = _values(rec)
    if old is None:
        cols = ", ".join(_COLUMNS)
        marks = ", ".join(["%s"] * len(values))
        rowid = int(conn.execute(
            f"INSERT INTO memories({cols}, embedded, fts, fts_len) "
            f"VALUES ({marks}, %s, %s::tsvector, %s) RETURNING rowid",
            (*values, 1 if vectors is not None else 0, fts, length),
        ).fetchone()[0])
        totals = conn.execute(
            "UPDATE fts_totals SET docs = docs + 1, tokens = tokens + %s RETURNING docs, tokens, ord_c", (length,)
        ).fetchone()
        outcome = "added"
    else:
        rowid = int(old[0])
        sets = ", ".join(f"{c} = %s" for c in _COLUMNS)
        conn.execute(
            f"UPDATE memories SET {sets}, fts = %s::tsvector, fts_len = %s WHERE rowid = %s",
            (*values, fts, length, rowid),
        )
        totals = conn.execute(
            "UPDATE fts_totals SET tokens = tokens + %s RETURNING docs, tokens, ord_c", (length - int(old[1]),)
        ).fetchone()
        outcome = "updated"
    postings.retune(conn, int(totals[0]), int(totals[1]), float(totals[2]))
    facts.written(conn.execute, facts.POSTGRES, rowid, rec.body)
    if vectors is not None:
        old_keys = vector_cache_keys(conn, rowid) if old is not None else set()
        body_blob, chunk_pairs = vectors
        if old is not None:
            delete_vectors(conn, rowid)
        conn.execute("INSERT INTO memory_vec(rowid, embedding) VALUES (%s, %s)", (rowid, Vec(body_blob)))
        density.note_insert(conn, rowid, body_blob)
        for seq, (key, blob) in enumerate(chunk_pairs):
            chunk = conn.execute(
                "INSERT INTO chunks(memory_rowid, seq, text_hash) VALUES (%s, %s, %s) RETURNING rowid",
                (rowid, seq, key),
            ).fetchone()[0]
            conn.execute("INSERT INTO chunk_vec(rowid, embedding) VALUES (%s, %s)", (chunk, Vec(blob)))
        conn.execute("UPDATE memories SET embedded = 1 WHERE rowid = %s", (rowid,))
        new_keys = {text.text_key(rec.embed_text), *(k for k, _ in chunk_pairs)}
        drop_unused_cache(conn, old_keys - new_keys)
    write_links(conn, rowid, rec.entities, rec.relations, fresh=old is None)
    return rowid, outcome


def delete_vectors(conn: PgConnection, memory_rowid: int) -> tuple[int, int, int]:
    """Drop a memory's vector, chunks and chunk vectors: (vectors, chunks, chunk vectors)."""
    density.note_delete(conn, memory_rowid)  # its neighbours' lists change, its own row goes
    vectors = conn.execute("DELETE FROM memory_vec WHERE rowid = %s", (memory_rowid,)).rowcount
    chunk_rowids = [r[0] for r in conn.execute(
        "DELETE FROM chunks WHERE memory_rowid = %s RETURNING rowid", (memory_rowid,)
    )]
    chunk_vectors = 0
    if chunk_rowids:
        chunk_vectors = conn.execute("DELETE FROM chunk_vec WHERE rowid = ANY(%s)", (chunk_rowids,)).rowcount
    return int(vectors), len(chunk_rowids), int(chunk_vectors)


def vector_cache_keys(conn: PgConnection, memory_rowid: int) -> set[str]:
    """Text hashes a memory's vectors may be cached under (see :func:`memex.store.sqlite.memories.vector_cache_keys`)."""
    keys: set[str] = set()
    for embed_key, body in conn.execute("SELECT embed_key, body FROM memories WHERE rowid = %s", (memory_rowid,)):
        if embed_key:
            keys.add(str(embed_key))
        keys.update(body_cache_keys(str(body)))
    keys.update(
        str(r[0]) for r in conn.execute("SELECT text_hash FROM chunks WHERE memory_rowid = %s", (memory_rowid,))
    )
    return keys


def drop_unused_cache(conn: PgConnection, keys: set[str]) -> int:
    """Delete the cached vectors of these text hashes that no memory uses; returns how many."""
    if not keys:
        return 0
    return int(conn.execute(
        "DELETE FROM embedding_cache c WHERE c.text_hash = ANY(%s) "
        "AND NOT EXISTS (SELECT 1 FROM chunks WHERE text_hash = c.text_hash) "
        "AND NOT EXISTS (SELECT 1 FROM memories WHERE embed_key = c.text_hash)",
        (sorted(keys),),
    ).rowcount)


def purge_memory(conn: PgConnection, memory_rowid: int) -> PurgeCounts:
    """Purge one memory and everything derived from it (inside the caller's write transaction)."""
    counts = PurgeCounts()
    row = conn.execute("SELECT id, fts_len FROM memories WHERE rowid = %s", (memory_rowid,)).fetchone()
    if row is None:
        return counts
    memory_id, length = str(row[0]), int(row[1])
    cache_keys = vector_cache_keys(conn, memory_rowid)
    counts.vectors, counts.chunks, counts.chunk_vectors = delete_vectors(conn, memory_rowid)
    counts.relations, counts.entities = unlink_memory(conn, memory_rowid)
    counts.usage = int(conn.execute("DELETE FROM usage WHERE memory_id = %s", (memory_id,)).rowcount)
    facts.unlink(conn.execute, facts.POSTGRES, memory_rowid)  # its neighbours now face each other
    conn.execute("DELETE FROM memories WHERE rowid = %s", (memory_rowid,))
    conn.execute("UPDATE fts_totals SET docs = docs - 1, tokens = tokens - %s", (length,))
    counts.memories = counts.fts_rows = 1
    counts.cache_entries = drop_unused_cache(conn, cache_keys)
    return counts


def store_cache(conn: PgConnection, rows: Sequence[CacheRow]) -> None:
    if rows:
        with conn.raw.cursor() as cur:
            cur.executemany(
                "INSERT INTO embedding_cache(model, text_hash, vector) VALUES (%s, %s, %s) "
                "ON CONFLICT (text_hash, model) DO UPDATE SET vector = excluded.vector",
                rows,
            )


def cached(conn: PgConnection, model: str, keys: Sequence[str]) -> dict[str, bytes]:
    """The cached vectors of these text hashes for ``model``."""
    rows = conn.execute(
        "SELECT text_hash, vector FROM embedding_cache WHERE model = %s AND text_hash = ANY(%s)",
        (model, list(dict.fromkeys(keys))),
    )
    return {str(k): bytes(v) for k, v in rows}


# -- entities and relations (memex.graph's rules, PostgreSQL's SQL) ----------


def _entity_rowid(conn: PgConnection, name: str) -> int:
    key = text.entity_key(name)
    row = conn.execute(
        "INSERT INTO entities(key, name) VALUES (%s, %s) ON CONFLICT (key) DO UPDATE SET key = excluded.key "
        "RETURNING rowid",
        (key, name),
    ).fetchone()
    return int(row[0])


def write_links(
    conn: PgConnection, memory_rowid: int, entities: list[str], relations: list[Relation], fresh: bool
) -> None:
    """Replace a memory's entity links and relations."""
    if not fresh:
        unlink_memory(conn, memory_rowid)
    names = list(entities)
    for rel in relations:
        names.extend([rel.subject, rel.object])
    for entity in dict.fromkeys(_entity_rowid(conn, n) for n in names):
        conn.execute(
            "INSERT INTO entity_links(entity_rowid, memory_rowid) VALUES (%s, %s) ON CONFLICT DO NOTHING",
            (entity, memory_rowid),
        )
    for rel in relations:
        conn.execute(
            "INSERT INTO relations(subject_rowid, predicate, object_rowid, memory_rowid) VALUES (%s, %s, %s, %s)",
            (_entity_rowid(conn, rel.subject), rel.predicate, _entity_rowid(conn, rel.object), memory_rowid),
        )


def unlink_memory(conn: PgConnection, memory_rowid: int) -> tuple[int, int]:
    """Remove a memory's links; drop relations and entities left unsupported.
    Returns (relations removed, entities removed)."""
    relations = conn.execute("DELETE FROM relations WHERE memory_rowid = %s", (memory_rowid,)).rowcount
    linked = [r[0] for r in conn.execute(
        "DELETE FROM entity_links WHERE memory_rowid = %s RETURNING entity_rowid", (memory_rowid,)
    )]
    orphans = [r[0] for r in conn.execute(
        "SELECT e FROM unnest(%s::bigint[]) AS e "
        "WHERE NOT EXISTS (SELECT 1 FROM entity_links WHERE entity_rowid = e)",
        (linked,),
    )] if linked else []
    if orphans:
        conn.execute(
            "DELETE FROM relations WHERE subject_rowid = ANY(%s) OR object_rowid = ANY(%s)", (orphans, orphans)
        )
        conn.execute("DELETE FROM entities WHERE rowid = ANY(%s)", (orphans,))
    return int(relations), len(orphans)
