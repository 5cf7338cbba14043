"""Hybrid search: candidates from BM25 (FTS5) and cosine (embeddings), one ranking.

The vectors live in sqlite-vec tables; search reads them from an in-process
copy (:mod:`memex.index.vecmatrix`), which is exact and much faster.

Candidates come from both sides (and from chunk vectors of long bodies,
which speak for their memory); every candidate then gets both signals
(:func:`candidates`). :mod:`memex.search.fusion` turns them into one score
(:data:`memex.search.fusion.DEFAULT_FUSION`) and holds the relevance floor that
lets an unrelated query find nothing; :mod:`memex.search.when` reads "last week"
in a query. A superseded memory (shown only when asked) never outranks its
replacement. How the rule was chosen, on two labelled sets with a dev/test
split, and every figure: docs/search.md (``scripts/eval_search.py``).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import apsw
import numpy as np

from memex.embedding import embed
from memex.index import vecmatrix
from memex.search import when
from memex.index.db import has_vector_tables
from memex.search.fusion import (  # noqa: F401  (re-exported: the rule lives in memex.search.fusion)
    DEFAULT_FUSION,
    FUSIONS,
    Calibration,
    Fusion,
    add_name_bonus,
    apply_priors,
    calibration_for,
    fusion_for,
    fuse,
    has_cjk,
    relevant,
)
from memex.text import fts_query, normalize

CANDIDATES = 100


@dataclass
class Hit:
    id: str
    score: float
    body: str
    path: str
    scope: str
    source: str | None
    session: str | None
    source_ref: str | None
    category: str | None
    confidence: float
    created: str
    status: str
    superseded_by: str | None
    lexical: float = 0.0
    semantic: float | None = None
    # confidence x decay since the last recall (memex.decay); set by Vault.search.
    effective_confidence: float | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


HIT_COLUMNS = (
    "rowid, id, body, path, scope, source, session, source_ref, category, confidence, "
    "created, status, superseded_by"
)


def hit_from_row(row: Sequence[Any], score: float = 0.0) -> Hit:
    return Hit(
        id=row[1], score=score, body=row[2].strip(), path=row[3], scope=row[4], source=row[5],
        session=row[6], source_ref=row[7], category=row[8], confidence=float(row[9]),
        created=row[10], status=row[11], superseded_by=row[12],
    )


@dataclass(frozen=True)
class Filters:
    scopes: tuple[str, ...] | None = None
    source: str | None = None
    session: str | None = None
    include_superseded: bool = False

    @property
    def narrowing(self) -> bool:
        """True when more than the status filter applies (scope, source, session)."""
        return bool(self.scopes or self.source or self.session)

    def sql(self) -> tuple[str, list[Any]]:
        clauses: list[str] = []
        params: list[Any] = []
        if self.scopes:
            clauses.append(f"m.scope IN ({','.join('?' * len(self.scopes))})")
            params.extend(s.strip() for s in self.scopes)  # as add stores them (ScopeRules.check)
        if self.source:
            clauses.append("m.source = ?")
            params.append(self.source)
        if self.session:
            clauses.append("m.session = ?")
            params.append(self.session)
        if not self.include_superseded:
            clauses.append("m.status = 'active'")
        return (" AND ".join(clauses) or "1"), params


def _marks(n: int) -> str:
    return ",".join("?" * n)


def _lexical(conn: apsw.Connection, query: str, filters: Filters, k: int) -> dict[int, float]:
    """Top ``k`` memories by BM25 that pass the filters.

    Joining the FTS table to ``memories`` before the LIMIT makes SQLite look
    up every match (about 1,300 of 10k synthetic memories for a typical
    query: 3-10 ms); BM25 alone takes about 1 ms. So without narrowing
    filters, take the best ``2k`` matches first and filter those; only when
    that leaves fewer than ``k`` is every match filtered.
    """
    match = fts_query(query)
    if match is None:
        return {}
    where, params = filters.sql()
    if not filters.narrowing:
        top = [
            (int(r), float(score))
            for r, score in conn.execute(
                "SELECT rowid, -bm25(memory_fts) FROM memory_fts WHERE memory_fts MATCH ? "
                "ORDER BY bm25(memory_fts) LIMIT ?",
                (match, 2 * k),
            )
        ]
        ids = [r for r, _ in top]
        keep = {
            int(r[0])
            for r in conn.execute(
                f"SELECT m.rowid FROM memories m WHERE m.rowid IN ({_marks(len(ids))}) AND {where}",
                (*ids, *params),
            )
        } if ids else set()
        found = [(r, score) for r, score in top if r in keep][:k]
        if len(found) >= k or len(top) < 2 * k:
            return dict(found)
    rows = conn.execute(
        "WITH f AS MATERIALIZED (SELECT rowid, bm25(memory_fts) AS s FROM memory_fts WHERE memory_fts MATCH ?) "
        f"SELECT f.rowid, -f.s FROM f JOIN memories m ON m.rowid = f.rowid WHERE {where} ORDER BY f.s LIMIT ?",
        (match, *params, k),
    )
    return {int(r): float(s) for r, s in rows}


def _semantic(
    conn: apsw.Connection,
    matrix: vecmatrix.VectorMatrix | None,
    qvec: np.ndarray,
    filters: Filters,
    k: int,
) -> dict[int, float]:
    """Cosine of the nearest memories that pass the filters (body or best chunk)."""
    where, params = filters.sql()
    if filters.narrowing:
        # Exact over what passes the filters: the k nearest of all memories,
        # filtered afterwards, could leave a narrow scope with nothing.
        if matrix is None:
            return _scan(conn, embed.to_blob(qvec), where, params, k)
        allowed = np.fromiter(
            (int(r[0]) for r in conn.execute(f"SELECT m.rowid FROM memories m WHERE {where}", params)),
            dtype=np.int64,
        )
        return matrix.nearest(qvec, k, allowed)
    sims = matrix.nearest(qvec, k) if matrix is not None else _knn(conn, embed.to_blob(qvec), k)
    if not sims:
        return sims
    ids = list(sims)
    keep = {
        int(r[0])
        for r in conn.execute(
            f"SELECT m.rowid FROM memories m WHERE m.rowid IN ({_marks(len(ids))}) AND {where}",
            (*ids, *params),
        )
    }
    return {r: s for r, s in sims.items() if r in keep}


def _knn(conn: apsw.Connection, blob: bytes, k: int) -> dict[int, float]:
    """sqlite-vec's own k-nearest search, by body and by chunk (no in-process copy)."""
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


