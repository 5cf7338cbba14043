"""How crowded each memory's neighbourhood is: ``memory_density``.

A memory's *density* is the mean cosine of its body vector to its :data:`K`
nearest neighbours among the *reference set* R, itself left out. R is the
``S + 1`` memories (:data:`S`) whose :func:`key` (a hash of the memory id)
is smallest, so while a vault holds at most ``S + 1`` memories R is every
memory and the density is the mean cosine to the K nearest other memories.
Past that R is a uniform sample, the same whichever order or process wrote
the files. Small talk and boilerplate ("ok, sounds good") sit near many
memories and so near every query: they are the hubs of the vector space,
and search lowers them (:func:`memex.search.fusion.answer_prior`; why, the
definition and the figures: docs/search.md, "Crowded neighbourhoods").
A bulk write (:data:`DEFERRED`) empties the tables; the next settle after it
(or after its crash) finds them empty and computes every list once.

Kept exact where every vector passes: :mod:`memex.store.vectors` notes each
body vector written or deleted (:func:`note_insert`, :func:`note_delete`);
:func:`settle` runs in the transaction before its COMMIT (``memex.store.schema``). Stored: per memory its key, the
density and its :data:`DEPTH` nearest cosines among R (float32, best first:
numbers only, no neighbour's identity); ``density_reference`` holds a copy of
R's vectors (deleted with the memory's vectors, under ``secure_delete``).

Cost: a write that leaves R alone (probability ~``1 - S/N``) reads R's
vectors and computes each new memory against them: O(S). A write that
changes R needs every vector and list (each merges the entering member's
cosine, drops the leaving one's; one below K entries is recomputed): O(N)
per change, O(S) per write on average. Figures: docs/search.md.
"""

from __future__ import annotations

import hashlib
import weakref
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import apsw

if TYPE_CHECKING:
    import numpy as np

K = 10  # neighbours per memory (docs/search.md: 5, 10 and 20 measured)
S = 2048  # reference set size - 1 (docs/search.md, "Crowded neighbourhoods")
DEPTH = 2 * K  # cosines kept per memory: a member leaving R drops one, not the list
_BLOCK = 1024  # rows per matrix product
_EPS = 1e-6  # float noise between a product by blocks and one by vector
_SLACK = 1e-4  # a float32 cosine's error is under 1e-5 (unit vectors, 384 terms)
_BATCH = 500


def key(memory_id: str) -> int:
    """The memory's place in the order that picks R (a 63-bit hash: SQLite INTEGER)."""
    return int.from_bytes(hashlib.blake2b(memory_id.encode("utf-8"), digest_size=8).digest(), "big") >> 1


class _Copy:
    """Every body vector and neighbour list as of the last settle, and the
    ``data_version`` then (another connection's commit makes it stale).

    Rows live in buffers that grow by doubling, so the rows a transaction
    adds are appended without copying the others (a reindex settles once per
    batch)."""

    def __init__(self, version: int, rowids: np.ndarray, matrix: np.ndarray, lists: np.ndarray) -> None:
        self.version = version
        self.size = len(rowids)
        self._rowids, self._matrix, self._lists = rowids, matrix, lists

    @property
    def rowids(self) -> np.ndarray:  # int64
        return self._rowids[: self.size]

    @property
    def matrix(self) -> np.ndarray:  # float32, one row per rowid
        return self._matrix[: self.size]

    @property
    def lists(self) -> np.ndarray:  # float32 (n, DEPTH), best first; -inf: no more; NaN: not computed
        return self._lists[: self.size]

    def keep(self, mask: np.ndarray) -> None:
        """Only the rows where ``mask`` is true."""
        self._rowids, self._matrix, self._lists = self.rowids[mask], self.matrix[mask], self.lists[mask]
        self.size = len(self._rowids)

    def append(self, rowids: np.ndarray, matrix: np.ndarray) -> None:
        """New rows, their lists not computed yet."""
        import numpy as np

        need = self.size + len(rowids)
        if need > len(self._rowids) or (len(matrix) and self._matrix.shape[1] != matrix.shape[1]):
            cap = max(need, 2 * len(self._rowids), 64)
            dim = matrix.shape[1] if len(matrix) else self._matrix.shape[1]
            grown = (np.empty(cap, dtype=np.int64), np.empty((cap, dim), dtype=np.float32),
                     np.empty((cap, DEPTH), dtype=np.float32))
            grown[0][: self.size], grown[2][: self.size] = self.rowids, self.lists
            if self.size:
                grown[1][: self.size] = self.matrix
            self._rowids, self._matrix, self._lists = grown
        self._rowids[self.size : need] = rowids
        self._matrix[self.size : need] = matrix
        self._lists[self.size : need] = np.nan
        self.size = need


