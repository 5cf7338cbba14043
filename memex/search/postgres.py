"""Hybrid search on the PostgreSQL index (``memex/store/postgres/``): the same rule and floor.

This is :func:`memex.search.hybrid.search` with the candidates read from
PostgreSQL (:mod:`.query`): BM25 by FTS5's formula and cosine from pgvector,
then the same :mod:`memex.search.fusion` rule (with the same facts about each
candidate), relevance floor and supersede cap, so both backends answer alike.
"""

from __future__ import annotations

import numpy as np

from memex.embedding import embed
from memex.search.fusion import calibration_for, fuse, fusion_for, rank
from memex.search.hybrid import CANDIDATES, Filters, Hit, ranked_hits, shortlist
from memex.store.memories import MemoryRow
from memex.store.postgres import query
from memex.store.postgres.connection import PgConnection
from memex.store.postgres.schema import get_meta


def search(
    conn: PgConnection,
    embedder: embed.Embedder | None,
    text: str,
    limit: int = 10,
    filters: Filters = Filters(),
    qvec: np.ndarray | None = None,
    floor: bool = True,
) -> list[Hit]:
    """Best ``limit`` memories for ``text`` (hybrid when a model is given)."""
    k = max(CANDIDATES, limit * 4)
    lexical = query.bm25_top(conn, text, filters, k)
    semantic: dict[int, float] = {}
    use_vectors = embedder is not None and get_meta(conn, "vector_model") is not None
    model_id = embedder.model_id if use_vectors and embedder is not None else None
    if use_vectors and embedder is not None:
        if qvec is None:
            qvec = embed.query_vector(embedder, text)
        semantic = query.knn(conn, qvec, filters, k)
        semantic.update(query.cosines(conn, qvec, [r for r in lexical if r not in semantic]))
    calibration = calibration_for(model_id)
    fusion = fusion_for(model_id)
    blend = fuse(lexical, semantic, fusion, use_vectors)
    if not blend:
        return []
    scores = rank(blend, query.facts(conn, list(blend), bool(fusion.density_penalty)), fusion)
    rows = query.hit_rows(conn, shortlist(scores, limit * 3 if floor else limit))
    if filters.include_superseded:
        _below_replacements(conn, rows, scores)
    return ranked_hits(text, scores, rows, lexical, semantic, limit, floor, calibration)


def _below_replacements(conn: PgConnection, rows: dict[int, MemoryRow], scores: dict[int, float]) -> None:
    """A superseded memory never outranks its replacement (as on SQLite)."""
    replaced = {r: row.superseded_by for r, row in rows.items() if row.superseded_by}
    by_id = query.rowids_of(conn, sorted(set(replaced.values())))
    for rowid, newer in replaced.items():
        other = by_id.get(newer)
        if other is not None and other in scores and scores[rowid] >= scores[other]:
            scores[rowid] = scores[other] - 1e-6