def _scan(conn: apsw.Connection, blob: bytes, where: str, params: list[Any], k: int) -> dict[int, float]:
    """Exact top ``k`` by cosine among the memories (and chunks) passing the filters."""
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


def _fill_semantic(
    conn: apsw.Connection, matrix: vecmatrix.VectorMatrix | None, qvec: np.ndarray, rowids: list[int]
) -> dict[int, float]:
    """Cosine for candidates that only the lexical side found."""
    if not rowids:
        return {}
    if matrix is not None:
        return matrix.cosines(qvec, rowids)
    out: dict[int, float] = {}
    marks = _marks(len(rowids))
    for sql in (
        f"SELECT rowid, embedding FROM memory_vec WHERE rowid IN ({marks})",
        "SELECT c.memory_rowid, v.embedding FROM chunks c JOIN chunk_vec v ON v.rowid = c.rowid "
        f"WHERE c.memory_rowid IN ({marks})",
    ):
        for rowid, blob in conn.execute(sql, rowids):
            sim = float(np.dot(embed.from_blob(blob), qvec))
            if sim > out.get(int(rowid), -2.0):
                out[int(rowid)] = sim
    return out


@dataclass
class Candidates:
    """Both signals for one query: BM25 and cosine per candidate rowid."""

    lexical: dict[int, float]
    semantic: dict[int, float]
    use_vectors: bool
    model_id: str | None = None


def candidates(
    conn: apsw.Connection,
    embedder: embed.Embedder | None,
    query: str,
    k: int = CANDIDATES,
    filters: Filters = Filters(),
    qvec: np.ndarray | None = None,
) -> Candidates:
    """Candidates from both sides, each with both signals (the cosine filled in)."""
    lexical = _lexical(conn, query, filters, k)
    semantic: dict[int, float] = {}
    use_vectors = embedder is not None and has_vector_tables(conn)
    if not use_vectors:
        return Candidates(lexical, semantic, False)
    assert embedder is not None
    if qvec is None:
        # The model's query side (e5: "query: "), as Vault.search embeds a question.
        qvec = embed.embed_queries(embedder, [query])[0]
    # One look at the in-process copy per search (None: use sqlite-vec).
    matrix = vecmatrix.for_connection(conn)
    semantic = _semantic(conn, matrix, qvec, filters, k)
    missing = [r for r in lexical if r not in semantic]
    semantic.update(_fill_semantic(conn, matrix, qvec, missing))
    return Candidates(lexical, semantic, True, embedder.model_id)


