"""What the features select from the PostgreSQL index to decide: dedup's
neighbours, erasure's targets, consolidation's session items, ``stats``.

The statements of :mod:`memex.store.sqlite.queries`, in PostgreSQL's SQL
(``IS DISTINCT FROM`` for SQLite's ``IS NOT``, ``= ANY`` for ``IN``, byte
order for text as SQLite sorts it), returning the same named rows.
Full-text neighbours rank by the same BM25 as search (:func:`memex.store.postgres.query.bm25_top`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memex.store.postgres.connection import PgConnection
from memex.store.postgres.query import bm25_top
from memex.store.rows import DuplicateRow, Filters, HashKey, Neighbour, SessionItem, SessionRow, Stats, TargetRow

# -- dedup ---------------------------------------------------------------------------


def exact_duplicate(conn: PgConnection, scope: str, body_hash: str, exclude_id: str | None) -> str | None:
    row = conn.execute(
        "SELECT id FROM memories WHERE scope = %s AND body_hash = %s AND status = 'active' "
        "AND id IS DISTINCT FROM %s LIMIT 1",
        (scope, body_hash, exclude_id),
    ).fetchone()
    return None if row is None else str(row[0])


def fts_neighbours(conn: PgConnection, text: str, scope: str, exclude_id: str | None, k: int) -> list[Neighbour]:
    """The best ``k`` full-text matches of ``text`` among the active memories of ``scope``, best first."""
    top = bm25_top(conn, text, Filters((scope,)), k + (1 if exclude_id else 0))
    if not top:
        return []
    found = {
        int(r): Neighbour(int(r), str(i), str(b), s)
        for r, i, b, s in conn.execute(
            "SELECT rowid, id, body, session FROM memories WHERE rowid = ANY(%s) AND id IS DISTINCT FROM %s",
            (list(top), exclude_id),
        )
    }
    return [found[r] for r in top if r in found][:k]


def neighbours_among(conn: PgConnection, rowids: Sequence[int], scope: str, exclude_id: str | None) -> list[Neighbour]:
    if not rowids:
        return []
    return [
        Neighbour(int(r), str(i), str(b), s)
        for r, i, b, s in conn.execute(
            "SELECT rowid, id, body, session FROM memories WHERE rowid = ANY(%s) "
            "AND scope = %s AND status = 'active' AND id IS DISTINCT FROM %s",
            (list(rowids), scope, exclude_id),
        )
    ]


def session_rowids(conn: PgConnection, session: str, scope: str, k: int) -> list[int]:
    return [
        int(r)
        for (r,) in conn.execute(
            "SELECT rowid FROM memories WHERE session = %s AND scope = %s AND status = 'active' "
            'ORDER BY created COLLATE "C" DESC LIMIT %s',
            (session, scope, k),
        )
    ]


def session_rows(
    conn: PgConnection, session: str, sources: Sequence[str], since: str, k: int, newest_first: bool
) -> list[SessionRow]:
    if not sources:
        return []
    order = 'created COLLATE "C" DESC' if newest_first else 'created COLLATE "C", id COLLATE "C"'
    return [
        SessionRow(str(i), str(sc), so, str(c), str(b))
        for i, sc, so, c, b in conn.execute(
            "SELECT id, scope, source, created, body FROM memories WHERE session = %s AND status = 'active' "
            f'AND source = ANY(%s) AND created COLLATE "C" >= %s ORDER BY {order} LIMIT %s',
            (session, list(sources), since, k),
        )
    ]


def duplicate_keys(conn: PgConnection) -> list[HashKey]:
    return [
        HashKey(str(s), str(h))
        for s, h in conn.execute(
            "SELECT scope, body_hash FROM memories WHERE status = 'active' "
            'GROUP BY scope, body_hash HAVING count(*) > 1 ORDER BY scope COLLATE "C", min(created COLLATE "C")'
        )
    ]


def active_with_hash(conn: PgConnection, scope: str, body_hash: str) -> list[DuplicateRow]:
    return [
        DuplicateRow(str(i), float(c), str(cr), str(b))
        for i, c, cr, b in conn.execute(
            "SELECT id, confidence, created, body FROM memories WHERE scope = %s AND body_hash = %s "
            "AND status = 'active'",
            (scope, body_hash),
        )
    ]


# -- erasure -------------------------------------------------------------------------

_TARGET = "SELECT rowid, id, path, body, source, source_ref, session, supersedes, superseded_by FROM memories"


def _targets(conn: PgConnection, where: str, params: Sequence[Any]) -> list[TargetRow]:
    return [TargetRow(int(r[0]), *r[1:]) for r in conn.execute(f"{_TARGET} WHERE {where}", tuple(params))]


def targets_by_id(conn: PgConnection, memory_id: str) -> list[TargetRow]:
    return _targets(conn, "id = %s", (memory_id,))


def _ref_clause(ref: str) -> tuple[str, list[Any]]:
    return "(source_ref = %s OR substr(source_ref, 1, %s) = %s)", [ref, len(ref) + 1, ref + "#"]


def targets_of_subject(
    conn: PgConnection, source: str | None, source_ref: str | None, session: str | None
) -> list[TargetRow]:
    clauses: list[str] = []
    params: list[Any] = []
    if source is not None:
        clauses.append("source = %s")
        params.append(source)
    if source_ref is not None:
        clause, more = _ref_clause(source_ref)
        clauses.append(clause)
        params += more
    if session is not None:
        clauses.append("session = %s")
        params.append(session)
    if not clauses:
        raise ValueError("a subject needs a source, a source_ref or a session")
    return _targets(conn, " AND ".join(clauses), params)


def targets_from_ref(conn: PgConnection, ref: str) -> list[TargetRow]:
    clause, params = _ref_clause(ref)
    return _targets(conn, clause, params)


def supersede_children(conn: PgConnection, ids: Sequence[str]) -> list[TargetRow]:
    wanted = list(ids)
    return _targets(
        conn,
        "NOT (id = ANY(%s)) AND (supersedes = ANY(%s) OR id IN "
        "(SELECT superseded_by FROM memories WHERE id = ANY(%s)))",
        (wanted, wanted, wanted),
    )


def superseded_by(conn: PgConnection, memory_id: str) -> set[str]:
    return {str(r[0]) for r in conn.execute("SELECT id FROM memories WHERE superseded_by = %s", (memory_id,))}


def has_id(conn: PgConnection, memory_id: str) -> bool:
    return conn.execute("SELECT 1 FROM memories WHERE id = %s", (memory_id,)).fetchone() is not None


def targets_containing(conn: PgConnection, word: str | None) -> list[TargetRow]:
    """Memories whose body holds ``word``, ASCII case folded as SQLite's LIKE does
    (``lower`` here would also fold other letters, so only A-Z are mapped)."""
    if word is None:
        return [TargetRow(int(r[0]), *r[1:]) for r in conn.execute(_TARGET)]
    upper, lower = "ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz"
    return _targets(
        conn, "strpos(translate(body, %s, %s), translate(%s, %s, %s)) > 0", (upper, lower, word, upper, lower)
    )


# -- consolidation -------------------------------------------------------------------


def session_items(conn: PgConnection, session: str, scope: str | None) -> list[SessionItem]:
    sql = (
        "SELECT m.rowid, m.id, m.body, m.scope, m.category, m.confidence, m.created, "
        "COALESCE(u.access_count, 0) FROM memories m LEFT JOIN usage u ON u.memory_id = m.id "
        "WHERE m.session = %s AND m.status = 'active'"
    )
    params: list[Any] = [session]
    if scope is not None:
        sql += " AND m.scope = %s"
        params.append(scope)
    sql += ' ORDER BY m.created COLLATE "C", m.id COLLATE "C"'
    return [
        SessionItem(int(r[0]), str(r[1]), str(r[2]), str(r[3]), r[4], float(r[5]), str(r[6]), int(r[7]))
        for r in conn.execute(sql, params)
    ]


def active_sessions(conn: PgConnection, scope: str | None) -> list[str]:
    sql = "SELECT DISTINCT session FROM memories WHERE session IS NOT NULL AND status = 'active'"
    params: list[Any] = []
    if scope is not None:
        sql += " AND scope = %s"
        params.append(scope)
    return sorted(str(r[0]) for r in conn.execute(sql, params))


# -- the watcher, doctor, stats ----------------------------------------------------------


def has_path(conn: PgConnection, path: str) -> bool:
    return conn.execute("SELECT 1 FROM memories WHERE path = %s", (path,)).fetchone() is not None


def known_paths(conn: PgConnection) -> list[str]:
    return [str(r[0]) for r in conn.execute("SELECT path FROM memories UNION SELECT path FROM index_errors")]


def is_empty(conn: PgConnection) -> bool:
    return conn.execute("SELECT 1 FROM memories LIMIT 1").fetchone() is None


def _count(conn: PgConnection, sql: str) -> int:
    row = conn.execute(sql).fetchone()
    return int(row[0] or 0) if row else 0


def stats(conn: PgConnection) -> Stats:
    return Stats(
        {str(s): int(n) for s, n in conn.execute("SELECT status, count(*) FROM memories GROUP BY status")},
        {
            str(s): int(n)
            for s, n in conn.execute(
                'SELECT scope, count(*) FROM memories GROUP BY scope ORDER BY 2 DESC, scope COLLATE "C"'
            )
        },
        _count(conn, "SELECT count(*) FROM memories WHERE embedded = 1"),
        _count(conn, "SELECT count(*) FROM chunks"),
        _count(conn, "SELECT count(*) FROM entities"),
        _count(conn, "SELECT count(*) FROM embedding_cache"),
        _count(conn, "SELECT count(*) FROM index_errors"),
    )
