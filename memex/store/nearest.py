"""Neighbour lists against a reference set: the numbers behind
:mod:`memex.store.density`, with no SQL and no state.

A list holds a memory's :data:`DEPTH` best cosines to the members of R
(float32, best first, ``-inf`` where there are fewer; numbers only, no
neighbour's identity); its first :data:`K` give the density. :func:`lists`
computes lists afresh; :func:`follow` carries computed ones through a change
of R (a member entering is merged in, one leaving is dropped by value), so
a write that changes R costs a product with the few members that changed,
not with all of R.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

K = 10  # neighbours per memory (docs/search.md: 5, 10 and 20 measured)
# Cosines kept per memory: a member leaving R drops one, and a list is
# computed again only once it holds fewer than K. K + 2 computes about twice
# as many lists as 2K while R churns, for the same settle CPU, and stores
# 32 B less per memory (docs/search.md, "At scale").
DEPTH = K + 2
_BLOCK = 1024  # rows per matrix product
_EPS = 1e-6  # float noise between a product by blocks and one by vector
_SLACK = 1e-4  # a float32 cosine's error is under 1e-5 (unit vectors, 384 terms)
_FEW = 8  # rows a product computes without OpenBLAS's threads (see near)


def mean(blob: bytes) -> float:
    """A stored list's density: the mean of its first K cosines (0.0 for none)."""
    import numpy as np

    best = np.frombuffer(blob, dtype=np.float32)[:K]
    return float(best.sum(dtype=np.float64) / max(len(best), 1))


def stack(blobs: list[bytes]) -> np.ndarray:
    """Float32 vectors (as stored) as the rows of one matrix."""
    import numpy as np

    if not blobs:
        return np.zeros((0, 0), dtype=np.float32)
    return np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(len(blobs), -1).copy()


def top(sims: np.ndarray) -> np.ndarray:
    """Each row's DEPTH best values, best first (-inf where a row has fewer)."""
    import numpy as np

    n = sims.shape[1]
    if n > DEPTH:
        sims = np.partition(sims, n - DEPTH, axis=1)[:, n - DEPTH :]
    out = -np.sort(-sims, axis=1)
    if out.shape[1] < DEPTH:
        out = np.concatenate([out, np.full((len(out), DEPTH - out.shape[1]), -np.inf, dtype=np.float32)], axis=1)
    return out.astype(np.float32)


def near(vecs: np.ndarray, ids: np.ndarray, ref: np.ndarray, ref_ids: np.ndarray) -> np.ndarray:
    """Cosines of ``vecs`` to ``ref`` (float64, as :func:`wide` gives it),
    float32, -inf where a row meets itself.

    In float64, then rounded to float32: a float32 product's last bits depend on
    the shape of the block it was computed in, and a list must come out the same
    whichever settle computed it, or a rebuilt index would break ties
    differently (tests/test_reindex_pipeline.py). For a block against all of
    R, float64 is as fast here as float32 (OpenBLAS). A few rows (an add)
    are multiplied by numpy's own loop instead: OpenBLAS hands even one
    row against R to its threads, and on a busy machine waking them cost
    5-8 ms against 0.3 ms in one thread (docs/search.md, "At scale")."""
    import numpy as np

    wide = vecs.astype(np.float64)
    product = np.einsum("ij,kj->ik", wide, ref) if len(vecs) <= _FEW else wide @ ref.T
    sims: np.ndarray = product.astype(np.float32)
    order = np.argsort(ref_ids, kind="stable")
    at = np.minimum(np.searchsorted(ref_ids[order], ids), max(len(ref_ids) - 1, 0))
    mine = np.flatnonzero(ref_ids[order][at] == ids) if len(ref_ids) else np.zeros(0, dtype=np.int64)
    sims[mine, order[at[mine]]] = -np.inf
    return sims


def near_few(vecs: np.ndarray, ids: np.ndarray, few: np.ndarray, few_ids: np.ndarray,
              floor: np.ndarray) -> np.ndarray:
    """Cosines of every vector to a few (members entering or leaving R),
    float32, exact (as :func:`near`) where they reach each row's ``floor``,
    -inf elsewhere and where a row meets itself. A float32 product picks the
    pairs: a float64 one would convert every vector at every settle that
    changes R, the bulk of its cost at 100k."""
    import numpy as np

    fast = vecs @ few.T
    fast[ids[:, None] == few_ids[None, :]] = -np.inf
    rows, cols = np.nonzero(fast >= floor[:, None] - _SLACK)
    out = np.full(fast.shape, -np.inf, dtype=np.float32)
    exact = np.einsum("ij,ij->i", vecs[rows].astype(np.float64), few[cols].astype(np.float64))
    out[rows, cols] = np.where(np.isfinite(fast[rows, cols]), exact, -np.inf)
    return out