def _column(conn: apsw.Connection, column: str, rowids: Sequence[int]) -> dict[int, str]:
    """One text column of these memories (what recency and the answer priors read)."""
    if not rowids:
        return {}
    sql = f"SELECT rowid, {column} FROM memories WHERE rowid IN ({_marks(len(rowids))})"
    return {int(r): str(c) for r, c in conn.execute(sql, list(rowids))}


def _below_replacements(conn: apsw.Connection, rows: dict[int, Any], scores: dict[int, float]) -> None:
    """A superseded memory never outranks its replacement: cap its score just below it."""
    replaced = {r: row[12] for r, row in rows.items() if row[12]}
    if not replaced:
        return
    targets = sorted(set(replaced.values()))
    by_id = {
        str(i): int(r)
        for r, i in conn.execute(f"SELECT rowid, id FROM memories WHERE id IN ({_marks(len(targets))})", targets)
    }
    for rowid, newer in replaced.items():
        other = by_id.get(newer)
        if other is not None and other in scores and scores[rowid] >= scores[other]:
            scores[rowid] = scores[other] - 1e-6


def unique_bodies(ranked: list[int], bodies: dict[int, str]) -> list[int]:
    """``ranked`` without memories whose text repeats a better-ranked one's."""
    seen: set[str] = set()
    out = []
    for r in ranked:
        key = normalize(bodies.get(r, ""))
        if key not in seen:
            seen.add(key)
            out.append(r)
    return out


def search(
    conn: apsw.Connection,
    embedder: embed.Embedder | None,
    query: str,
    limit: int = 10,
    filters: Filters = Filters(),
    qvec: np.ndarray | None = None,
    fusion: Fusion | None = None,
    floor: bool = True,
    now: dt.datetime | None = None,
) -> list[Hit]:
    """Best ``limit`` memories for ``query`` (hybrid when a model is loaded).

    ``floor``: leave out hits below the relevance floor
    (:func:`memex.search.fusion.relevant`), so an unrelated query finds nothing.
    ``now``: what "last week" in the query is relative to (default: the clock).
    ``fusion``: the ranking rule (default: the one measured for the model,
    :func:`memex.search.fusion.fusion_for`).
    """
    found = candidates(conn, embedder, query, max(CANDIDATES, limit * 4), filters, qvec)
    lexical, semantic = found.lexical, found.semantic
    calibration = calibration_for(found.model_id)
    if fusion is None:
        fusion = fusion_for(found.model_id)
    pool = list(set(lexical) | set(semantic))
    span = when.window(query, now or dt.datetime.now(dt.timezone.utc)) if fusion.time_boost else None
    created = _column(conn, "created", pool) if fusion.recency or span else None
    scores = fuse(lexical, semantic, fusion, found.use_vectors, query, calibration, created, None, span)
    if not scores:
        return []
    # The floor and the duplicate collapse may drop some: keep a margin.
    want = limit * 3 if floor or fusion.collapse_duplicates else limit
    read: dict[int, str] = {}  # bodies read once, for the name bonus and the priors

    def bodies_of(rowids: list[int]) -> dict[int, str]:
        read.update(_column(conn, "body", [r for r in rowids if r not in read]))
        return {r: read[r] for r in rowids if r in read}

    scores = add_name_bonus(scores, query, fusion, bodies_of)
    scores = apply_priors(scores, fusion, bodies_of, want)
    # Ties break on the memory id, so a rebuilt index (new rowids) ranks alike.
    # Only the best few need their ids and rows; cut on score first.
    order = sorted(scores, key=lambda r: -round(scores[r], 9))
    cutoff = round(scores[order[min(want, len(order)) - 1]], 9)
    short = [r for r in order if round(scores[r], 9) >= cutoff]
    rows = {
        int(r[0]): r
        for r in conn.execute(
            f"SELECT {HIT_COLUMNS} FROM memories WHERE rowid IN ({_marks(len(short))})", short
        )
    }
    if filters.include_superseded:
        _below_replacements(conn, rows, scores)
    ranked = sorted((r for r in short if r in rows), key=lambda r: (-round(scores[r], 9), rows[r][1]))
    if floor:
        ranked = [r for r in ranked if relevant(query, rows[r][2], semantic.get(r), calibration)]
    if fusion.collapse_duplicates:
        ranked = unique_bodies(ranked, {r: rows[r][2] for r in ranked})
    best_lex = max(lexical.values(), default=0.0)
    hits = []
    for rowid in ranked[:limit]:
        hit = hit_from_row(rows[rowid], round(max(0.0, scores[rowid]), 6))
        hit.lexical = round(lexical.get(rowid, 0.0) / best_lex, 6) if best_lex > 0 else 0.0
        hit.semantic = round(semantic[rowid], 6) if rowid in semantic else None
        hits.append(hit)
    return hits
