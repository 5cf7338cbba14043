"""Reading rows from the PostgreSQL index: what ``memories.py``, ``vectors.py``,
``usage.py`` and ``entities.py`` answer on SQLite, in PostgreSQL's SQL.

Every function returns the row types of the SQLite families (:class:`MemoryRow`,
:class:`SyncRow`, :class:`OwnedVector`, :class:`DecayRow`, ...), so a caller
cannot tell the backends apart. Text is ordered with ``COLLATE "C"`` (byte
order, as SQLite compares): a database's default collation may order
punctuation and case otherwise, and ``list`` or ``entities`` would then
print another order than on SQLite.

Vectors are read in binary (pgvector's form, :func:`memex.store.postgres.connection.vec_from_binary`)
and leave as float32 blobs, as sqlite-vec gives them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from memex.fields import HIT_FIELDS
from memex.store.rows import (
    BodyRow, DecayRow, EmbedState, Entity, EntityCount, EntityMemory, EntityNeighbour, EntityRelation, ErrorRow,
    Filters, Located, MemoryRow, OwnedVector, RowVector, ScopeRow, SyncRow, Usage, like_prefix,
)
from memex.store.postgres import density
from memex.store.postgres.connection import PgConnection, Vec
from memex.store.postgres.query import PgFilters

_SHOWN = ", ".join(f"m.{c}" for c in ("rowid", *HIT_FIELDS))
_SYNC = "rowid, id, size, mtime_ns, file_hash, embedded, racy"


def _blob(vec: Any) -> bytes:
    return np.ascontiguousarray(vec, dtype=np.float32).tobytes()


def _binary(conn: PgConnection, sql: str, params: Any = None) -> list[Any]:
    """Rows of a statement whose results come in binary (vectors as arrays)."""
    return list(conn.raw.execute(sql, params, binary=True).fetchall())


def _shown(r: Sequence[Any]) -> MemoryRow:
    return MemoryRow._make(r)  # bigint and double precision arrive as int and float


# -- shown rows -----------------------------------------------------------------


def rows_by_rowids(conn: PgConnection, rowids: Sequence[int]) -> dict[int, MemoryRow]:
    if not rowids:
        return {}
    sql = f"SELECT {_SHOWN} FROM memories m WHERE m.rowid = ANY(%s)"
    return {int(r[0]): _shown(r) for r in conn.execute(sql, (list(rowids),))}


def row_by_id(conn: PgConnection, memory_id: str) -> MemoryRow | None:
    r = conn.execute(f"SELECT {_SHOWN} FROM memories m WHERE m.id = %s", (memory_id,)).fetchone()
    return None if r is None else _shown(r)


def ids_with_prefix(conn: PgConnection, prefix: str, limit: int) -> list[str]:
    """Ids that begin with ``prefix``, ignoring case, in order (SQLite's answer)."""
    sql = "SELECT id FROM memories WHERE id ILIKE %s ESCAPE '\\' ORDER BY id COLLATE \"C\" LIMIT %s"
    return [str(r[0]) for r in conn.execute(sql, (like_prefix(prefix), limit))]


def list_rows(conn: PgConnection, filters: Filters, limit: int | None = None) -> list[MemoryRow]:
    """Rows passing the filters, newest first (ties by id)."""
    where, params = PgFilters(filters).sql()
    sql = f'SELECT {_SHOWN} FROM memories m WHERE {where} ORDER BY m.created COLLATE "C" DESC, m.id COLLATE "C"'
    if limit is not None:
        sql += " LIMIT %s"
        params.append(min(limit, 2**63 - 1))
    return [_shown(r) for r in conn.execute(sql, params)]


def text_column(conn: PgConnection, column: str, rowids: Sequence[int]) -> dict[int, str]:
    if column not in ("created", "body"):
        raise ValueError(f"not a text column memex reads alone: {column}")
    if not rowids:
        return {}
    sql = f"SELECT rowid, {column} FROM memories WHERE rowid = ANY(%s)"
    return {int(r): str(c) for r, c in conn.execute(sql, (list(rowids),))}


def passing(conn: PgConnection, rowids: Sequence[int], filters: Filters) -> set[int]:
    if not rowids:
        return set()
    where, params = PgFilters(filters).sql()
    sql = f"SELECT m.rowid FROM memories m WHERE m.rowid = ANY(%s) AND {where}"
    return {int(r[0]) for r in conn.execute(sql, (list(rowids), *params))}


def all_passing(conn: PgConnection, filters: Filters) -> list[int]:
    where, params = PgFilters(filters).sql()
    return [int(r[0]) for r in conn.execute(f"SELECT m.rowid FROM memories m WHERE {where}", params)]


def scope_in_use(conn: PgConnection, scope: str) -> bool:
    return conn.execute("SELECT 1 FROM memories WHERE scope = %s LIMIT 1", (scope,)).fetchone() is not None


def path_scopes(conn: PgConnection) -> list[ScopeRow]:
    return [ScopeRow(str(p), str(s)) for p, s in conn.execute('SELECT path, scope FROM memories ORDER BY path COLLATE "C"')]


def bodies(conn: PgConnection) -> list[BodyRow]:
    return [
        BodyRow(int(r), str(i), str(p), str(b)) for r, i, p, b in conn.execute("SELECT rowid, id, path, body FROM memories")
    ]


# -- what a sync compares -----------------------------------------------------------


def _sync(r: Sequence[Any]) -> SyncRow:
    return SyncRow(int(r[0]), str(r[1]), int(r[2]), int(r[3]), str(r[4]), int(r[5]), int(r[6]))


def sync_rows(conn: PgConnection) -> dict[str, SyncRow]:
    return {str(r[-1]): _sync(r) for r in conn.execute(f"SELECT {_SYNC}, path FROM memories")}


def sync_row_at(conn: PgConnection, path: str) -> SyncRow | None:
    r = conn.execute(f"SELECT {_SYNC} FROM memories WHERE path = %s", (path,)).fetchone()
    return None if r is None else _sync(r)


def rowid_path_of(conn: PgConnection, memory_id: str) -> Located | None:
    r = conn.execute("SELECT rowid, path FROM memories WHERE id = %s", (memory_id,)).fetchone()
    return None if r is None else Located(int(r[0]), str(r[1]))


def embed_state(conn: PgConnection, ids: Sequence[str]) -> dict[str, EmbedState]:
    if not ids:
        return {}
    return {
        str(i): EmbedState(None if k is None else str(k), int(e))
        for i, k, e in conn.execute("SELECT id, embed_key, embedded FROM memories WHERE id = ANY(%s)", (list(ids),))
    }


def index_errors(conn: PgConnection) -> dict[str, ErrorRow]:
    return {
        str(p): ErrorRow(str(r), None if s is None else int(s), None if m is None else int(m))
        for p, r, s, m in conn.execute("SELECT path, reason, size, mtime_ns FROM index_errors")
    }


# -- vectors ----------------------------------------------------------------------------


def knn(conn: PgConnection, blob: bytes, k: int, chunks: bool = True) -> dict[int, float]:
    """The ``k`` nearest memories by body (and by chunk) over the HNSW indexes, any status."""
    vec = Vec(blob)
    sims: dict[int, float] = {}
    sqls = ["SELECT rowid, embedding <=> %s AS d FROM memory_vec ORDER BY d LIMIT %s"]
    if chunks:
        sqls.append(
            "SELECT c.memory_rowid, v.d FROM (SELECT rowid, embedding <=> %s AS d FROM chunk_vec ORDER BY d LIMIT %s) v "
            "JOIN chunks c ON c.rowid = v.rowid"
        )
    for sql in sqls:
        for rowid, dist in conn.execute(sql, (vec, k)):
            sim = 1.0 - float(dist)
            if sim > sims.get(int(rowid), -2.0):
                sims[int(rowid)] = sim
    return dict(sorted(sims.items(), key=lambda kv: -kv[1])[:k])


def scan(conn: PgConnection, blob: bytes, filters: Filters, k: int) -> dict[int, float]:
    """Exact top ``k`` by cosine among the memories (and chunks) passing the filters:
    no ORDER BY on the distance, so the planner computes every one (no HNSW)."""
    where, params = PgFilters(filters).sql()
    vec = Vec(blob)
    sims: dict[int, float] = {}
    for sql in (
        f"SELECT m.rowid, v.embedding <=> %s FROM memories m JOIN memory_vec v ON v.rowid = m.rowid WHERE {where}",
        "SELECT m.rowid, v.embedding <=> %s FROM memories m JOIN chunks c ON c.memory_rowid = m.rowid "
        f"JOIN chunk_vec v ON v.rowid = c.rowid WHERE {where}",
    ):
        for rowid, dist in conn.execute(sql, (vec, *params)):
            if 1.0 - float(dist) > sims.get(int(rowid), -2.0):
                sims[int(rowid)] = 1.0 - float(dist)
    return dict(sorted(sims.items(), key=lambda kv: -kv[1])[:k])


def vectors_of(conn: PgConnection, rowids: Sequence[int]) -> list[RowVector]:
    out: list[RowVector] = []
    for sql in (
        "SELECT rowid, embedding FROM memory_vec WHERE rowid = ANY(%s)",
        "SELECT c.memory_rowid, v.embedding FROM chunks c JOIN chunk_vec v ON v.rowid = c.rowid "
        "WHERE c.memory_rowid = ANY(%s)",
    ):
        out.extend(RowVector(int(r), _blob(v)) for r, v in _binary(conn, sql, (list(rowids),)))
    return out


def memory_vectors_of(conn: PgConnection, rowids: Sequence[int]) -> list[OwnedVector]:
    rows = _binary(conn, "SELECT rowid, embedding FROM memory_vec WHERE rowid = ANY(%s)", (list(rowids),))
    return [OwnedVector(int(r), int(r), _blob(v)) for r, v in rows]


def body_vectors(conn: PgConnection, rowids: Sequence[int]) -> dict[int, bytes]:
    return {int(r): _blob(v) for r, v in _binary(
        conn, "SELECT rowid, embedding FROM memory_vec WHERE rowid = ANY(%s)", (list(rowids),)
    )}


def all_memory_vectors(conn: PgConnection) -> list[OwnedVector]:
    return [OwnedVector(int(r), int(r), _blob(v)) for r, v in _binary(conn, "SELECT rowid, embedding FROM memory_vec")]


def all_chunk_vectors(conn: PgConnection) -> list[OwnedVector]:
    return [
        OwnedVector(int(r), int(o), _blob(v))
        for r, o, v in _binary(
            conn, "SELECT c.rowid, c.memory_rowid, v.embedding FROM chunks c JOIN chunk_vec v ON v.rowid = c.rowid"
        )
    ]


_OWNERS = (("memory_vec", "memories"), ("chunk_vec", "chunks"))


def orphan_vectors(conn: PgConnection) -> int:
    return sum(
        int(conn.execute(
            f"SELECT count(*) FROM {table} v WHERE NOT EXISTS (SELECT 1 FROM {owner} o WHERE o.rowid = v.rowid)"
        ).fetchone()[0])
        for table, owner in _OWNERS
    )


def remove_orphan_vectors(conn: PgConnection) -> int:
    removed = sum(
        int(conn.execute(
            f"DELETE FROM {table} v WHERE NOT EXISTS (SELECT 1 FROM {owner} o WHERE o.rowid = v.rowid)"
        ).rowcount)
        for table, owner in _OWNERS
    )
    if removed:  # deleted without notes: every neighbour list is computed again, as on SQLite
        density.recompute_all(conn)
    return removed


# -- recall counts --------------------------------------------------------------------


def usage_of(conn: PgConnection, memory_id: str) -> Usage:
    row = conn.execute("SELECT access_count, last_access FROM usage WHERE memory_id = %s", (memory_id,)).fetchone()
    return Usage(0, None) if row is None else Usage(int(row[0] or 0), None if row[1] is None else str(row[1]))


_DECAY = (
    "SELECT m.id, m.scope, m.category, m.confidence, m.created, u.last_access, m.body "
    "FROM memories m LEFT JOIN usage u ON u.memory_id = m.id"
)


def _decay(r: Sequence[Any]) -> DecayRow:
    mid, scope, category, conf, created, last, body = r
    return DecayRow(
        str(mid), str(scope), None if category is None else str(category), float(conf),
        str(created), None if last is None else str(last), str(body),
    )


def decay_row(conn: PgConnection, memory_id: str) -> DecayRow | None:
    row = conn.execute(f"{_DECAY} WHERE m.id = %s", (memory_id,)).fetchone()
    return None if row is None else _decay(row)


def active_decay_rows(conn: PgConnection, scope: str | None = None) -> list[DecayRow]:
    if scope is None:
        return [_decay(r) for r in conn.execute(f"{_DECAY} WHERE m.status = 'active'")]
    return [_decay(r) for r in conn.execute(f"{_DECAY} WHERE m.status = 'active' AND m.scope = %s", (scope,))]


# -- entities ----------------------------------------------------------------------------


def entity_counts(conn: PgConnection) -> list[EntityCount]:
    rows = conn.execute(
        """
        SELECT e.name,
               count(DISTINCT l.memory_rowid),
               count(DISTINCT CASE WHEN m.status = 'active' THEN l.memory_rowid END),
               (SELECT count(*) FROM relations r WHERE r.subject_rowid = e.rowid OR r.object_rowid = e.rowid)
        FROM entities e
        LEFT JOIN entity_links l ON l.entity_rowid = e.rowid
        LEFT JOIN memories m ON m.rowid = l.memory_rowid
        GROUP BY e.rowid
        ORDER BY 2 DESC, e.key COLLATE "C"
        """
    ).fetchall()
    return [EntityCount(str(n), int(c), int(a), int(r)) for n, c, a, r in rows]


def find_entity(conn: PgConnection, key: str) -> Entity | None:
    row = conn.execute("SELECT rowid, name FROM entities WHERE key = %s", (key,)).fetchone()
    return None if row is None else Entity(int(row[0]), str(row[1]))


def entity_memories(conn: PgConnection, entity_rowid: int) -> list[EntityMemory]:
    return [
        EntityMemory(str(i), str(s), str(st), str(b))
        for i, s, st, b in conn.execute(
            "SELECT m.id, m.scope, m.status, m.body FROM entity_links l JOIN memories m "
            'ON m.rowid = l.memory_rowid WHERE l.entity_rowid = %s ORDER BY m.created COLLATE "C" DESC, m.id COLLATE "C"',
            (entity_rowid,),
        )
    ]


def entity_relations(conn: PgConnection, entity_rowid: int) -> list[EntityRelation]:
    return [
        EntityRelation(str(s), str(p), str(o), str(mid))
        for s, p, o, mid in conn.execute(
            "SELECT es.name, r.predicate, eo.name, m.id FROM relations r "
            "JOIN entities es ON es.rowid = r.subject_rowid JOIN entities eo ON eo.rowid = r.object_rowid "
            "JOIN memories m ON m.rowid = r.memory_rowid WHERE r.subject_rowid = %s OR r.object_rowid = %s "
            'ORDER BY es.key COLLATE "C", r.predicate COLLATE "C", eo.key COLLATE "C"',
            (entity_rowid, entity_rowid),
        )
    ]


def entity_neighbours(conn: PgConnection, entity_rowid: int) -> list[EntityNeighbour]:
    return [
        EntityNeighbour(str(n), int(c))
        for n, c in conn.execute(
            "SELECT e.name, count(DISTINCT l2.memory_rowid) FROM entity_links l1 "
            "JOIN entity_links l2 ON l2.memory_rowid = l1.memory_rowid AND l2.entity_rowid != l1.entity_rowid "
            "JOIN entities e ON e.rowid = l2.entity_rowid WHERE l1.entity_rowid = %s "
            'GROUP BY e.rowid ORDER BY 2 DESC, e.key COLLATE "C"',
            (entity_rowid,),
        )
    ]
