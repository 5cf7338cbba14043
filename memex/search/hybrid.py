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
from dataclasses import asdict, dataclass
from typing import Any

import apsw
import numpy as np

from memex.embedding import embed
from memex.index import vecmatrix
from memex.search import when
from memex.search.rarity import rarity_for
from memex.store import IndexStore
from memex.store.memories import Filters as Filters  # re-exported: search and list narrow alike
from memex.store.memories import MemoryRow
from memex.store.sqlite import as_store
from memex.search.fusion import (  # noqa: F401  (re-exported: the rule lives in memex.search.fusion)
    DEFAULT_FUSION,
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
from memex.text import normalize

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


def hit_from_row(row: MemoryRow, score: float = 0.0) -> Hit:
    """A shown row as a hit (the body without surrounding whitespace)."""
    return Hit(
        id=row.id, score=score, body=row.body.strip(), path=row.path, scope=row.scope, source=row.source,
        session=row.session, source_ref=row.source_ref, category=row.category, confidence=float(row.confidence),
        created=row.created, status=row.status, superseded_by=row.superseded_by,
    )


def _lexical(store: IndexStore, query: str, filters: Filters, k: int) -> dict[int, float]:
    """Top ``k`` memories by BM25 that pass the filters.

    Joining the FTS table to ``memories`` before the LIMIT makes SQLite look
    up every match (about 1,300 of 10k synthetic memories for a typical
    query: 3-10 ms); BM25 alone takes about 1 ms. So without narrowing
    filters, take the best ``2k`` matches first and filter those; only when
    that leaves fewer than ``k`` is every match filtered.
    """
    if not filters.narrowing:
        top = store.fts_top(query, 2 * k)
        keep = store.passing([r for r, _ in top], filters)
        found = [(r, score) for r, score in top if r in keep][:k]
        if len(found) >= k or len(top) < 2 * k:
            return dict(found)
    return store.fts_top_passing(query, filters, k)


def _semantic(
    store: IndexStore,
    matrix: vecmatrix.VectorMatrix | None,
    qvec: np.ndarray,
    filters: Filters,
    k: int,
) -> dict[int, float]:
    """Cosine of the nearest memories that pass the filters (body or best chunk)."""
    if filters.narrowing:
        # Exact over what passes the filters: the k nearest of all memories,
        # filtered afterwards, could leave a narrow scope with nothing.
        if matrix is None:
            return store.scan(embed.to_blob(qvec), filters, k)
        allowed = np.fromiter(store.all_passing(filters), dtype=np.int64)
        return matrix.nearest(qvec, k, allowed)
    sims = matrix.nearest(qvec, k) if matrix is not None else store.knn(embed.to_blob(qvec), k)
    if not sims:
        return sims
    keep = store.passing(list(sims), filters)
    return {r: s for r, s in sims.items() if r in keep}


def _fill_semantic(
    store: IndexStore, matrix: vecmatrix.VectorMatrix | None, qvec: np.ndarray, rowids: list[int]
) -> dict[int, float]:
    """Cosine for candidates that only the lexical side found."""
    if not rowids:
        return {}
    if matrix is not None:
        return matrix.cosines(qvec, rowids)
    out: dict[int, float] = {}
    for rowid, blob in store.vectors_of(rowids):
        sim = float(np.dot(embed.from_blob(blob), qvec))
        if sim > out.get(rowid, -2.0):
            out[rowid] = sim
    return out


@dataclass
class Candidates:
    """Both signals for one query: BM25 and cosine per candidate rowid."""

    lexical: dict[int, float]
    semantic: dict[int, float]
    use_vectors: bool
    model_id: str | None = None


def candidates(
    conn: apsw.Connection | IndexStore,
    embedder: embed.Embedder | None,
    query: str,
    k: int = CANDIDATES,
    filters: Filters = Filters(),
    qvec: np.ndarray | None = None,
) -> Candidates:
    """Candidates from both sides, each with both signals (the cosine filled in).

    ``conn``: the SQLite index's connection, or any backend's store.
    """
    store = as_store(conn)
    lexical = _lexical(store, query, filters, k)
    semantic: dict[int, float] = {}
    use_vectors = embedder is not None and store.has_vectors()
    if not use_vectors:
        return Candidates(lexical, semantic, False)
    assert embedder is not None
    if qvec is None:
        # The model's query side (e5: "query: "), as Vault.search embeds a question.
        qvec = embed.embed_queries(embedder, [query])[0]
    # One look at the in-process copy per search (None: ask the store).
    matrix = vecmatrix.for_connection(conn) if isinstance(conn, apsw.Connection) else None
    semantic = _semantic(store, matrix, qvec, filters, k)
    missing = [r for r in lexical if r not in semantic]
    semantic.update(_fill_semantic(store, matrix, qvec, missing))
    return Candidates(lexical, semantic, True, embedder.model_id)


def _below_replacements(store: IndexStore, rows: dict[int, MemoryRow], scores: dict[int, float]) -> None:
    """A superseded memory never outranks its replacement: cap its score just below it."""
    replaced = {r: row.superseded_by for r, row in rows.items() if row.superseded_by}
    if not replaced:
        return
    by_id = store.rowids_by_ids(sorted(set(replaced.values())))
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
    conn: apsw.Connection | IndexStore,
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
    store = as_store(conn)
    found = candidates(conn, embedder, query, max(CANDIDATES, limit * 4), filters, qvec)
    lexical, semantic = found.lexical, found.semantic
    calibration = calibration_for(found.model_id)
    if fusion is None:
        fusion = fusion_for(found.model_id)
    pool = list(set(lexical) | set(semantic))
    span = when.window(query, now or dt.datetime.now(dt.timezone.utc)) if fusion.time_boost else None
    created = store.text_column("created", pool) if fusion.recency or span else None
    scores = fuse(lexical, semantic, fusion, found.use_vectors, query, calibration, created, None, span)
    if not scores:
        return []
    # The floor and the duplicate collapse may drop some: keep a margin.
    want = limit * 3 if floor or fusion.collapse_duplicates else limit
    read: dict[int, str] = {}  # bodies read once, for the name bonus and the priors

    def bodies_of(rowids: list[int]) -> dict[int, str]:
        read.update(store.text_column("body", [r for r in rowids if r not in read]))
        return {r: read[r] for r in rowids if r in read}

    scores = add_name_bonus(scores, query, fusion, bodies_of)
    rarity = rarity_for(query, fusion, store.term_counts)
    scores = apply_priors(scores, fusion, bodies_of, want, densities_of=store.densities, rarity=rarity)
    # Ties break on the memory id, so a rebuilt index (new rowids) ranks alike.
    # Only the best few need their ids and rows; cut on score first.
    rows = store.rows_by_rowids(shortlist(scores, want))
    if filters.include_superseded:
        _below_replacements(store, rows, scores)
    return ranked_hits(query, scores, rows, lexical, semantic, limit, floor, fusion, calibration)


def shortlist(scores: dict[int, float], want: int) -> list[int]:
    """The best ``want`` candidates by fused score, and any tied with the last:
    only these need their rows read."""
    order = sorted(scores, key=lambda r: -round(scores[r], 9))
    cutoff = round(scores[order[min(want, len(order)) - 1]], 9)
    return [r for r in order if round(scores[r], 9) >= cutoff]


def ranked_hits(
    query: str,
    scores: dict[int, float],
    rows: dict[int, MemoryRow],
    lexical: dict[int, float],
    semantic: dict[int, float],
    limit: int,
    floor: bool,
    fusion: Fusion,
    calibration: Calibration,
) -> list[Hit]:
    """The last steps of a search on any backend: order (ties on the id, so a
    rebuilt index ranks alike), the relevance floor, duplicate collapse, and
    the hits with both signals."""
    ranked = sorted((r for r in rows if r in scores), key=lambda r: (-round(scores[r], 9), rows[r].id))
    if floor:
        ranked = [r for r in ranked if relevant(query, rows[r].body, semantic.get(r), calibration)]
    if fusion.collapse_duplicates:
        ranked = unique_bodies(ranked, {r: rows[r].body for r in ranked})
    best_lex = max(lexical.values(), default=0.0)
    hits = []
    for rowid in ranked[:limit]:
        hit = hit_from_row(rows[rowid], round(max(0.0, scores[rowid]), 6))
        hit.lexical = round(lexical.get(rowid, 0.0) / best_lex, 6) if best_lex > 0 else 0.0
        hit.semantic = round(semantic[rowid], 6) if rowid in semantic else None
        hits.append(hit)
    return hits
