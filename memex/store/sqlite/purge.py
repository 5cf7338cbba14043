"""Every derived trace of one memory, removed; and the scrub that makes
removed rows unreadable in the file.

:func:`purge_memory` deletes a memory's row, FTS entry, vectors, chunks,
links (and entities and relations no other memory supports), usage, and
the cached vectors of its texts no other memory uses; it marks the index
``scrub_pending``. Why deleting is not enough on disk, and the two steps
of a scrub (:func:`optimize_fts`, :func:`checkpoint`):
:mod:`memex.store.sqlite.scrub` and docs/forgetting.md.
"""

from __future__ import annotations

import time

import apsw

from memex.store import facts
from memex.store.rows import PurgeCounts
from memex.store.sqlite import cache, entities, vectors
from memex.store.sqlite.memories import vector_cache_keys
from memex.store.sqlite.meta import SCRUB_PENDING, delete_meta, set_meta


def purge_memory(conn: apsw.Connection, memory_rowid: int) -> PurgeCounts:
    """Purge one memory (inside the caller's write transaction).

    The cached embeddings of its body and chunks go too unless another
    memory still has the same text.
    """
    counts = PurgeCounts()
    row = conn.execute("SELECT id FROM memories WHERE rowid = ?", (memory_rowid,)).fetchone()
    if row is None:
        return counts
    memory_id = row[0]
    cache_keys = vector_cache_keys(conn, memory_rowid)
    counts.vectors, counts.chunks, counts.chunk_vectors = vectors.delete(conn, memory_rowid)
    conn.execute("DELETE FROM memory_fts WHERE rowid = ?", (memory_rowid,))
    counts.fts_rows = 1
    counts.relations, counts.entities = entities.unlink_memory(conn, memory_rowid)
    counts.usage = len(conn.execute(
        "DELETE FROM usage WHERE memory_id = ? RETURNING memory_id", (memory_id,)
    ).fetchall())
    facts.unlink(conn.execute, facts.SQLITE, memory_rowid)  # its neighbours now face each other
    conn.execute("DELETE FROM memories WHERE rowid = ?", (memory_rowid,))
    counts.memories = 1
    set_meta(conn, SCRUB_PENDING, "1")
    counts.cache_entries = cache.drop_unused(conn, cache_keys)
    return counts


def optimize_fts(conn: apsw.Connection) -> None:
    """Merge the FTS5 segments into one, dropping the terms of deleted documents.

    Verified (tests/test_erase_forensic.py): after a contentless_delete
    DELETE, and after 'merge', a deleted document's terms are still in the
    segment blobs; after 'optimize' they are not. Its cost grows with the
    index (about 0.2 s at 100k short memories), which erasure can afford.
    """
    conn.execute("INSERT INTO memory_fts(memory_fts) VALUES ('optimize')")
    delete_meta(conn, SCRUB_PENDING)


def checkpoint(conn: apsw.Connection, attempts: int = 20, pause: float = 0.1) -> bool:
    """Copy the WAL into the database and truncate it to zero bytes.

    Returns False if another connection's open read transaction kept the
    WAL in use every time (its old page images may then still hold text).
    """
    for attempt in range(attempts):
        row = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        if row is not None and not row[0]:  # (busy, wal frames, frames copied)
            return True
        if attempt + 1 < attempts:
            time.sleep(pause)
    return False
