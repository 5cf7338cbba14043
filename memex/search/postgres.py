"""Hybrid search on the PostgreSQL index (``memex/store/postgres/``): the same fusion and floor.

This is :func:`memex.search.hybrid.search` with the candidates read from
PostgreSQL (:mod:`.query`): BM25 by FTS5's formula and cosine from pgvector,
then the same :mod:`memex.search.fusion` rule, name bonus, priors, relevance floor,
supersede cap and duplicate collapse, so both backends answer alike.
"""

from __future__ import annotations

import datetime as dt

import numpy as np

from memex.embedding import embed
from memex.search import when
from memex.search.fusion import add_name_bonus, apply_priors, calibration_for, fuse, fusion_for
from memex.search.hybrid import CANDIDATES, Filters, Hit, ranked_hits, shortlist
from memex.search.rarity import rarity_for
from memex.store.memories import MemoryRow
from memex.store.postgres import density, query
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
    now: dt.datetime | None = None,
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
    pool = list(set(lexical) | set(semantic))
    span = when.window(text, now or dt.datetime.now(dt.timezone.utc)) if fusion.time_boost else None
    created = query.column(conn, "created", pool) if fusion.recency or span else None
    scores = fuse(lexical, semantic, fusion, use_vectors, text, calibration, created, None, span)
    if not scores:
        return []
    want = limit * 3 if floor or fusion.collapse_duplicates else limit
    read: dict[int, str] = {}

    def bodies_of(rowids: list[int]) -> dict[int, str]:
        read.update(query.column(conn, "body", [r for r in rowids if r not in read]))
        return {r: read[r] for r in rowids if r in read}

    scores = add_name_bonus(scores, text, fusion, bodies_of)
    # The hub prior reads the densities kept as SQLite keeps them (memex/store/postgres/density.py).
    # The rare-word prior reads FTS5's document counts as fts_terms keeps them (memex/store/postgres/query.py).
    rarity = rarity_for(text, fusion, lambda words: query.term_counts(conn, words))
    scores = apply_priors(scores, fusion, bodies_of, want,
                          densities_of=lambda rowids: density.densities(conn, rowids), rarity=rarity)
    rows = query.hit_rows(conn, shortlist(scores, want))
    if filters.include_superseded:
        _below_replacements(conn, rows, scores)
    return ranked_hits(text, scores, rows, lexical, semantic, limit, floor, fusion, calibration)


def _below_replacements(conn: PgConnection, rows: dict[int, MemoryRow], scores: dict[int, float]) -> None:
    """A superseded memory never outranks its replacement (as on SQLite)."""
    replaced = {r: row.superseded_by for r, row in rows.items() if row.superseded_by}
    by_id = query.rowids_of(conn, sorted(set(replaced.values())))
    for rowid, newer in replaced.items():
        other = by_id.get(newer)
        if other is not None and other in scores and scores[rowid] >= scores[other]:
            scores[rowid] = scores[other] - 1e-6
