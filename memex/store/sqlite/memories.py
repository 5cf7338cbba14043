"""Memory rows and their full-text entries: ``memories``, ``memory_fts``, ``index_errors``.

A memory's row holds the columns :data:`memex.fields.ROW_COLUMNS` names
(from the :class:`memex.records.Record` of its file); its FTS5 entry, keyed
by the same rowid, holds the pre-tokenized text (:func:`memex.text.fts_document`).
Rows leave the store as :class:`memex.store.rows.MemoryRow` (what a shown
memory reads) or :class:`memex.store.rows.SyncRow` (what a sync compares with
the file); :class:`memex.store.rows.Filters` narrows reads the way ``search``
and ``list`` do (:mod:`memex.store.sqlite.filters`). Writing a memory with
its vectors and links is :func:`write_memory`; purging it is
:func:`memex.store.sqlite.purge.purge_memory`.
"""

from __future__ import annotations

import os
from operator import attrgetter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import apsw

from memex.fields import HIT_FIELDS, ROW_COLUMNS
from memex.store import facts
from memex.store.rows import (
    BodyRow, EmbedState, ErrorRow, Filters, Located, MemoryRow, ScopeRow, Scored, SyncRow, Vectors, body_cache_keys,
    like_prefix,
)
from memex.store.sqlite import cache, entities, vectors
from memex.store.sqlite.filters import marks as _marks
from memex.store.sqlite.filters import where as _where
from memex.text import fts_query, text_key

if TYPE_CHECKING:  # records imports the scope rules, which read the store
    from memex.records import Record

_BATCH = 500  # values per IN (...) list


_SHOWN = ", ".join(f"m.{c}" for c in ("rowid", *HIT_FIELDS))
_SYNC = "rowid, id, size, mtime_ns, file_hash, embedded, racy"


# -- reading shown rows -----------------------------------------------------


def rows_by_rowids(conn: apsw.Connection, rowids: Sequence[int]) -> dict[int, MemoryRow]:
    if not rowids:
        return {}
    sql = f"SELECT {_SHOWN} FROM memories m WHERE m.rowid IN ({_marks(len(rowids))})"
    return {int(r[0]): MemoryRow._make(r) for r in conn.execute(sql, list(rowids))}


def row_by_id(conn: apsw.Connection, memory_id: str) -> MemoryRow | None:
    r = conn.execute(f"SELECT {_SHOWN} FROM memories m WHERE m.id = ?", (memory_id,)).fetchone()
    return None if r is None else MemoryRow._make(r)


def ids_with_prefix(conn: apsw.Connection, prefix: str, limit: int) -> list[str]:
    """Ids that begin with ``prefix``, ignoring ASCII case (SQLite's LIKE), in order.
    One pass over the id index; only asked after an exact id found nothing."""
    sql = "SELECT id FROM memories WHERE id LIKE ? ESCAPE '\\' ORDER BY id LIMIT ?"
    return [str(r[0]) for r in conn.execute(sql, (like_prefix(prefix), limit))]


def list_rows(conn: apsw.Connection, filters: Filters, limit: int | None = None) -> list[MemoryRow]:
    """Rows passing the filters, newest first (ties by id)."""
    where, params = _where(filters)
    sql = f"SELECT {_SHOWN} FROM memories m WHERE {where} ORDER BY m.created DESC, m.id"
    if limit is not None:
        sql += " LIMIT ?"
        params.append(min(limit, 2**63 - 1))  # SQLite's largest integer: more than any vault holds
    return [MemoryRow._make(r) for r in conn.execute(sql, params)]


def text_column(conn: apsw.Connection, column: str, rowids: Sequence[int]) -> dict[int, str]:
    """One text column (``created``, ``body``) of these memories."""
    if column not in ("created", "body"):
        raise ValueError(f"not a text column memex reads alone: {column}")
    if not rowids:
        return {}
    sql = f"SELECT rowid, {column} FROM memories WHERE rowid IN ({_marks(len(rowids))})"
    return {int(r): str(c) for r, c in conn.execute(sql, list(rowids))}


def rowids_by_ids(conn: apsw.Connection, ids: Sequence[str]) -> dict[str, int]:
    if not ids:
        return {}
    sql = f"SELECT rowid, id FROM memories WHERE id IN ({_marks(len(ids))})"
    return {str(i): int(r) for r, i in conn.execute(sql, list(ids))}


def passing(conn: apsw.Connection, rowids: Sequence[int], filters: Filters) -> set[int]:
    """Which of these rowids pass the filters."""
    if not rowids:
        return set()
    where, params = _where(filters)
    sql = f"SELECT m.rowid FROM memories m WHERE m.rowid IN ({_marks(len(rowids))}) AND {where}"
    return {int(r[0]) for r in conn.execute(sql, (*rowids, *params))}


