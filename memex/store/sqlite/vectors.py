"""Vectors: ``memory_vec`` (one per memory, keyed by its rowid), ``chunks``
and ``chunk_vec`` (one per chunk of a long body, speaking for its memory).

The vec0 tables exist once the model, and so the dimension, is known
(:func:`memex.store.sqlite.schema.ensure_vector_tables`). Nearest-neighbour search
here is sqlite-vec's; a long-lived process reads the same vectors into an
in-process copy instead (:mod:`memex.store.sqlite.vecmatrix`, via :func:`all_memory_vectors`
and friends).
"""

from __future__ import annotations

from collections.abc import Sequence

import apsw

from memex.store import density
from memex.store.rows import Filters, OwnedVector, RowVector
from memex.store.sqlite.filters import where as _where


def _marks(n: int) -> str:
    return ",".join("?" * n)


def _has_table(conn: apsw.Connection, name: str) -> bool:
    return conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (name,)).fetchone() is not None


def _count(conn: apsw.Connection, sql: str, rowid: int) -> int:
    row = conn.execute(sql, (rowid,)).fetchone()
    return int(row[0]) if row else 0


def insert(conn: apsw.Connection, rowid: int, body_blob: bytes, chunk_pairs: Sequence[tuple[str, bytes]]) -> None:
    """A memory's body vector and its chunks (text hash, vector), in order."""
    conn.execute("INSERT INTO memory_vec(rowid, embedding) VALUES (?, ?)", (rowid, body_blob))
    density.note_insert(conn, rowid, body_blob)
    for seq, (key, blob) in enumerate(chunk_pairs):
        conn.execute("INSERT INTO chunks(memory_rowid, seq, text_hash) VALUES (?, ?, ?)", (rowid, seq, key))
        conn.execute("INSERT INTO chunk_vec(rowid, embedding) VALUES (?, ?)", (conn.last_insert_rowid(), blob))


def delete(conn: apsw.Connection, memory_rowid: int) -> tuple[int, int, int]:
    """Drop a memory's vector, chunks and chunk vectors: (vectors, chunks, chunk vectors)."""
    vectors = chunk_vectors = 0
    chunk_rowids = [r[0] for r in conn.execute("SELECT rowid FROM chunks WHERE memory_rowid = ?", (memory_rowid,))]
    if _has_table(conn, "memory_vec"):
        density.note_delete(conn, memory_rowid)
        # vec0 tables do not support DELETE ... RETURNING: count, then delete.
        vectors = _count(conn, "SELECT count(*) FROM memory_vec WHERE rowid = ?", memory_rowid)
        conn.execute("DELETE FROM memory_vec WHERE rowid = ?", (memory_rowid,))
        for rowid in chunk_rowids:
            chunk_vectors += _count(conn, "SELECT count(*) FROM chunk_vec WHERE rowid = ?", rowid)
            conn.execute("DELETE FROM chunk_vec WHERE rowid = ?", (rowid,))
    conn.execute("DELETE FROM chunks WHERE memory_rowid = ?", (memory_rowid,))
    return vectors, len(chunk_rowids), chunk_vectors


def chunk_keys(conn: apsw.Connection, memory_rowid: int) -> list[str]:
    """The text hashes of a memory's chunks."""
    return [str(r[0]) for r in conn.execute("SELECT text_hash FROM chunks WHERE memory_rowid = ?", (memory_rowid,))]


def knn(conn: apsw.Connection, blob: bytes, k: int) -> dict[int, float]:
    """sqlite-vec's own k-nearest search, by body and by chunk: memory rowid -> cosine."""
    sims: dict[int, float] = {}
    for rowid, dist in conn.execute(
        "SELECT rowid, distance FROM memory_vec WHERE embedding MATCH ? AND k = ?", (blob, k)
    ):
        sims[int(rowid)] = 1.0 - float(dist)
    for mrow, dist in conn.execute(
        "SELECT c.memory_rowid, v.distance FROM "
        "(SELECT rowid, distance FROM chunk_vec WHERE embedding MATCH ? AND k = ?) v "
        "JOIN chunks c ON c.rowid = v.rowid",
        (blob, k),
    ):
        if 1.0 - float(dist) > sims.get(int(mrow), -2.0):
            sims[int(mrow)] = 1.0 - float(dist)
    return dict(sorted(sims.items(), key=lambda kv: -kv[1])[:k])


def scan(conn: apsw.Connection, blob: bytes, filters: Filters, k: int) -> dict[int, float]:
    """Exact top ``k`` by cosine among the memories (and chunks) passing the filters."""
    where, params = _where(filters)
    sims: dict[int, float] = {}
    for sql in (
        "SELECT m.rowid, vec_distance_cosine(v.embedding, ?) FROM memories m "
        f"JOIN memory_vec v ON v.rowid = m.rowid WHERE {where}",
        "SELECT m.rowid, vec_distance_cosine(v.embedding, ?) FROM memories m "
        f"JOIN chunks c ON c.memory_rowid = m.rowid JOIN chunk_vec v ON v.rowid = c.rowid WHERE {where}",
    ):
        for rowid, dist in conn.execute(sql, (blob, *params)):
            if 1.0 - float(dist) > sims.get(int(rowid), -2.0):
                sims[int(rowid)] = 1.0 - float(dist)
    return dict(sorted(sims.items(), key=lambda kv: -kv[1])[:k])


