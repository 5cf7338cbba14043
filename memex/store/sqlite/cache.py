"""The embedding cache: ``embedding_cache``, vectors keyed by (model, text hash).

Reads give what is cached for some texts; writes go inside the caller's
write transaction. A memory's purge drops the cached vectors of its texts
that no other memory still uses (:func:`drop_unused`), so an erased text's
vector does not outlive it; :func:`body_cache_keys` names every key its body
may be cached under.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import apsw

from memex.store.rows import CacheRow

_BATCH = 500  # keys per IN (...) list


def get(conn: apsw.Connection, model: str, keys: Sequence[str]) -> dict[str, bytes]:
    """The cached vectors of these text hashes under ``model`` (misses left out)."""
    found: dict[str, bytes] = {}
    for start in range(0, len(keys), _BATCH):
        batch = keys[start : start + _BATCH]
        marks = ",".join("?" * len(batch))
        for key, blob in conn.execute(
            f"SELECT text_hash, vector FROM embedding_cache WHERE model = ? AND text_hash IN ({marks})",
            (model, *batch),
        ):
            found[key] = bytes(blob)
    return found


def put(conn: apsw.Connection, rows: Sequence[CacheRow]) -> None:
    """Store new cache rows (caller holds the write transaction)."""
    if rows:
        conn.executemany(
            "INSERT OR REPLACE INTO embedding_cache(model, text_hash, vector) VALUES (?, ?, ?)", rows
        )


def _text_still_used(conn: apsw.Connection, key: str) -> bool:
    return conn.execute(
        "SELECT 1 FROM chunks WHERE text_hash = ? UNION ALL "
        "SELECT 1 FROM memories WHERE embed_key = ? LIMIT 1",
        (key, key),
    ).fetchone() is not None


def drop_unused(conn: apsw.Connection, keys: Iterable[str]) -> int:
    """Delete the cached vectors of these text hashes that no memory uses; returns how many."""
    dropped = 0
    for key in keys:
        if not _text_still_used(conn, key):
            dropped += len(conn.execute(
                "DELETE FROM embedding_cache WHERE text_hash = ? RETURNING text_hash", (key,)
            ).fetchall())
    return dropped


def count(conn: apsw.Connection) -> int:
    row = conn.execute("SELECT count(*) FROM embedding_cache").fetchone()
    return int(row[0]) if row else 0