def all_passing(conn: apsw.Connection, filters: Filters) -> list[int]:
    """Every rowid passing the filters."""
    where, params = _where(filters)
    return [int(r[0]) for r in conn.execute(f"SELECT m.rowid FROM memories m WHERE {where}", params)]


def scope_in_use(conn: apsw.Connection, scope: str) -> bool:
    return conn.execute("SELECT 1 FROM memories WHERE scope = ? LIMIT 1", (scope,)).fetchone() is not None


def path_scopes(conn: apsw.Connection) -> list[ScopeRow]:
    """(path, scope) of every memory, by path."""
    return [ScopeRow(str(p), str(s)) for p, s in conn.execute("SELECT path, scope FROM memories ORDER BY path")]


def bodies(conn: apsw.Connection) -> list[BodyRow]:
    """(rowid, id, path, body) of every memory."""
    return [
        BodyRow(int(r), str(i), str(p), str(b)) for r, i, p, b in conn.execute("SELECT rowid, id, path, body FROM memories")
    ]


# -- full-text search -------------------------------------------------------


def fts_top(conn: apsw.Connection, query: str, k: int) -> list[Scored]:
    """The best ``k`` full-text matches of a query by BM25, best first, as
    (rowid, -bm25); none when the query has no words to match."""
    match = fts_query(query)
    if match is None:
        return []
    return [
        Scored._make(row)  # (INTEGER rowid, REAL score) as SQLite gives them
        for row in conn.execute(
            "SELECT rowid, -bm25(memory_fts) FROM memory_fts WHERE memory_fts MATCH ? "
            "ORDER BY bm25(memory_fts) LIMIT ?",
            (match, k),
        )
    ]


def fts_top_passing(conn: apsw.Connection, query: str, filters: Filters, k: int) -> dict[int, float]:
    """The best ``k`` full-text matches that pass the filters, as rowid -> -bm25.

    Every match is joined to its row before the LIMIT: exact, but it looks
    up every match (see memex.search.hybrid for when it is worth it).
    """
    match = fts_query(query)
    if match is None:
        return {}
    where, params = _where(filters)
    rows = conn.execute(
        "WITH f AS MATERIALIZED (SELECT rowid, bm25(memory_fts) AS s FROM memory_fts WHERE memory_fts MATCH ?) "
        f"SELECT f.rowid, -f.s FROM f JOIN memories m ON m.rowid = f.rowid WHERE {where} ORDER BY f.s LIMIT ?",
        (match, *params, k),
    )
    return {int(r): float(s) for r, s in rows}


# -- what a sync compares ---------------------------------------------------


def sync_rows(conn: apsw.Connection) -> dict[str, SyncRow]:
    """Every row by path."""
    # Read last so that the rest of the row is the SyncRow as it comes (one per file: a no-change sync at 10k).
    return {row[-1]: SyncRow._make(row[:-1]) for row in conn.execute(f"SELECT {_SYNC}, path FROM memories")}


def sync_row_at(conn: apsw.Connection, path: str) -> SyncRow | None:
    r = conn.execute(f"SELECT {_SYNC} FROM memories WHERE path = ?", (path,)).fetchone()
    return None if r is None else SyncRow(*r)


def rowid_path_of(conn: apsw.Connection, memory_id: str) -> Located | None:
    """Where the memory with this id is indexed: (rowid, path)."""
    r = conn.execute("SELECT rowid, path FROM memories WHERE id = ?", (memory_id,)).fetchone()
    return None if r is None else Located(int(r[0]), str(r[1]))


def embed_state(conn: apsw.Connection, ids: Sequence[str]) -> dict[str, EmbedState]:
    """Per id: the key of the text its vectors were made from, and whether it has them."""
    out: dict[str, EmbedState] = {}
    for start in range(0, len(ids), _BATCH):
        part = ids[start : start + _BATCH]
        for mid, key, embedded in conn.execute(
            f"SELECT id, embed_key, embedded FROM memories WHERE id IN ({_marks(len(part))})", part
        ):
            out[str(mid)] = EmbedState(key, int(embedded))
    return out


def index_errors(conn: apsw.Connection) -> dict[str, ErrorRow]:
    return {
        str(p): ErrorRow(str(r), s, m)
        for p, r, s, m in conn.execute("SELECT path, reason, size, mtime_ns FROM index_errors")
    }


def drop_index_error(conn: apsw.Connection, path: str) -> list[str]:
    """Forget a path's error; returns the reasons dropped."""
    return [str(r[0]) for r in conn.execute("DELETE FROM index_errors WHERE path = ? RETURNING reason", (path,))]


