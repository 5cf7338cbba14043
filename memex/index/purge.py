"""Remove every derived trace of one memory from the index.

Used when a file disappears (reindex, watcher, doctor) and by erasure, so a
crash between deleting a file and purging its rows is repaired by the next
sync with exactly the purge that erasure would have done.

Deleting rows is not enough to make text unreadable on disk. ``PRAGMA
secure_delete`` (set in :func:`memex.index.db.connect`) zeroes deleted cells and
freed pages, but a contentless FTS5 table keeps a deleted document's terms in
its segment b-tree (only a tombstone marks them dead) until the segments are
merged, and the WAL keeps old page images until a checkpoint. So every purge
marks the index ``scrub_pending``, and :func:`scrub` rewrites the FTS segments
('optimize') and truncates the WAL. Erasure scrubs at once; a sync that
removed rows (reindex, doctor --fix) scrubs through :func:`scrub_if_pending`.

A scrub is two steps (the FTS rewrite commits, then the checkpoint), and a
process killed between them would leave old page images in the WAL with the
flag already cleared. So a marker file beside the index (``index.db-scrub``)
is created before the first step and removed only once the WAL is truncated;
while it exists, the next sync scrubs again.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, fields
from pathlib import Path

import apsw

from memex.index import graph
from memex.index.db import get_meta, set_meta, write_txn
from memex.embedding.embed import text_key
from memex.text import normalize, strip_injected

SCRUB_KEY = "scrub_pending"


@dataclass
class PurgeCounts:
    memories: int = 0
    fts_rows: int = 0
    vectors: int = 0
    chunks: int = 0
    chunk_vectors: int = 0
    cache_entries: int = 0
    usage: int = 0
    entities: int = 0
    relations: int = 0

    def add(self, other: PurgeCounts) -> None:
        for f in fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))

    def as_dict(self) -> dict[str, int]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


def _has_table(conn: apsw.Connection, name: str) -> bool:
    return conn.execute(
        "SELECT 1 FROM sqlite_master WHERE name = ?", (name,)
    ).fetchone() is not None


def _count(conn: apsw.Connection, sql: str, rowid: int) -> int:
    row = conn.execute(sql, (rowid,)).fetchone()
    return int(row[0]) if row else 0


def delete_vectors(conn: apsw.Connection, memory_rowid: int) -> tuple[int, int, int]:
    """Drop a memory's vector, chunks and chunk vectors: (vectors, chunks, chunk vectors)."""
    vectors = chunk_vectors = 0
    chunk_rowids = [r[0] for r in conn.execute(
        "SELECT rowid FROM chunks WHERE memory_rowid = ?", (memory_rowid,)
    )]
    if _has_table(conn, "memory_vec"):
        # vec0 tables do not support DELETE ... RETURNING: count, then delete.
        vectors = _count(conn, "SELECT count(*) FROM memory_vec WHERE rowid = ?", memory_rowid)
        conn.execute("DELETE FROM memory_vec WHERE rowid = ?", (memory_rowid,))
        for rowid in chunk_rowids:
            chunk_vectors += _count(conn, "SELECT count(*) FROM chunk_vec WHERE rowid = ?", rowid)
            conn.execute("DELETE FROM chunk_vec WHERE rowid = ?", (rowid,))
    conn.execute("DELETE FROM chunks WHERE memory_rowid = ?", (memory_rowid,))
    return vectors, len(chunk_rowids), chunk_vectors