def wide(ref: np.ndarray) -> np.ndarray:
    import numpy as np

    return np.asarray(ref, dtype=np.float64)  # R, once per settle


def lists(vecs: np.ndarray, ids: np.ndarray, ref: np.ndarray, ref_ids: np.ndarray) -> np.ndarray:
    """Neighbour lists of ``vecs`` computed afresh against R, by blocks."""
    import numpy as np

    out = np.empty((len(vecs), DEPTH), dtype=np.float32)
    for start in range(0, len(vecs), _BLOCK):
        end = start + _BLOCK
        out[start:end] = top(near(vecs[start:end], ids[start:end], ref, ref_ids))
    return out


def follow(lists: np.ndarray, rowids: np.ndarray, matrix: np.ndarray, old_size: int, old_ref: set[int],
           ref: np.ndarray, ref_ids: np.ndarray, entering: list[int], leaving: dict[int, bytes]) -> np.ndarray:
    """Lists already computed follow R's change: each drops its cosine to a
    leaving member (found by value) and merges those to the entering ones; a
    list left with fewer than K is marked to be computed again (NaN). Returns
    which rows changed."""
    import numpy as np

    live = np.flatnonzero(~np.isnan(lists[:, 0]))
    changed = np.zeros(len(lists), dtype=bool)
    if not len(live):
        return changed
    ids = rowids[live]
    vecs = matrix if len(live) == len(lists) else matrix[live]  # no copy of every vector
    member = np.isin(ids, np.fromiter(old_ref, dtype=np.int64, count=len(old_ref)))
    counts = np.isfinite(lists[live]).sum(axis=1)
    complete = counts >= old_size - member  # the list holds all of R but itself
    if leaving:
        gone_ids = np.fromiter(leaving, dtype=np.int64, count=len(leaving))
        last = np.where(np.isfinite(lists[live]), lists[live], np.inf).min(axis=1)
        sims = near_few(vecs, ids, stack(list(leaving.values())), gone_ids, last - _EPS)
        hit = np.flatnonzero((sims >= last[:, None] - _EPS).any(axis=1))
        if len(hit):
            lists[live[hit]] = drop(lists[live[hit]], sims[hit], last[hit])
            changed[live[hit]] = True
    if entering:
        pos = {r: i for i, r in enumerate(ref_ids.tolist())}
        new_ids = np.array(entering, dtype=np.int64)
        last = np.where(np.isfinite(lists[live]), lists[live], np.inf).min(axis=1)
        sims = near_few(vecs, ids, ref[[pos[r] for r in entering]].astype(np.float32), new_ids,
                         np.where(complete, -np.inf, last))
        take = complete[:, None] | (sims > last[:, None])
        sims = np.where(take, sims, -np.inf).astype(np.float32)
        hit = np.flatnonzero(np.isfinite(sims).any(axis=1))
        if len(hit):
            lists[live[hit]] = top(np.concatenate([lists[live[hit]], sims[hit]], axis=1))
            changed[live[hit]] = True
    counts = np.isfinite(lists[live]).sum(axis=1)
    in_new = np.isin(ids, ref_ids)
    short = counts < np.minimum(K, len(ref_ids) - in_new)
    lists[live[short]] = np.nan
    return changed


def drop(lists: np.ndarray, sims: np.ndarray, last: np.ndarray) -> np.ndarray:
    """``lists`` without one entry per cosine in ``sims`` that it holds (by
    value, within float noise), best first again."""
    import numpy as np

    lists = lists.copy()
    rows, cols = np.nonzero(sims >= last[:, None] - _EPS)
    values = sims[rows, cols]
    with np.errstate(invalid="ignore"):  # -inf - -inf: no match, as wanted
        match = np.abs(lists[rows] - values[:, None]) <= _EPS
    at = match.argmax(axis=1)
    found = match.any(axis=1)
    # One entry per cosine and one cosine per entry; otherwise (equal cosines) by hand.
    pairs = rows[found] * lists.shape[1] + at[found]
    odd = set(rows[match.sum(axis=1) > 1].tolist()) | set((np.unique(pairs, return_counts=True)[0][
        np.unique(pairs, return_counts=True)[1] > 1] // lists.shape[1]).tolist())
    plain = found & ~np.isin(rows, np.fromiter(odd, dtype=np.int64, count=len(odd)))
    lists[rows[plain], at[plain]] = -np.inf
    for i in sorted(odd):
        for value in values[rows == i].tolist():
            j = int(np.argmin(np.abs(np.where(np.isfinite(lists[i]), lists[i], np.inf) - value)))
            if abs(float(lists[i, j]) - value) <= _EPS:
                lists[i, j] = -np.inf
    return -np.sort(-lists, axis=1)