@dataclass
class _Pending:
    added: dict[int, bytes] = field(default_factory=dict)  # rowid -> body vector written
    left: dict[int, bytes] = field(default_factory=dict)  # R members deleted -> their vector (memory only)
    deleted: set[int] = field(default_factory=set)  # rowids whose vector was deleted
    full: bool = False  # compute every list afresh (a rebuild, orphan vectors removed)
    copy: _Copy | None = None


_STATE: weakref.WeakKeyDictionary[apsw.Connection, _Pending] = weakref.WeakKeyDictionary()
DEFERRED: weakref.WeakSet[apsw.Connection] = weakref.WeakSet()  # connections in a bulk write


def _state(conn: apsw.Connection) -> _Pending:
    state = _STATE.get(conn)
    if state is None:
        state = _STATE[conn] = _Pending()
    return state


def create(conn: apsw.Connection) -> None:
    conn.execute(
        "CREATE TABLE IF NOT EXISTS memory_density "
        "(rowid INTEGER PRIMARY KEY, density REAL NOT NULL, neighbours BLOB NOT NULL, key INTEGER NOT NULL);"
        "CREATE INDEX IF NOT EXISTS memory_density_key ON memory_density(key);"
        "CREATE TABLE IF NOT EXISTS density_reference (rowid INTEGER PRIMARY KEY, embedding BLOB NOT NULL)"
    )


def note_insert(conn: apsw.Connection, rowid: int, blob: bytes) -> None:
    """A body vector was written for ``rowid`` in this transaction."""
    _state(conn).added[rowid] = blob


def note_delete(conn: apsw.Connection, rowid: int) -> None:
    """``rowid``'s body vector is about to be deleted: drop its rows now and,
    if it was in R, remember its vector until the settle (whose lists held it)."""
    state = _state(conn)
    state.added.pop(rowid, None)
    if conn.execute("SELECT 1 FROM memory_vec WHERE rowid = ?", (rowid,)).fetchone() is not None:
        state.deleted.add(rowid)
    for (blob,) in conn.execute("SELECT embedding FROM density_reference WHERE rowid = ?", (rowid,)):
        state.left[rowid] = bytes(blob)
    conn.execute("DELETE FROM memory_density WHERE rowid = ?", (rowid,))
    conn.execute("DELETE FROM density_reference WHERE rowid = ?", (rowid,))


def forget(conn: apsw.Connection) -> None:
    """Drop what this connection noted and holds (a rollback, new vector tables)."""
    _STATE.pop(conn, None)


def clear(conn: apsw.Connection) -> None:
    """Every density goes (the vector tables were made anew for another model)."""
    conn.execute("DELETE FROM memory_density; DELETE FROM density_reference")
    forget(conn)


def densities(conn: apsw.Connection, rowids: Sequence[int]) -> dict[int, float]:
    """Density of these memories (those without a body vector are left out)."""
    return {int(r): float(v) for r, v in _rows_of(conn, "SELECT rowid, density FROM memory_density", rowids)}


def _rows_of(conn: apsw.Connection, select: str, rowids: Sequence[int]) -> Iterator[tuple[Any, Any]]:
    """``select`` ... ``WHERE rowid IN (...)`` over ``rowids``, in batches of bound parameters."""
    ids = list(rowids)
    for start in range(0, len(ids), _BATCH):
        part = ids[start : start + _BATCH]
        yield from conn.execute(f"{select} WHERE rowid IN ({','.join('?' * len(part))})", part)


def rebuild(conn: apsw.Connection) -> None:
    """Every density computed afresh from the stored vectors (an index made
    by a memex without this table, or with another definition)."""
    conn.execute("DROP TABLE IF EXISTS memory_density; DROP TABLE IF EXISTS density_reference")
    create(conn)
    forget(conn)
    if _has_vectors(conn):
        _state(conn).full = True  # the transaction's settle computes them


def recompute_all(conn: apsw.Connection) -> None:
    """Have this transaction's settle compute every list afresh (vectors left
    without :func:`note_delete`: orphans removed after a crash)."""
    _STATE[conn] = _Pending(full=True)  # what was noted is computed afresh with the rest


def _data_version(conn: apsw.Connection) -> int:
    row = conn.execute("PRAGMA data_version").fetchone()
    return int(row[0]) if row else 0


def _has_vectors(conn: apsw.Connection) -> bool:
    return conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'memory_vec'").fetchone() is not None


