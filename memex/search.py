"""Hybrid ranking: BM25 over the FTS5 table and cosine over the embeddings.

The vectors live in sqlite-vec tables; search reads them from an in-process
copy (:mod:`memex.vecmatrix`), which is exact and much faster.

Candidates come from both sides (and from chunk vectors of long bodies,
which speak for their memory). Every candidate then gets both signals: its
cosine to the query, and its BM25 saturated as ``s / (s + median s)`` over
this query's lexical candidates. The final score is a weighted sum of the two
(:data:`DEFAULT_FUSION`): 0.7 cosine + 0.3 BM25, or 0.5 + 0.5 for a query in
Chinese, Japanese or Korean, where the English model says little.

How it was chosen: ``scripts/eval_search.py`` loads the labelled set in
``tests/data/search_eval.jsonl`` (200 agent memories, 100 conversational
queries, 15 of them in Chinese) into a vault with the real model and scores
every fusion in :data:`FUSIONS` on the same candidates. Measured
(``.venv/bin/python scripts/eval_search.py``), MRR / recall@1 / recall@5:

=============================  =====  ========  ========
fusion                          MRR   recall@1  recall@5
=============================  =====  ========  ========
BM25 only                      0.854   0.718     0.920
vector only                    0.899   0.793     0.920
naive RRF, k=60                0.915   0.783     0.960
blend, BM25/max, w=0.6         0.942   0.833     0.960
blend, BM25/max, w=0.8         0.966   0.863     0.970
blend, BM25 sat., w=0.7        0.956   0.853     0.955
**blend, sat., w=0.7, CJK 0.5**  **0.971**  **0.873**  0.965
=============================  =====  ========  ========

So naive RRF beats either signal alone here, but blends with BM25 divided
by the best BM25 or saturated beat it at every weight from 0.5 to 0.9 (min-max
normalized BM25 does worse): RRF keeps only ranks and throws away how *much*
better one candidate is than the next. Vector-only is weak on Chinese (MRR 0.54; the
model is English), BM25-only on paraphrases; the chosen blend is best on
both (Chinese MRR 1.0, English 0.966). The top blends differ by one or two
queries out of 100, so the weights are a reasonable region, not a sharp
optimum.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import apsw
import numpy as np

from memex import embed, vecmatrix
from memex.db import has_vector_tables
from memex.text import fts_query

CANDIDATES = 100
# Ideographs, kana and hangul: the scripts memex tokenizes as bigrams.
_CJK_CHAR = re.compile("[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]")


def has_cjk(text: str) -> bool:
    return _CJK_CHAR.search(text) is not None


@dataclass(frozen=True)
class Fusion:
    """How the two signals become one score.

    ``method``: ``blend`` (weighted sum of cosine and normalized BM25),
    ``rrf`` (reciprocal-rank fusion, ``1/(rrf_k + rank)`` summed), or
    ``lexical`` / ``semantic`` (one signal alone, for comparison).
    ``lexical_norm`` for a blend: ``max`` divides BM25 by the query's best
    BM25; ``minmax`` also maps the worst candidate to 0; ``sat`` is
    ``s / (s + median)``, which does not let one outlier flatten the rest.
    """

    method: str = "blend"
    semantic_weight: float = 0.6
    lexical_norm: str = "max"
    rrf_k: int = 60
    # The bundled model was trained on English: for a query in Chinese (or
    # another CJK script) its cosine says little, so the blend may lean on
    # BM25 over character bigrams instead. None: same weight for all queries.
    cjk_semantic_weight: float | None = None

    def weight_for(self, query: str) -> float:
        if self.cjk_semantic_weight is not None and has_cjk(query):
            return self.cjk_semantic_weight
        return self.semantic_weight

    @property
    def name(self) -> str:
        if self.method == "blend":
            cjk = "" if self.cjk_semantic_weight is None else f"_cjk{self.cjk_semantic_weight:g}"
            return f"blend_{self.lexical_norm}_w{self.semantic_weight:g}{cjk}"
        if self.method == "rrf":
            return f"rrf_k{self.rrf_k}"
        return self.method


# What scripts/eval_search.py compares.
FUSIONS: tuple[Fusion, ...] = (
    Fusion("lexical"),
    Fusion("semantic"),
    Fusion("rrf", rrf_k=60),
    Fusion("rrf", rrf_k=10),
    *(Fusion("blend", w, norm) for norm in ("max", "minmax", "sat") for w in (0.3, 0.5, 0.6, 0.7, 0.8, 0.9)),
    *(Fusion("blend", w, "max", cjk_semantic_weight=c) for w in (0.7, 0.8) for c in (0.3, 0.5)),
    *(Fusion("blend", w, "sat", cjk_semantic_weight=c) for w in (0.6, 0.7) for c in (0.3, 0.5)),
)
# The measured winner (see the module docstring).
DEFAULT_FUSION = Fusion("blend", 0.7, "sat", cjk_semantic_weight=0.5)


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


def _normalized_lexical(lexical: dict[int, float], how: str) -> dict[int, float]:
    if not lexical:
        return {}
    values = list(lexical.values())
    best = max(values)
    if best <= 0:
        return {r: 0.0 for r in lexical}
    if how == "minmax":
        low = min(values)
        span = best - low
        return {r: (s - low) / span if span > 0 else 1.0 for r, s in lexical.items()}
    if how == "sat":
        mid = float(np.median(values)) or best
        return {r: s / (s + mid) for r, s in lexical.items()}
    return {r: s / best for r, s in lexical.items()}


def _ranks(signal: dict[int, float]) -> dict[int, int]:
    return {r: i + 1 for i, r in enumerate(sorted(signal, key=lambda r: -signal[r]))}


def fuse(
    lexical: dict[int, float],
    semantic: dict[int, float],
    fusion: Fusion,
    use_vectors: bool,
    query: str = "",
) -> dict[int, float]:
    """One score per candidate rowid (higher is better)."""
    lex = _normalized_lexical(lexical, fusion.lexical_norm if fusion.method == "blend" else "max")
    if not use_vectors or fusion.method == "lexical":
        return lex
    if fusion.method == "semantic":
        return dict(semantic)
    if fusion.method == "rrf":
        scores: dict[int, float] = {}
        for signal in (lexical, semantic):
            for rowid, rank in _ranks(signal).items():
                scores[rowid] = scores.get(rowid, 0.0) + 1.0 / (fusion.rrf_k + rank)
        return scores
    w = fusion.weight_for(query)
    return {
        r: w * semantic.get(r, 0.0) + (1.0 - w) * lex.get(r, 0.0) for r in set(lex) | set(semantic)
    }


def search(
    conn: apsw.Connection,
    embedder: embed.Embedder | None,
    query: str,
    limit: int = 10,
    filters: Filters = Filters(),
    qvec: np.ndarray | None = None,
    fusion: Fusion = DEFAULT_FUSION,
) -> list[Hit]:
    """Best ``limit`` memories for ``query`` (hybrid when a model is loaded)."""
    k = max(CANDIDATES, limit * 4)
    lexical = _lexical(conn, query, filters, k)
    semantic: dict[int, float] = {}
    use_vectors = embedder is not None and has_vector_tables(conn)
    if use_vectors:
        assert embedder is not None
        if qvec is None:
            qvec = embedder.embed([query])[0]
        # One look at the in-process copy per search (None: use sqlite-vec).
        matrix = vecmatrix.for_connection(conn)
        semantic = _semantic(conn, matrix, qvec, filters, k)
        missing = [r for r in lexical if r not in semantic]
        semantic.update(_fill_semantic(conn, matrix, qvec, missing))
    scores = fuse(lexical, semantic, fusion, use_vectors, query)
    if not scores:
        return []
    # Ties break on the memory id, so a rebuilt index (new rowids) ranks alike.
    # Only the best few need their ids and rows; cut on score first.
    order = sorted(scores, key=lambda r: -round(scores[r], 9))
    cutoff = round(scores[order[min(limit, len(order)) - 1]], 9)
    short = [r for r in order if round(scores[r], 9) >= cutoff]
    rows = {
        int(r[0]): r
        for r in conn.execute(
            f"SELECT {HIT_COLUMNS} FROM memories WHERE rowid IN ({_marks(len(short))})", short
        )
    }
    ranked = sorted(
        (r for r in short if r in rows), key=lambda r: (-round(scores[r], 9), rows[r][1])
    )[:limit]
    best_lex = max(lexical.values(), default=0.0)
    hits = []
    for rowid in ranked:
        hit = hit_from_row(rows[rowid], round(scores[rowid], 6))
        hit.lexical = round(lexical.get(rowid, 0.0) / best_lex, 6) if best_lex > 0 else 0.0
        hit.semantic = round(semantic[rowid], 6) if rowid in semantic else None
        hits.append(hit)
    return hits
