"""Reading the PostgreSQL index: BM25 top-k, vector KNN, rows, usage, ranking's facts.

**BM25.** PostgreSQL ranks text with ``ts_rank``, which is not BM25, and
memex's fusion and relevance floor were measured on FTS5's BM25
(docs/search.md). So :func:`bm25_top` computes FTS5's formula itself
(k1 = 1.2, b = 0.75, idf = ln((N - n + 0.5) / (n + 0.5)), at least 1e-6)
from the ``tsvector``: term frequencies are a lexeme's positions, document
lengths are ``fts_len``, N and the average length come from ``fts_totals``,
n (documents per term, filters or not, as FTS5 counts it) from
``fts_terms``. It reads impact-ordered postings and stops as soon as the
top k are proven (:mod:`memex.store.postgres.bm25`).

**KNN.** pgvector's HNSW index answers the nearest bodies and chunks;
filters (scope, source, session, status) are applied in the same query with
iterative index scans (``hnsw.iterative_scan``), so a narrow scope still gets
its k nearest instead of what is left of the global k.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from memex.store.facts import Facts
from memex.store.rows import Filters, MemoryRow
from memex.store.postgres import bm25, density
from memex.store.postgres.connection import PgConnection, Vec
from memex.store.postgres.filters import PgFilters as PgFilters
from memex.text import fts_query


def query_terms(query: str) -> list[str]:
    """The query's distinct content tokens, as the SQLite side ORs them (:func:`memex.text.fts_query`)."""
    match = fts_query(query)
    if match is None:
        return []
    # fts_query quotes each token ("tok" OR "tok"); tokens hold no spaces or quotes.
    return [part[1:-1] for part in match.split(" OR ")]


def bm25_top(conn: PgConnection, query: str, filters: Filters, k: int) -> dict[int, float]:
    """Top ``k`` memories by BM25 (FTS5's formula, higher is better) that pass the filters."""
    terms = query_terms(query)
    if not terms:
        return {}
    return bm25.top(conn, " ".join(terms), filters, k)


def knn(conn: PgConnection, qvec: np.ndarray, filters: Filters, k: int) -> dict[int, float]:
    """Cosine of the ``k`` nearest memories passing the filters, by body or best chunk."""
    where, params = PgFilters(filters).sql()
    vec = Vec(qvec)
    sims: dict[int, float] = {}
    for sql in (
        "SELECT m.rowid, v.embedding <=> %s AS d FROM memory_vec v JOIN memories m ON m.rowid = v.rowid "
        f"WHERE {where} ORDER BY d LIMIT %s",
        "SELECT m.rowid, v.embedding <=> %s AS d FROM chunk_vec v JOIN chunks c ON c.rowid = v.rowid "
        f"JOIN memories m ON m.rowid = c.memory_rowid WHERE {where} ORDER BY d LIMIT %s",
    ):
        for rowid, dist in conn.execute(sql, (vec, *params, k)):
            sim = 1.0 - float(dist)
            if sim > sims.get(int(rowid), -2.0):
                sims[int(rowid)] = sim
    return dict(sorted(sims.items(), key=lambda kv: -kv[1])[:k])


def cosines(conn: PgConnection, qvec: np.ndarray, rowids: Sequence[int]) -> dict[int, float]:
    """Cosine (body or best chunk) for these memories: candidates only the lexical side found."""
    if not rowids:
        return {}
    vec = Vec(qvec)
    out: dict[int, float] = {}
    for sql in (
        "SELECT rowid, 1 - (embedding <=> %s) FROM memory_vec WHERE rowid = ANY(%s)",
        "SELECT c.memory_rowid, 1 - (v.embedding <=> %s) FROM chunks c JOIN chunk_vec v ON v.rowid = c.rowid "
        "WHERE c.memory_rowid = ANY(%s)",
    ):
        for rowid, sim in conn.execute(sql, (vec, list(rowids))):
            if float(sim) > out.get(int(rowid), -2.0):
                out[int(rowid)] = float(sim)
    return out


def column(conn: PgConnection, name: str, rowids: Iterable[int]) -> dict[int, str]:
    """One text column (``created``, ``body``) of these memories."""
    assert name in {"created", "body", "id"}
    ids = list(rowids)
    if not ids:
        return {}
    return {int(r): str(c) for r, c in conn.execute(f"SELECT rowid, {name} FROM memories WHERE rowid = ANY(%s)", (ids,))}


_SHOWN = ", ".join(MemoryRow._fields)


def hit_rows(conn: PgConnection, rowids: Sequence[int]) -> dict[int, MemoryRow]:
    """The shown rows (:class:`memex.store.rows.MemoryRow`) of these memories."""
    if not rowids:
        return {}
    return {
        int(r[0]): MemoryRow(*r)
        for r in conn.execute(f"SELECT {_SHOWN} FROM memories WHERE rowid = ANY(%s)", (list(rowids),))
    }


def rowids_of(conn: PgConnection, ids: Sequence[str]) -> dict[str, int]:
    if not ids:
        return {}
    return {str(i): int(r) for r, i in conn.execute("SELECT rowid, id FROM memories WHERE id = ANY(%s)", (list(ids),))}


def record_use(conn: PgConnection, ids: Sequence[str], when: str) -> None:
    """Count a recall of these memories (``usage``, what decay reads)."""
    if not ids:
        return
    with conn.write_txn():
        with conn.raw.cursor() as cur:
            cur.executemany(
                "INSERT INTO usage(memory_id, access_count, last_access) VALUES (%s, 1, %s) "
                "ON CONFLICT (memory_id) DO UPDATE SET access_count = usage.access_count + 1, "
                "last_access = excluded.last_access",
                [(i, when) for i in dict.fromkeys(ids)],
            )


def last_accesses(conn: PgConnection, ids: Iterable[str]) -> dict[str, str | None]:
    """``usage.last_access`` of these memories (absent ones left out), as :func:`memex.decay.last_accesses`."""
    wanted = list(dict.fromkeys(ids))
    if not wanted:
        return {}
    return {
        str(i): None if last is None else str(last)
        for i, last in conn.execute("SELECT memory_id, last_access FROM usage WHERE memory_id = ANY(%s)", (wanted,))
    }


def facts(conn: PgConnection, rowids: Sequence[int], with_density: bool = True) -> dict[int, Facts]:
    """What ranking needs about each memory, as :func:`memex.store.facts.facts` reads it from SQLite."""
    wanted = list(dict.fromkeys(int(r) for r in rowids))
    if not wanted:
        return {}
    dense = density.densities(conn, wanted) if with_density else {}
    rows = conn.execute("SELECT rowid, asks, before_rowid, after_rowid FROM memories WHERE rowid = ANY(%s)", (wanted,))
    return {int(r): Facts(bool(asks), None if before is None else int(before), None if after is None else int(after),
                          dense.get(int(r)))
            for r, asks, before, after in rows}