def _stack(blobs: list[bytes]) -> np.ndarray:
    import numpy as np

    if not blobs:
        return np.zeros((0, 0), dtype=np.float32)
    return np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(len(blobs), -1).copy()


def _keys(conn: apsw.Connection, rowids: Sequence[int]) -> dict[int, int]:
    """Each memory's :func:`key` (a vector without a memory row, an orphan, hashes its rowid)."""
    ids = {int(r): str(i) for r, i in _rows_of(conn, "SELECT rowid, id FROM memories", rowids)}
    return {r: key(ids.get(r, f"#{r}")) for r in rowids}


def _read(conn: apsw.Connection, version: int) -> _Copy:
    """Every body vector and stored list, read from the index (this transaction's writes included)."""
    import numpy as np

    rows = sorted((int(r), bytes(b)) for r, b in conn.execute("SELECT rowid, embedding FROM memory_vec"))
    rowids = np.fromiter((r for r, _ in rows), dtype=np.int64, count=len(rows))
    lists = np.full((len(rows), DEPTH), np.nan, dtype=np.float32)  # no stored list: computed at this settle
    pos = {r: i for i, r in enumerate(rowids.tolist())}
    for rowid, blob in conn.execute("SELECT rowid, neighbours FROM memory_density"):
        i = pos.get(int(rowid))
        if i is not None:
            values = np.frombuffer(blob, dtype=np.float32)[:DEPTH]
            lists[i] = -np.inf
            lists[i, : len(values)] = values
    return _Copy(version, rowids, _stack([b for _, b in rows]), lists)


def _updated(copy: _Copy, state: _Pending) -> _Copy:
    """The copy with this transaction's deletions and writes applied, without a read."""
    import numpy as np

    changed = np.fromiter(state.deleted | set(state.added), dtype=np.int64)
    gone = np.isin(copy.rowids, changed)
    if gone.any():  # deletions and rewrites (rare: an erase, an edit)
        copy.keep(~gone)
    new = np.fromiter(state.added, dtype=np.int64, count=len(state.added))
    if len(new):
        copy.append(new, _stack(list(state.added.values())))
    return copy


def _top(sims: np.ndarray) -> np.ndarray:
    """Each row's DEPTH best values, best first (-inf where a row has fewer)."""
    import numpy as np

    n = sims.shape[1]
    if n > DEPTH:
        sims = np.partition(sims, n - DEPTH, axis=1)[:, n - DEPTH :]
    out = -np.sort(-sims, axis=1)
    if out.shape[1] < DEPTH:
        out = np.concatenate([out, np.full((len(out), DEPTH - out.shape[1]), -np.inf, dtype=np.float32)], axis=1)
    return out.astype(np.float32)


def _near(vecs: np.ndarray, ids: np.ndarray, ref: np.ndarray, ref_ids: np.ndarray) -> np.ndarray:
    """Cosines of ``vecs`` to ``ref`` (float64, as :func:`_wide` gives it),
    float32, -inf where a row meets itself.

    In float64, then rounded to float32: a float32 product's last bits depend on
    the shape of the block it was computed in, and a list must come out the same
    whichever settle computed it, or a rebuilt index would break ties
    differently (tests/test_reindex_pipeline.py). For a block against all of
    R, float64 is as fast here as float32 (OpenBLAS)."""
    import numpy as np

    sims: np.ndarray = (vecs.astype(np.float64) @ ref.T).astype(np.float32)
    order = np.argsort(ref_ids, kind="stable")
    at = np.minimum(np.searchsorted(ref_ids[order], ids), max(len(ref_ids) - 1, 0))
    mine = np.flatnonzero(ref_ids[order][at] == ids) if len(ref_ids) else np.zeros(0, dtype=np.int64)
    sims[mine, order[at[mine]]] = -np.inf
    return sims


