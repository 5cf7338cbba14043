"""What the features read from ``memories`` (and its neighbours) to decide.

Dedup (:mod:`memex.dedup`), erasure (:mod:`memex.erase`), consolidation,
the watcher and ``doctor`` / ``stats`` each select memories their own way;
their statements live here, beside the table they read, and return named
rows. The write path and shown rows are :mod:`memex.store.sqlite.memories`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import apsw

from memex.store.rows import DuplicateRow, HashKey, Neighbour, SessionItem, SessionRow, Stats, TargetRow
from memex.text import fts_query


def _marks(n: int) -> str:
    return ",".join("?" * n)


# -- dedup -------------------------------------------------------------------


def exact_duplicate(conn: apsw.Connection, scope: str, body_hash: str, exclude_id: str | None) -> str | None:
    """The id of an active memory of ``scope`` with this body hash (not ``exclude_id``)."""
    row = conn.execute(
        "SELECT id FROM memories WHERE scope = ? AND body_hash = ? AND status = 'active' "
        "AND id IS NOT ? LIMIT 1",
        (scope, body_hash, exclude_id),
    ).fetchone()
    return None if row is None else str(row[0])


def fts_neighbours(
    conn: apsw.Connection, text: str, scope: str, exclude_id: str | None, k: int
) -> list[Neighbour]:
    """The best ``k`` full-text matches of ``text`` among the active memories of ``scope``."""
    match = fts_query(text)
    if match is None:
        return []
    return [
        Neighbour(int(r), str(i), str(b), s)
        for r, i, b, s in conn.execute(
            "SELECT m.rowid, m.id, m.body, m.session FROM memory_fts f JOIN memories m "
            "ON m.rowid = f.rowid WHERE memory_fts MATCH ? AND m.scope = ? "
            "AND m.status = 'active' AND m.id IS NOT ? ORDER BY bm25(memory_fts) LIMIT ?",
            (match, scope, exclude_id, k),
        )
    ]


def neighbours_among(
    conn: apsw.Connection, rowids: Sequence[int], scope: str, exclude_id: str | None
) -> list[Neighbour]:
    """Those of ``rowids`` that are active memories of ``scope`` (not ``exclude_id``)."""
    if not rowids:
        return []
    return [
        Neighbour(int(r), str(i), str(b), s)
        for r, i, b, s in conn.execute(
            f"SELECT rowid, id, body, session FROM memories WHERE rowid IN ({_marks(len(rowids))}) "
            "AND scope = ? AND status = 'active' AND id IS NOT ?",
            (*rowids, scope, exclude_id),
        )
    ]


def session_rowids(conn: apsw.Connection, session: str, scope: str, k: int) -> list[int]:
    """The newest ``k`` active memories of a session in ``scope``."""
    return [
        int(r)
        for (r,) in conn.execute(
            "SELECT rowid FROM memories WHERE session = ? AND scope = ? AND status = 'active' "
            "ORDER BY created DESC LIMIT ?",
            (session, scope, k),
        )
    ]


def session_rows(
    conn: apsw.Connection, session: str, sources: Sequence[str], since: str, k: int, newest_first: bool
) -> list[SessionRow]:
    """Active memories of a session from these sources created at or after ``since``
    (newest first, or oldest first with ties by id)."""
    if not sources:
        return []
    order = "created DESC" if newest_first else "created, id"
    return [
        SessionRow(str(i), str(sc), so, str(c), str(b))
        for i, sc, so, c, b in conn.execute(
            f"SELECT id, scope, source, created, body FROM memories WHERE session = ? AND status = 'active' "
            f"AND source IN ({_marks(len(sources))}) AND created >= ? ORDER BY {order} LIMIT ?",
            (session, *sources, since, k),
        )
    ]


def duplicate_keys(conn: apsw.Connection) -> list[HashKey]:
    """(scope, body hash) held by more than one active memory, oldest first."""
    return [
        HashKey(str(s), str(h))
        for s, h in conn.execute(
            "SELECT scope, body_hash FROM memories WHERE status = 'active' "
            "GROUP BY scope, body_hash HAVING count(*) > 1 ORDER BY scope, min(created)"
        )
    ]


def active_with_hash(conn: apsw.Connection, scope: str, body_hash: str) -> list[DuplicateRow]:
    return [
        DuplicateRow(str(i), float(c), str(cr), str(b))
        for i, c, cr, b in conn.execute(
            "SELECT id, confidence, created, body FROM memories "
            "WHERE scope = ? AND body_hash = ? AND status = 'active'",
            (scope, body_hash),
        )
    ]


# -- erasure -----------------------------------------------------------------


_TARGET = "SELECT rowid, id, path, body, source, source_ref, session, supersedes, superseded_by FROM memories"


def _targets(conn: apsw.Connection, where: str, params: Sequence[Any]) -> list[TargetRow]:
    return [TargetRow._make(r) for r in conn.execute(f"{_TARGET} WHERE {where}", tuple(params))]


def targets_by_id(conn: apsw.Connection, memory_id: str) -> list[TargetRow]:
    return _targets(conn, "id = ?", (memory_id,))


def targets_of_subject(
    conn: apsw.Connection, source: str | None, source_ref: str | None, session: str | None
) -> list[TargetRow]:
    """Memories of one subject (each given part must match): ``source_ref``
    matches itself or ``REF#anchor``."""
    clauses: list[str] = []
    params: list[Any] = []
    if source is not None:
        clauses.append("source = ?")
        params.append(source)
    if source_ref is not None:
        clauses.append("(source_ref = ? OR substr(source_ref, 1, ?) = ?)")
        params += [source_ref, len(source_ref) + 1, source_ref + "#"]
    if session is not None:
        clauses.append("session = ?")
        params.append(session)
    if not clauses:
        raise ValueError("a subject needs a source, a source_ref or a session")
    return _targets(conn, " AND ".join(clauses), params)