def vector_cache_keys(conn: apsw.Connection, memory_rowid: int) -> set[str]:
    """Text hashes a memory's vectors may be cached under: its body's, its
    chunks', and those of the body as ``add`` embedded it (body_cache_keys)."""
    keys: set[str] = set()
    for embed_key, body in conn.execute("SELECT embed_key, body FROM memories WHERE rowid = ?", (memory_rowid,)):
        if embed_key:
            keys.add(str(embed_key))
        keys.update(body_cache_keys(str(body)))
    keys.update(
        str(r[0]) for r in conn.execute("SELECT text_hash FROM chunks WHERE memory_rowid = ?", (memory_rowid,))
    )
    return keys


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
    counts.vectors, counts.chunks, counts.chunk_vectors = delete_vectors(conn, memory_rowid)
    conn.execute("DELETE FROM memory_fts WHERE rowid = ?", (memory_rowid,))
    counts.fts_rows = 1
    counts.relations, counts.entities = graph.unlink_memory(conn, memory_rowid)
    counts.usage = len(conn.execute(
        "DELETE FROM usage WHERE memory_id = ? RETURNING memory_id", (memory_id,)
    ).fetchall())
    conn.execute("DELETE FROM memories WHERE rowid = ?", (memory_rowid,))
    counts.memories = 1
    set_meta(conn, SCRUB_KEY, "1")
    counts.cache_entries = drop_unused_cache(conn, cache_keys)
    return counts


def drop_unused_cache(conn: apsw.Connection, keys: set[str]) -> int:
    """Delete the cached vectors of these text hashes that no memory uses; returns how many."""
    dropped = 0
    for key in keys:
        if not _text_still_used(conn, key):
            dropped += len(conn.execute(
                "DELETE FROM embedding_cache WHERE text_hash = ? RETURNING text_hash", (key,)
            ).fetchall())
    return dropped


def body_cache_keys(body: str) -> list[str]:
    """Cache keys under which this body's vector may also be stored.

    ``add`` embeds the body as typed (to run dedup before the file exists)
    and a search for the exact text caches its query vector: both are the
    memory's embedding under another key unless whitespace happens to agree.
    """
    stripped = strip_injected(body).strip()
    variants = {body, body.strip(), stripped, normalize(stripped)}
    return [text_key(v) for v in variants if v]


def _text_still_used(conn: apsw.Connection, key: str) -> bool:
    return conn.execute(
        "SELECT 1 FROM chunks WHERE text_hash = ? UNION ALL "
        "SELECT 1 FROM memories WHERE embed_key = ? LIMIT 1",
        (key, key),
    ).fetchone() is not None


def optimize_fts(conn: apsw.Connection) -> None:
    """Merge the FTS5 segments into one, dropping the terms of deleted documents.

    Verified (tests/test_erase_forensic.py): after a contentless_delete
    DELETE, and after 'merge', a deleted document's terms are still in the
    segment blobs; after 'optimize' they are not. Its cost grows with the
    index (about 0.2 s at 100k short memories), which erasure can afford.
    """
    conn.execute("INSERT INTO memory_fts(memory_fts) VALUES ('optimize')")
    conn.execute("DELETE FROM meta WHERE key = ?", (SCRUB_KEY,))


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


def _marker(conn: apsw.Connection) -> Path | None:
    name = conn.filename
    return Path(name + "-scrub") if name else None


def mark_scrub(conn: apsw.Connection) -> None:
    """Note, durably and outside the database, that a scrub has begun (see module doc)."""
    marker = _marker(conn)
    if marker is None:
        return
    fd = os.open(marker, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def scrub_done(conn: apsw.Connection) -> None:
    marker = _marker(conn)
    if marker is not None:
        marker.unlink(missing_ok=True)


def scrub(conn: apsw.Connection) -> bool:
    """Make purged rows unrecoverable from index.db and its -wal (see module doc).

    Returns whether the WAL checkpoint completed.
    """
    mark_scrub(conn)
    with write_txn(conn):
        optimize_fts(conn)
    done = checkpoint(conn)
    if done:
        scrub_done(conn)
    return done


def scrub_if_pending(conn: apsw.Connection) -> bool | None:
    """Scrub when a purge happened since the last scrub; None when none was needed."""
    marker = _marker(conn)
    if get_meta(conn, SCRUB_KEY) is None and not (marker is not None and marker.exists()):
        return None
    return scrub(conn)