def record_index_error(conn: apsw.Connection, path: str, reason: str, st: os.stat_result | None) -> None:
    conn.execute(
        "INSERT OR REPLACE INTO index_errors(path, reason, size, mtime_ns) VALUES (?, ?, ?, ?)",
        (path, reason, st.st_size if st else None, st.st_mtime_ns if st else None),
    )


# -- writing ----------------------------------------------------------------


def move_row(conn: apsw.Connection, rowid: int, old_id: str, new_id: str, new_path: str) -> None:
    """The same bytes under a new path (and maybe id): the row moves, keeping
    its vectors and usage."""
    conn.execute("UPDATE usage SET memory_id = ? WHERE memory_id = ?", (new_id, old_id))
    conn.execute("UPDATE memories SET id = ?, path = ? WHERE rowid = ?", (new_id, new_path, rowid))


def touch_row(conn: apsw.Connection, rowid: int, rec: Record) -> None:
    """A file whose bytes did not change: only its stat (and a stat-derived
    ``created``) move."""
    conn.execute(
        "UPDATE memories SET size = ?, mtime_ns = ?, created = ?, racy = ? WHERE rowid = ?",
        (rec.size, rec.mtime_ns, rec.created, int(rec.racy), rowid),
    )
    facts.place(conn.execute, facts.SQLITE, rowid)  # a stat-derived created may move it in its session


# The two columns a record does not hold as such come last (memex/fields.py):
# the rest is read off the record in one attrgetter call per row.
_DERIVED = ("embed_key", "racy")
if ROW_COLUMNS[-len(_DERIVED):] != _DERIVED:
    raise ImportError(f"memex.fields.ROW_COLUMNS must end with {_DERIVED}")
_RECORD_COLUMNS = attrgetter(*ROW_COLUMNS[: -len(_DERIVED)])


def row_values(rec: Record) -> tuple[Any, ...]:
    """The values of :data:`memex.fields.ROW_COLUMNS` for a record."""
    return (*_RECORD_COLUMNS(rec), text_key(rec.embed_text), int(rec.racy))


_COLS = ", ".join(ROW_COLUMNS)
_INSERT = f"INSERT INTO memories({_COLS}, embedded) VALUES ({_marks(len(ROW_COLUMNS) + 1)})"
_UPDATE = f"UPDATE memories SET {', '.join(f'{c} = ?' for c in ROW_COLUMNS)} WHERE rowid = ?"



def write_memory(
    conn: apsw.Connection, rowid: int | None, rec: Record, fts_text: str, vecs: Vectors | None
) -> int:
    """Upsert one memory: its row, FTS entry, vectors and chunks (when given),
    entity links and relations (inside the caller's write transaction).

    ``rowid``: the row it replaces, or None for a new one. Returns its rowid.
    Vectors of text the memory no longer has (an edit, chunks cut by a new
    rule) leave the cache: a later erasure could not find them.
    """
    values = row_values(rec)
    # A fresh row has no old FTS entry, vectors, chunks or links to clear:
    # skipping those statements is most of a cold reindex's SQLite time.
    fresh = rowid is None
    old_keys: set[str] = set()  # where the vectors being replaced are cached
    if rowid is not None:
        if vecs is not None:
            old_keys = vector_cache_keys(conn, rowid)
        conn.execute(_UPDATE, (*values, rowid))
        conn.execute("DELETE FROM memory_fts WHERE rowid = ?", (rowid,))
    else:
        conn.execute(_INSERT, (*values, 1 if vecs is not None else 0))
        rowid = int(conn.last_insert_rowid())
    conn.execute("INSERT INTO memory_fts(rowid, text) VALUES (?, ?)", (rowid, fts_text))
    facts.written(conn.execute, facts.SQLITE, rowid, rec.body)
    if vecs is not None:
        body_blob, chunk_pairs = vecs
        if not fresh:
            vectors.delete(conn, rowid)
        vectors.insert(conn, rowid, body_blob, chunk_pairs)
        if not fresh:
            conn.execute("UPDATE memories SET embedded = 1 WHERE rowid = ?", (rowid,))
            new_keys = {text_key(rec.embed_text), *(k for k, _ in chunk_pairs)}
            cache.drop_unused(conn, old_keys - new_keys)
    entities.write_links(conn, rowid, rec.entities, rec.relations, fresh=fresh)
    return rowid


def vector_cache_keys(conn: apsw.Connection, rowid: int) -> set[str]:
    """Text hashes a memory's vectors may be cached under: its body's, its
    chunks', and those of the body as ``add`` embedded it (body_cache_keys)."""
    keys: set[str] = set()
    for embed_key, body in conn.execute("SELECT embed_key, body FROM memories WHERE rowid = ?", (rowid,)):
        if embed_key:
            keys.add(str(embed_key))
        keys.update(body_cache_keys(str(body)))
    keys.update(vectors.chunk_keys(conn, rowid))
    return keys