def targets_from_ref(conn: apsw.Connection, ref: str) -> list[TargetRow]:
    """Memories whose ``source_ref`` is ``ref`` or ``ref#anchor``."""
    return _targets(conn, "source_ref = ? OR substr(source_ref, 1, ?) = ?", (ref, len(ref) + 1, ref + "#"))


def supersede_children(conn: apsw.Connection, ids: Sequence[str]) -> list[TargetRow]:
    """Memories (not among ``ids``) that supersede one of them or are named as their successor."""
    marks = _marks(len(ids))
    return _targets(
        conn,
        f"id NOT IN ({marks}) AND (supersedes IN ({marks}) OR id IN "
        f"(SELECT superseded_by FROM memories WHERE id IN ({marks})))",
        tuple(ids) * 3,
    )


def superseded_by(conn: apsw.Connection, memory_id: str) -> set[str]:
    """Ids of the memories that name ``memory_id`` as their successor."""
    return {str(r[0]) for r in conn.execute("SELECT id FROM memories WHERE superseded_by = ?", (memory_id,))}


def has_id(conn: apsw.Connection, memory_id: str) -> bool:
    return conn.execute("SELECT 1 FROM memories WHERE id = ?", (memory_id,)).fetchone() is not None


def targets_containing(conn: apsw.Connection, word: str | None) -> list[TargetRow]:
    """Memories whose body holds ``word`` (ASCII case folded); every memory for None."""
    if word is None:
        return [TargetRow._make(r) for r in conn.execute(_TARGET)]
    return _targets(conn, "body LIKE ?", (f"%{word}%",))


# -- consolidation -------------------------------------------------------------


def session_items(conn: apsw.Connection, session: str, scope: str | None) -> list[SessionItem]:
    """The active memories of a session (of ``scope``), oldest first."""
    sql = (
        "SELECT m.rowid, m.id, m.body, m.scope, m.category, m.confidence, m.created, "
        "COALESCE(u.access_count, 0) FROM memories m LEFT JOIN usage u ON u.memory_id = m.id "
        "WHERE m.session = ? AND m.status = 'active'"
    )
    params: list[Any] = [session]
    if scope is not None:
        sql += " AND m.scope = ?"
        params.append(scope)
    sql += " ORDER BY m.created, m.id"
    return [
        SessionItem(int(r[0]), str(r[1]), str(r[2]), str(r[3]), r[4], float(r[5]), str(r[6]), int(r[7]))
        for r in conn.execute(sql, params)
    ]


def active_sessions(conn: apsw.Connection, scope: str | None) -> list[str]:
    """Sessions with an active memory (of ``scope``), sorted."""
    sql = "SELECT DISTINCT session FROM memories WHERE session IS NOT NULL AND status = 'active'"
    params: list[Any] = []
    if scope is not None:
        sql += " AND scope = ?"
        params.append(scope)
    return sorted(str(r[0]) for r in conn.execute(sql + " ORDER BY session", params))


# -- the watcher, doctor, stats --------------------------------------------------


def has_path(conn: apsw.Connection, path: str) -> bool:
    return conn.execute("SELECT 1 FROM memories WHERE path = ?", (path,)).fetchone() is not None


def known_paths(conn: apsw.Connection) -> list[str]:
    """Paths the index has a row or a recorded error for."""
    return [str(r[0]) for r in conn.execute("SELECT path FROM memories UNION SELECT path FROM index_errors")]


def is_empty(conn: apsw.Connection) -> bool:
    return conn.execute("SELECT 1 FROM memories LIMIT 1").fetchone() is None


def _count(conn: apsw.Connection, sql: str) -> int:
    row = conn.execute(sql).fetchone()
    return int(row[0] or 0) if row else 0


def memory_count(conn: apsw.Connection) -> int:
    return _count(conn, "SELECT count(*) FROM memories")


def stats(conn: apsw.Connection) -> Stats:
    return Stats(
        {str(s): int(n) for s, n in conn.execute("SELECT status, count(*) FROM memories GROUP BY status")},
        {
            str(s): int(n)
            for s, n in conn.execute("SELECT scope, count(*) FROM memories GROUP BY scope ORDER BY 2 DESC")
        },
        _count(conn, "SELECT count(*) FROM memories WHERE embedded = 1"),
        _count(conn, "SELECT count(*) FROM chunks"),
        _count(conn, "SELECT count(*) FROM entities"),
        _count(conn, "SELECT count(*) FROM embedding_cache"),
        _count(conn, "SELECT count(*) FROM index_errors"),
    )
