"""Hybrid search: candidates from BM25 and cosine (embeddings), one ranking, on any backend.

The index's store finds the candidates (``IndexStore.candidates``: SQLite
from FTS5 and an in-process copy of its vectors, PostgreSQL on its server):
from both sides (and from chunk vectors of long bodies, which speak for
their memory), every candidate with both signals (:func:`candidates`).
Everything after that is here, once for every backend: :mod:`memex.search.fusion` turns them into one score
(:data:`memex.search.fusion.DEFAULT_FUSION`), with what the index holds about
each candidate (:class:`memex.store.facts.Facts`), and holds the relevance
floor that lets an unrelated query find nothing. A superseded memory (shown
only when asked) never outranks its replacement. How the rule was chosen,
on LoCoMo (public conversations, one half to choose, the other to report),
and every figure: docs/search.md (``scripts/eval_public.py``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from itertools import islice
from typing import TYPE_CHECKING, Any


from memex.embedding import embed
from memex.store import CandidateStore, LocalConnection, MemoryRow, as_store
from memex.store import Filters as Filters  # re-exported: search and list narrow alike
from memex.search.fusion import (  # noqa: F401  (re-exported: the rule lives in memex.search.fusion)
    DEFAULT_FUSION,
    Calibration,
    Fusion,
    calibration_for,
    fusion_for,
    fuse,
    rank,
    relevant,
)

if TYPE_CHECKING:
    import numpy as np  # a lexical search never loads it (memex/store/sqlite/candidates.py)

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


@dataclass
class Candidates:
    """Both signals for one query: BM25 and cosine per candidate rowid."""

    lexical: dict[int, float]
    semantic: dict[int, float]
    use_vectors: bool
    model_id: str | None = None


def candidates(
    conn: LocalConnection | CandidateStore,
    embedder: embed.Embedder | None,
    query: str,
    k: int = CANDIDATES,
    filters: Filters = Filters(),
    qvec: np.ndarray | None = None,
) -> Candidates:
    """Candidates from both sides, each with both signals (the cosine filled in).

    ``conn``: the SQLite index's connection, or any backend's store.
    """
    store = _store(conn)
    use_vectors = embedder is not None and store.has_vectors()
    if use_vectors and qvec is None:
        assert embedder is not None
        # The model's query side (e5: "query: "), as Vault.search embeds a question.
        qvec = embed.embed_queries(embedder, [query])[0]
    found = store.candidates(query, qvec if use_vectors else None, filters, k)
    if not use_vectors or embedder is None:
        return Candidates(found.lexical, {}, False)
    return Candidates(found.lexical, found.semantic, True, embedder.model_id)


def _store(conn: LocalConnection | CandidateStore) -> CandidateStore:
    return as_store(conn)


def _below_replacements(store: CandidateStore, rows: dict[int, MemoryRow], scores: dict[int, float]) -> None:
    """A superseded memory never outranks its replacement: cap its score just below it."""
    replaced = {r: row.superseded_by for r, row in rows.items() if row.superseded_by}
    if not replaced:
        return
    by_id = store.rowids_by_ids(sorted(set(replaced.values())))
    for rowid, newer in replaced.items():
        other = by_id.get(newer)
        if other is not None and other in scores and scores[rowid] >= scores[other]:
            scores[rowid] = scores[other] - 1e-6


def search(
    conn: LocalConnection | CandidateStore,
    embedder: embed.Embedder | None,
    query: str,
    limit: int = 10,
    filters: Filters = Filters(),
    qvec: np.ndarray | None = None,
    fusion: Fusion | None = None,
    floor: bool = True,
) -> list[Hit]:
    """Best ``limit`` memories for ``query`` (hybrid when a model is loaded).

    ``floor``: leave out hits below the relevance floor
    (:func:`memex.search.fusion.relevant`), so an unrelated query finds nothing.
    ``fusion``: the ranking rule (default: the one measured for the model,
    :func:`memex.search.fusion.fusion_for`).
    """
    store = _store(conn)
    found = candidates(store, embedder, query, max(CANDIDATES, limit * 4), filters, qvec)
    calibration = calibration_for(found.model_id)
    if fusion is None:
        fusion = fusion_for(found.model_id)
    blend = fuse(found.lexical, found.semantic, fusion, found.use_vectors)
    if not blend:
        return []
    scores = rank(blend, store.facts(list(blend), density=bool(fusion.density_penalty)), fusion)
    # The floor may drop some: keep a margin. Ties break on the memory id, so a
    # rebuilt index (new rowids) ranks alike; only the best few need their rows.
    rows = store.rows_by_rowids(shortlist(scores, limit * 3 if floor else limit))
    if filters.include_superseded:
        _below_replacements(store, rows, scores)
    return ranked_hits(query, scores, rows, found.lexical, found.semantic, limit, floor, calibration)


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
    calibration: Calibration,
) -> list[Hit]:
    """The last steps of a search on any backend: order (ties on the id, so a
    rebuilt index ranks alike), the relevance floor, and the hits with both
    signals."""
    ranked = sorted((r for r in rows if r in scores), key=lambda r: (-round(scores[r], 9), rows[r].id))
    if floor:  # best first, until ``limit`` pass: the floor reads the words of no more hits than it must
        ranked = list(islice((r for r in ranked if relevant(query, rows[r].body, semantic.get(r), calibration)),
                             limit))
    best_lex = max(lexical.values(), default=0.0)
    hits = []
    for rowid in ranked[:limit]:
        hit = hit_from_row(rows[rowid], round(max(0.0, scores[rowid]), 6))
        hit.lexical = round(lexical.get(rowid, 0.0) / best_lex, 6) if best_lex > 0 else 0.0
        hit.semantic = round(semantic[rowid], 6) if rowid in semantic else None
        hits.append(hit)
    return hits
