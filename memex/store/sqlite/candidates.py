"""A query's candidates, with both signals: what every backend's store answers search with.

:class:`Found` is the answer of ``IndexStore.candidates``: the best ``k``
memories by BM25 and the ``k`` nearest by cosine (body or best chunk) that
pass the filters, every lexical candidate's cosine filled in. Search
(:mod:`memex.search.hybrid`) fuses them the same way whichever store found
them. :func:`find` is how the SQLite store finds them; the PostgreSQL store
asks its server (:mod:`memex.store.postgres.query`).

On SQLite the vectors are read from the connection's in-process copy
(:mod:`memex.store.sqlite.vecmatrix`) once it is loaded, else from sqlite-vec.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import apsw

from memex.store.rows import Filters, Found
from memex.store.sqlite import memories, vectors

if TYPE_CHECKING:
    # Imported by a search with a query vector only: a lexical search loads
    # no numpy (a hook answering without the model, memex/agents/hook_run.py).
    import numpy as np

    from memex.store.sqlite import vecmatrix


def _blob(qvec: np.ndarray) -> bytes:
    import numpy as np

    return np.ascontiguousarray(qvec, dtype=np.float32).tobytes()


def find(conn: apsw.Connection, query: str, qvec: np.ndarray | None, filters: Filters, k: int) -> Found:
    """Candidates on the SQLite index (``qvec`` None: lexical only)."""
    # One look at the in-process copy per search (None: ask sqlite-vec).
    matrix = None
    if qvec is not None:
        from memex.store.sqlite import vecmatrix

        matrix = vecmatrix.for_connection(conn)
    if filters.narrowing:
        lexical = memories.fts_top_passing(conn, query, filters, k)
        semantic = _narrowed(conn, matrix, qvec, filters, k) if qvec is not None else {}
    else:
        # Joining the FTS table to ``memories`` before the LIMIT makes SQLite
        # look up every match (about 1,300 of 10k memories for a typical query:
        # 3-10 ms); BM25 alone takes about 1 ms. So take the best ``2k`` matches
        # and the ``k`` nearest vectors first, and filter both in one read; only
        # when that leaves fewer than ``k`` matches is every match filtered.
        top = memories.fts_top(conn, query, 2 * k)
        sims: dict[int, float] = {}
        if qvec is not None:
            sims = matrix.nearest(qvec, k) if matrix is not None else vectors.knn(conn, _blob(qvec), k)
        keep = memories.passing(conn, list(dict.fromkeys([r for r, _ in top] + list(sims))), filters)
        found = [(r, score) for r, score in top if r in keep][:k]
        lexical = (dict(found) if len(found) >= k or len(top) < 2 * k
                   else memories.fts_top_passing(conn, query, filters, k))
        semantic = {r: s for r, s in sims.items() if r in keep}
    if qvec is not None:
        semantic.update(_cosines(conn, matrix, qvec, [r for r in lexical if r not in semantic]))
    return Found(lexical, semantic)


def _narrowed(
    conn: apsw.Connection, matrix: vecmatrix.VectorMatrix | None, qvec: np.ndarray, filters: Filters, k: int
) -> dict[int, float]:
    """Cosine of the nearest memories that pass narrowing filters (body or best chunk).

    Exact over what passes the filters: the k nearest of all memories,
    filtered afterwards, could leave a narrow scope with nothing."""
    if matrix is None:
        return vectors.scan(conn, _blob(qvec), filters, k)
    import numpy as np

    allowed = np.fromiter(memories.all_passing(conn, filters), dtype=np.int64)
    return matrix.nearest(qvec, k, allowed)


def _cosines(
    conn: apsw.Connection, matrix: vecmatrix.VectorMatrix | None, qvec: np.ndarray, rowids: list[int]
) -> dict[int, float]:
    """Cosine for candidates that only the lexical side found."""
    if not rowids:
        return {}
    if matrix is not None:
        return matrix.cosines(qvec, rowids)
    import numpy as np

    out: dict[int, float] = {}
    for rowid, blob in vectors.vectors_of(conn, rowids):
        sim = float(np.dot(np.frombuffer(blob, dtype=np.float32), qvec))
        if sim > out.get(rowid, -2.0):
            out[rowid] = sim
    return out
