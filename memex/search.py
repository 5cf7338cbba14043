"""Hybrid ranking: BM25 over the FTS5 table and cosine over sqlite-vec.

Candidates come from both sides (and from chunk vectors of long bodies,
which speak for their memory). Every candidate then gets both signals: its
cosine to the query, and its BM25 normalized by the best BM25 of this query.
The final score is a weighted sum. Plain reciprocal-rank fusion throws away
how *much* better one candidate is than the next, and on short
conversational memories it ranked below BM25 alone in our measurements
(``scripts/eval_search.py``); a score blend did not.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import apsw
import numpy as np

from memex import embed
from memex.db import has_vector_tables
from memex.text import fts_query

# Weights of the blend, chosen with scripts/eval_search.py (see README).
SEMANTIC_WEIGHT = 0.6
LEXICAL_WEIGHT = 0.4
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

    def sql(self) -> tuple[str, list[Any]]:
        clauses: list[str] = []
        params: list[Any] = []
        if self.scopes:
            clauses.append(f"m.scope IN ({','.join('?' * len(self.scopes))})")
            params.extend(self.scopes)
        if self.source:
            clauses.append("m.source = ?")
            params.append(self.source)
        if self.session:
            clauses.append("m.session = ?")
            params.append(self.session)
        if not self.include_superseded:
            clauses.append("m.status = 'active'")
        return (" AND ".join(clauses) or "1"), params


def _lexical(conn: apsw.Connection, query: str, filters: Filters, k: int) -> dict[int, float]:
    match = fts_query(query)
    if match is None:
        return {}
    where, params = filters.sql()
    rows = conn.execute(
        f"SELECT f.rowid, -bm25(memory_fts) FROM memory_fts f JOIN memories m ON m.rowid = f.rowid "
        f"WHERE memory_fts MATCH ? AND {where} ORDER BY bm25(memory_fts) LIMIT ?",
        (match, *params, k),
    )
    return {int(r): float(s) for r, s in rows}


def _semantic(
    conn: apsw.Connection, qvec: np.ndarray, filters: Filters, k: int
) -> dict[int, float]:
    blob = embed.to_blob(qvec)
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
        sim = 1.0 - float(dist)
        if sim > sims.get(int(mrow), -2.0):
            sims[int(mrow)] = sim
    if not sims:
        return sims
    where, params = filters.sql()
    ids = list(sims)
    keep = {
        int(r[0])
        for r in conn.execute(
            f"SELECT m.rowid FROM memories m WHERE m.rowid IN ({','.join('?' * len(ids))}) AND {where}",
            (*ids, *params),
        )
    }
    return {r: s for r, s in sims.items() if r in keep}


def _fill_semantic(conn: apsw.Connection, qvec: np.ndarray, rowids: list[int]) -> dict[int, float]:
    """Cosine for candidates that only the lexical side found."""
    if not rowids:
        return {}
    out: dict[int, float] = {}
    for rowid, blob in conn.execute(
        f"SELECT rowid, embedding FROM memory_vec WHERE rowid IN ({','.join('?' * len(rowids))})",
        rowids,
    ):
        out[int(rowid)] = float(np.dot(embed.from_blob(blob), qvec))
    return out


def search(
    conn: apsw.Connection,
    embedder: embed.Embedder | None,
    query: str,
    limit: int = 10,
    filters: Filters = Filters(),
    qvec: np.ndarray | None = None,
) -> list[Hit]:
    """Best ``limit`` active memories for ``query`` (hybrid when a model is loaded)."""
    k = max(CANDIDATES, limit * 4)
    lexical = _lexical(conn, query, filters, k)
    semantic: dict[int, float] = {}
    use_vectors = embedder is not None and has_vector_tables(conn)
    if use_vectors:
        assert embedder is not None
        if qvec is None:
            qvec = embedder.embed([query])[0]
        semantic = _semantic(conn, qvec, filters, k)
        missing = [r for r in lexical if r not in semantic]
        semantic.update(_fill_semantic(conn, qvec, missing))
    best_lex = max(lexical.values(), default=0.0)
    scores: dict[int, float] = {}
    for rowid in set(lexical) | set(semantic):
        lex = lexical.get(rowid, 0.0) / best_lex if best_lex > 0 else 0.0
        if use_vectors:
            scores[rowid] = SEMANTIC_WEIGHT * semantic.get(rowid, 0.0) + LEXICAL_WEIGHT * lex
        else:
            scores[rowid] = lex
    if not scores:
        return []
    cand = list(scores)
    ids: dict[Any, Any] = {r: i for r, i in conn.execute(
        f"SELECT rowid, id FROM memories WHERE rowid IN ({','.join('?' * len(cand))})", cand
    )}
    # Ties break on the memory id, so a rebuilt index (new rowids) ranks alike.
    ranked = sorted(
        (r for r in cand if r in ids), key=lambda r: (-round(scores[r], 9), ids[r])
    )[:limit]
    rows = {
        int(r[0]): r
        for r in conn.execute(
            f"SELECT {HIT_COLUMNS} FROM memories WHERE rowid IN ({','.join('?' * len(ranked))})", ranked
        )
    }
    hits = []
    for rowid in ranked:
        if rowid not in rows:
            continue
        hit = hit_from_row(rows[rowid], round(scores[rowid], 6))
        hit.lexical = round(lexical.get(rowid, 0.0) / best_lex, 6) if best_lex > 0 else 0.0
        hit.semantic = round(semantic[rowid], 6) if rowid in semantic else None
        hits.append(hit)
    return hits