def _near_few(vecs: np.ndarray, ids: np.ndarray, few: np.ndarray, few_ids: np.ndarray,
              floor: np.ndarray) -> np.ndarray:
    """Cosines of every vector to a few (members entering or leaving R),
    float32, exact (as :func:`_near`) where they reach each row's ``floor``,
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


def _wide(ref: np.ndarray) -> np.ndarray:
    import numpy as np

    return np.asarray(ref, dtype=np.float64)  # R, once per settle


def _lists(vecs: np.ndarray, ids: np.ndarray, ref: np.ndarray, ref_ids: np.ndarray) -> np.ndarray:
    """Neighbour lists of ``vecs`` computed afresh against R, by blocks."""
    import numpy as np

    out = np.empty((len(vecs), DEPTH), dtype=np.float32)
    for start in range(0, len(vecs), _BLOCK):
        end = start + _BLOCK
        out[start:end] = _top(_near(vecs[start:end], ids[start:end], ref, ref_ids))
    return out


def _write(conn: apsw.Connection, rowids: Sequence[int], lists: np.ndarray, keys: dict[int, int]) -> None:
    """Store these lists and their densities (the mean of the K best)."""
    import numpy as np

    finite = np.isfinite(lists)
    counts = finite.sum(axis=1)
    best = np.where(finite, lists, 0.0)[:, :K]
    means = best.sum(axis=1, dtype=np.float64) / np.maximum(np.minimum(counts, K), 1)
    conn.executemany(
        "INSERT INTO memory_density(rowid, density, neighbours, key) VALUES (?, ?, ?, ?) "
        "ON CONFLICT(rowid) DO UPDATE SET density = excluded.density, neighbours = excluded.neighbours",
        [(rowid, mean, row[:count].tobytes(), keys.get(rowid, 0))
         for rowid, mean, row, count in zip(rowids, means.tolist(), lists, counts.tolist())],
    )


def _full(conn: apsw.Connection, version: int) -> _Copy:
    """Every list computed afresh (a rebuild, orphans removed)."""
    import numpy as np

    conn.execute("DELETE FROM memory_density; DELETE FROM density_reference")
    copy = _read(conn, version)
    rowids = copy.rowids.tolist()
    keys = _keys(conn, rowids)
    pos = {r: i for i, r in enumerate(rowids)}
    ref_ids = np.array([r for _, r in sorted((k, r) for r, k in keys.items())[: S + 1]], dtype=np.int64)
    held = copy.matrix[[pos[r] for r in ref_ids.tolist()]]
    copy.lists[:] = _lists(copy.matrix, copy.rowids, _wide(held), ref_ids)
    _write(conn, rowids, copy.lists, keys)
    conn.executemany("INSERT INTO density_reference(rowid, embedding) VALUES (?, ?)",
                     [(r, v.tobytes()) for r, v in zip(ref_ids.tolist(), held)])
    return copy


def settle(conn: apsw.Connection) -> None:
    """Bring every density up to date with this transaction's vector writes
    and deletions (inside it, before COMMIT). Does nothing when there were none."""
    state = _STATE.get(conn)
    if state is None or not (state.added or state.deleted or state.full):
        return
    if conn in DEFERRED:  # a bulk write: no density until its end
        conn.execute("DELETE FROM memory_density; DELETE FROM density_reference")
    if not _has_vectors(conn) or conn in DEFERRED:
        _STATE[conn] = _Pending()
        return
    if conn.execute("SELECT 1 FROM memory_density LIMIT 1").fetchone() is None:
        state.full = True  # a bulk write that never reached its end, or the first vectors
    version = _data_version(conn)
    cached = state.copy if state.copy is not None and state.copy.version == version else None
    if state.full:
        copy: _Copy | None = _full(conn, version)
    else:
        copy = _incremental(conn, state, version, cached)
    _STATE[conn] = _Pending(copy=copy)


def _incremental(conn: apsw.Connection, state: _Pending, version: int, cached: _Copy | None) -> _Copy | None:
    import numpy as np

    keys = _keys(conn, list(state.added))
    held = {int(r): bytes(b) for r, b in conn.execute("SELECT rowid, embedding FROM density_reference")}
    stored = [(int(k), int(r)) for r, k in conn.execute(
        "SELECT rowid, key FROM memory_density ORDER BY key LIMIT ?", (S + 1 + len(state.added),))]
    ranked = sorted({*((k, r) for k, r in stored if r not in state.added), *((k, r) for r, k in keys.items())})
    new_ref = [r for _, r in ranked[: S + 1]]
    entering = [r for r in new_ref if r not in held]
    kept = set(new_ref)
    leaving = {r: b for r, b in held.items() if r not in kept} | state.left
    blobs = {r: held.get(r) or state.added.get(r) for r in new_ref}
    for r in [r for r, b in blobs.items() if b is None]:  # next in line after a member left
        for (blob,) in conn.execute("SELECT embedding FROM memory_vec WHERE rowid = ?", (r,)):
            blobs[r] = bytes(blob)
    ref_ids = np.array(new_ref, dtype=np.int64)
    ref = _wide(_stack([blobs[r] or b"" for r in new_ref]))
    added = sorted(state.added)
    if not entering and not leaving:  # R as it was: only the new memories' lists
        if cached is not None:
            copy = _fill(_updated(cached, state), ref, ref_ids)
            rows = np.flatnonzero(np.isin(copy.rowids, np.array(added, dtype=np.int64)))
            _write(conn, copy.rowids[rows].tolist(), copy.lists[rows], keys)
            return copy
        if added:
            _write(conn, added, _lists(_stack([state.added[r] for r in added]),
                                       np.array(added, dtype=np.int64), ref, ref_ids), keys)
        return None
    copy = _updated(cached, state) if cached is not None else _read(conn, version)
    if added:
        copy.lists[np.isin(copy.rowids, np.array(added, dtype=np.int64))] = np.nan
    changed = _follow(copy, len(held) + len(state.left), set(held), ref, ref_ids, entering, leaving)
    todo = np.isnan(copy.lists[:, 0])
    rows = np.flatnonzero(todo)
    copy.lists[rows] = _lists(copy.matrix[rows], copy.rowids[rows], ref, ref_ids)
    write = np.flatnonzero(todo | changed)
    keys.update(_keys(conn, [r for r in copy.rowids[rows].tolist() if r not in keys]))
    _write(conn, copy.rowids[write].tolist(), copy.lists[write], keys)
    conn.executemany("DELETE FROM density_reference WHERE rowid = ?", [(r,) for r in leaving])
    conn.executemany("INSERT INTO density_reference(rowid, embedding) VALUES (?, ?)",
                     [(r, blobs[r]) for r in entering])
    return copy


def _fill(copy: _Copy, ref: np.ndarray, ref_ids: np.ndarray) -> _Copy:
    """The cached copy's rows not computed yet (new this transaction) get their lists."""
    import numpy as np

    rows = np.flatnonzero(np.isnan(copy.lists[:, 0]))
    if len(rows):
        copy.lists[rows] = _lists(copy.matrix[rows], copy.rowids[rows], ref, ref_ids)
    return copy