def vectors_of(conn: apsw.Connection, rowids: Sequence[int]) -> list[RowVector]:
    """(memory rowid, vector) of these memories' bodies and chunks."""
    marks = _marks(len(rowids))
    out: list[RowVector] = []
    for sql in (
        f"SELECT rowid, embedding FROM memory_vec WHERE rowid IN ({marks})",
        "SELECT c.memory_rowid, v.embedding FROM chunks c JOIN chunk_vec v ON v.rowid = c.rowid "
        f"WHERE c.memory_rowid IN ({marks})",
    ):
        out.extend(RowVector(int(r), bytes(b)) for r, b in conn.execute(sql, list(rowids)))
    return out


def all_memory_vectors(conn: apsw.Connection) -> list[OwnedVector]:
    return [OwnedVector(int(r), int(r), b) for r, b in conn.execute("SELECT rowid, embedding FROM memory_vec")]


def all_chunk_vectors(conn: apsw.Connection) -> list[OwnedVector]:
    return [
        OwnedVector(int(r), int(o), b)
        for r, o, b in conn.execute(
            "SELECT c.rowid, c.memory_rowid, v.embedding FROM chunks c JOIN chunk_vec v ON v.rowid = c.rowid"
        )
    ]


def memory_vectors_of(conn: apsw.Connection, rowids: Sequence[int]) -> list[OwnedVector]:
    # Through memories: vec0 scans for "rowid IN (...)" but looks a joined
    # "rowid = ?" up in its index (one add's row: 0.1 vs 1.3 ms at 10k).
    return [
        OwnedVector(int(r), int(r), b)
        for r, b in conn.execute(
            "SELECT m.rowid, v.embedding FROM memories m JOIN memory_vec v ON v.rowid = m.rowid "
            f"WHERE m.rowid IN ({_marks(len(rowids))})",
            list(rowids),
        )
    ]


def chunk_vectors_of(conn: apsw.Connection, chunk_rowids: Sequence[int]) -> list[OwnedVector]:
    return [
        OwnedVector(int(r), int(o), b)
        for r, o, b in conn.execute(
            "SELECT c.rowid, c.memory_rowid, v.embedding FROM chunks c JOIN chunk_vec v ON v.rowid = c.rowid "
            f"WHERE c.rowid IN ({_marks(len(chunk_rowids))})",
            list(chunk_rowids),
        )
    ]


def knn_bodies(conn: apsw.Connection, blob: bytes, k: int) -> dict[int, float]:
    """sqlite-vec's k-nearest memories by body vector alone: memory rowid -> cosine."""
    return {
        int(rowid): 1.0 - float(dist)
        for rowid, dist in conn.execute(
            "SELECT rowid, distance FROM memory_vec WHERE embedding MATCH ? AND k = ?", (blob, k)
        )
    }


# Each vector table and the table its rowids point into.
_OWNERS = (("memory_vec", "memories"), ("chunk_vec", "chunks"))


def orphan_count(conn: apsw.Connection) -> int:
    """Vectors whose memory or chunk row is gone (a crash between the two writes)."""
    total = 0
    for table, owner in _OWNERS:
        row = conn.execute(f"SELECT count(*) FROM {table} WHERE rowid NOT IN (SELECT rowid FROM {owner})").fetchone()
        total += int(row[0] or 0) if row else 0
    return total


def remove_orphans(conn: apsw.Connection) -> int:
    """Delete those vectors (caller holds the write transaction); returns how many."""
    removed = 0
    for table, owner in _OWNERS:
        stray = [r[0] for r in conn.execute(f"SELECT rowid FROM {table} WHERE rowid NOT IN (SELECT rowid FROM {owner})")]
        conn.executemany(f"DELETE FROM {table} WHERE rowid = ?", [(r,) for r in stray])
        removed += len(stray)
    if removed:
        density.recompute_all(conn)
    return removed


def body_vectors(conn: apsw.Connection, rowids: Sequence[int]) -> dict[int, bytes]:
    """These memories' body vectors (the missing left out)."""
    # One point lookup per row: vec0 answers "rowid = ?" from its index but
    # scans for "rowid IN (...)" (measured: 20 rows 0.1 ms vs 1.3 ms at 10k).
    out: dict[int, bytes] = {}
    for rowid in rowids:
        row = conn.execute("SELECT embedding FROM memory_vec WHERE rowid = ?", (rowid,)).fetchone()
        if row is not None:
            out[rowid] = bytes(row[0])
    return out