def _follow(copy: _Copy, old_size: int, old_ref: set[int], ref: np.ndarray, ref_ids: np.ndarray,
            entering: list[int], leaving: dict[int, bytes]) -> np.ndarray:
    """Lists already computed follow R's change: each drops its cosine to a
    leaving member (found by value) and merges those to the entering ones; a
    list left with fewer than K is marked to be computed again (NaN). Returns
    which rows changed."""
    import numpy as np

    lists = copy.lists
    live = np.flatnonzero(~np.isnan(lists[:, 0]))
    changed = np.zeros(len(lists), dtype=bool)
    if not len(live):
        return changed
    ids = copy.rowids[live]
    vecs = copy.matrix if len(live) == len(lists) else copy.matrix[live]  # no copy of every vector
    member = np.isin(ids, np.fromiter(old_ref, dtype=np.int64, count=len(old_ref)))
    counts = np.isfinite(lists[live]).sum(axis=1)
    complete = counts >= old_size - member  # the list holds all of R but itself
    if leaving:
        gone_ids = np.fromiter(leaving, dtype=np.int64, count=len(leaving))
        last = np.where(np.isfinite(lists[live]), lists[live], np.inf).min(axis=1)
        sims = _near_few(vecs, ids, _stack(list(leaving.values())), gone_ids, last - _EPS)
        hit = np.flatnonzero((sims >= last[:, None] - _EPS).any(axis=1))
        if len(hit):
            lists[live[hit]] = _drop(lists[live[hit]], sims[hit], last[hit])
            changed[live[hit]] = True
    if entering:
        pos = {r: i for i, r in enumerate(ref_ids.tolist())}
        new_ids = np.array(entering, dtype=np.int64)
        last = np.where(np.isfinite(lists[live]), lists[live], np.inf).min(axis=1)
        sims = _near_few(vecs, ids, ref[[pos[r] for r in entering]].astype(np.float32), new_ids,
                         np.where(complete, -np.inf, last))
        take = complete[:, None] | (sims > last[:, None])
        sims = np.where(take, sims, -np.inf).astype(np.float32)
        hit = np.flatnonzero(np.isfinite(sims).any(axis=1))
        if len(hit):
            lists[live[hit]] = _top(np.concatenate([lists[live[hit]], sims[hit]], axis=1))
            changed[live[hit]] = True
    counts = np.isfinite(lists[live]).sum(axis=1)
    in_new = np.isin(ids, ref_ids)
    short = counts < np.minimum(K, len(ref_ids) - in_new)
    lists[live[short]] = np.nan
    return changed


def _drop(lists: np.ndarray, sims: np.ndarray, last: np.ndarray) -> np.ndarray:
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
