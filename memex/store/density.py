"""How crowded each memory's neighbourhood is: ``memory_density``.

A memory's *density* is the mean cosine of its body vector to the
:data:`K` nearest other memories' body vectors. Small talk and boilerplate
("ok, sounds good", "let's park that for now") sit near many memories and
so near every query: they are the hubs of the vector space, and search
lowers them (:func:`memex.search.fusion.answer_prior`; why and the figures:
docs/search.md, "Crowded neighbourhoods"). It is local scaling in the sense
of CSLS: a cosine counts for less where everything is close.

The value is derived from the vectors, so it is kept exact by the one place
every vector passes: :mod:`memex.store.vectors` notes each body vector
written or deleted in this transaction (:func:`note_insert`,
:func:`note_delete`), and :func:`settle` runs inside the transaction just
before its COMMIT (``memex.store.schema``). A memory's neighbour list
changes only when a new vector comes closer than its K-th neighbour (merged
into the list) or a vector that was among its K nearest goes (its list is
computed again), so a settle touches a few rows, not all. A purge deletes
the memory's row here with its vectors. The table stores each memory's K
nearest cosines (float32, best first); the density is their mean.

Cost: a settle needs every body vector; a process keeps them in memory
between its own transactions and reads them again only after another
connection wrote (``PRAGMA data_version``), so a reindex reads them once.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import apsw

if TYPE_CHECKING:
    import numpy as np

K = 10  # neighbours per memory (docs/search.md: 5, 10 and 20 measured)
_BLOCK = 1024  # rows per matrix product when lists are computed afresh
_EPS = 1e-6  # float noise between a product by blocks and one by vector
_BATCH = 500


class Copy:
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
    def lists(self) -> np.ndarray:  # float32 (n, K), best first; -inf: fewer than K others; NaN: not computed
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
                     np.empty((cap, K), dtype=np.float32))
            grown[0][: self.size], grown[2][: self.size] = self.rowids, self.lists
            if self.size:
                grown[1][: self.size] = self.matrix
            self._rowids, self._matrix, self._lists = grown
        self._rowids[self.size : need] = rowids
        self._matrix[self.size : need] = matrix
        self._lists[self.size : need] = np.nan
        self.size = need


@dataclass
class Pending:
    added: dict[int, bytes] = field(default_factory=dict)  # rowid -> body vector written
    removed: list[bytes] = field(default_factory=list)  # body vectors deleted (memory only, never stored)
    deleted: set[int] = field(default_factory=set)  # their rowids
    full: bool = False  # compute every list afresh (a rebuild, orphan vectors removed)
    copy: Copy | None = None


_STATE: weakref.WeakKeyDictionary[apsw.Connection, Pending] = weakref.WeakKeyDictionary()


def _state(conn: apsw.Connection) -> Pending:
    state = _STATE.get(conn)
    if state is None:
        state = _STATE[conn] = Pending()
    return state


def create(conn: apsw.Connection) -> None:
    conn.execute(
        "CREATE TABLE IF NOT EXISTS memory_density "
        "(rowid INTEGER PRIMARY KEY, density REAL NOT NULL, neighbours BLOB NOT NULL)"
    )


def note_insert(conn: apsw.Connection, rowid: int, blob: bytes) -> None:
    """A body vector was written for ``rowid`` in this transaction."""
    _state(conn).added[rowid] = blob


def note_delete(conn: apsw.Connection, rowid: int) -> None:
    """``rowid``'s body vector is about to be deleted: remember it until the
    settle (to find whose neighbour it was) and drop its own row now."""
    state = _state(conn)
    state.added.pop(rowid, None)
    for (blob,) in conn.execute("SELECT embedding FROM memory_vec WHERE rowid = ?", (rowid,)):
        state.removed.append(bytes(blob))
        state.deleted.add(rowid)
    conn.execute("DELETE FROM memory_density WHERE rowid = ?", (rowid,))


def forget(conn: apsw.Connection) -> None:
    """Drop what this connection noted and holds (a rollback, new vector tables)."""
    _STATE.pop(conn, None)


def clear(conn: apsw.Connection) -> None:
    """Every density goes (the vector tables were made anew for another model)."""
    conn.execute("DELETE FROM memory_density")
    forget(conn)


def densities(conn: apsw.Connection, rowids: Sequence[int]) -> dict[int, float]:
    """Density of these memories (those without a body vector are left out)."""
    out: dict[int, float] = {}
    ids = list(rowids)
    for start in range(0, len(ids), _BATCH):
        part = ids[start : start + _BATCH]
        marks = ",".join("?" * len(part))
        for rowid, value in conn.execute(f"SELECT rowid, density FROM memory_density WHERE rowid IN ({marks})", part):
            out[int(rowid)] = float(value)
    return out


def rebuild(conn: apsw.Connection) -> None:
    """Every density computed afresh from the stored vectors (an index made
    by a memex without this table)."""
    create(conn)
    if not _has_vectors(conn):
        return
    conn.execute("DELETE FROM memory_density")
    forget(conn)
    _state(conn).full = True  # the transaction's settle computes them


def recompute_all(conn: apsw.Connection) -> None:
    """Have this transaction's settle compute every list afresh (vectors left
    without :func:`note_delete`: orphans removed after a crash)."""
    conn.execute("DELETE FROM memory_density WHERE rowid NOT IN (SELECT rowid FROM memory_vec)")
    state = _state(conn)
    state.full = True
    state.copy = None


def _data_version(conn: apsw.Connection) -> int:
    row = conn.execute("PRAGMA data_version").fetchone()
    return int(row[0]) if row else 0


def _has_vectors(conn: apsw.Connection) -> bool:
    return conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'memory_vec'").fetchone() is not None


def _read(conn: apsw.Connection, version: int) -> Copy:
    """Every body vector and stored list, read from the index (this transaction's writes included)."""
    return build_copy(version, conn.execute("SELECT rowid, embedding FROM memory_vec"),
                      conn.execute("SELECT rowid, neighbours FROM memory_density"))


def build_copy(version: int, vectors: Iterable[tuple[int, bytes]], stored: Iterable[tuple[int, bytes]]) -> Copy:
    """A copy of every body vector (rowid, float32 blob) and stored list
    (rowid, neighbours blob): what a settle works on, whichever backend holds them."""
    import numpy as np

    rows = sorted((int(r), bytes(b)) for r, b in vectors)
    rowids = np.fromiter((r for r, _ in rows), dtype=np.int64, count=len(rows))
    matrix = _stack([b for _, b in rows])
    lists = np.full((len(rows), K), -np.inf, dtype=np.float32)
    known = np.zeros(len(rows), dtype=bool)
    pos = {r: i for i, r in enumerate(rowids.tolist())}
    for rowid, blob in stored:
        i = pos.get(int(rowid))
        if i is not None:
            values = np.frombuffer(bytes(blob), dtype=np.float32)[:K]
            lists[i, : len(values)] = values
            known[i] = True
    copy = Copy(version, rowids, matrix, lists)
    copy.lists[~known] = np.nan  # no stored list: computed at this settle
    return copy


def _stack(blobs: list[bytes]) -> np.ndarray:
    import numpy as np

    if not blobs:
        return np.zeros((0, 0), dtype=np.float32)
    return np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(len(blobs), -1).copy()


def apply(copy: Copy, state: Pending) -> Copy:
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
    """Each row's K best values, best first (-inf where a row has fewer)."""
    import numpy as np

    n = sims.shape[1]
    if n > K:
        sims = np.partition(sims, n - K, axis=1)[:, n - K :]
    out = -np.sort(-sims, axis=1)
    if out.shape[1] < K:
        out = np.concatenate([out, np.full((len(out), K - out.shape[1]), -np.inf, dtype=np.float32)], axis=1)
    return out.astype(np.float32)


def _compute(copy: Copy, rows: np.ndarray, keep: np.ndarray | None = None) -> np.ndarray | None:
    """Neighbour lists of ``rows`` (positions) computed afresh against every vector.

    ``keep``: positions (all among ``rows``) whose cosines to every memory are
    returned, one column each (n, len(keep)), for merging into other lists.
    """
    import numpy as np

    columns = None if keep is None else np.empty((len(copy.rowids), len(keep)), dtype=np.float32)
    where = {} if keep is None else {int(p): j for j, p in enumerate(keep.tolist())}
    # In float64, then rounded to float32: a float32 product's last bits depend on
    # the shape of the block it was computed in, and a list must come out the
    # same whichever settle computed it, or a rebuilt index would break ties
    # differently (tests/test_reindex_pipeline.py).
    wide = copy.matrix.astype(np.float64) if len(rows) else copy.matrix
    for start in range(0, len(rows), _BLOCK):
        part = rows[start : start + _BLOCK]
        sims = (wide[part] @ wide.T).astype(np.float32)
        sims[np.arange(len(part)), part] = -np.inf  # not its own neighbour
        if columns is not None:
            for i, p in enumerate(part.tolist()):
                j = where.get(p)
                if j is not None:
                    columns[:, j] = sims[i]
        copy.lists[part] = _top(sims)
    return columns


def settle(conn: apsw.Connection) -> None:
    """Bring every density up to date with this transaction's vector writes
    and deletions (inside it, before COMMIT). Does nothing when there were none."""
    state = _STATE.get(conn)
    if state is None or not (state.added or state.removed or state.deleted or state.full):
        return
    version = _data_version(conn)
    if state.copy is not None and state.copy.version == version and not state.full:
        copy = apply(state.copy, state)
    else:
        copy = _read(conn, version)
    rows = derive(copy, state)
    if rows:
        conn.executemany("INSERT OR REPLACE INTO memory_density(rowid, density, neighbours) VALUES (?, ?, ?)", rows)
    _STATE[conn] = Pending(copy=copy if len(copy.rowids) and copy.matrix.shape[1] else None)


def derive(copy: Copy, state: Pending) -> list[tuple[int, float, bytes]]:
    """The (rowid, density, neighbours) rows a settle writes, given the copy
    with ``state``'s writes and deletions applied (:func:`build_copy`,
    :func:`apply`). Updates the copy's lists. The one computation both
    backends run, so that they store the same values (docs/postgres.md)."""
    import numpy as np

    if state.full:
        copy.lists[:] = np.nan
    n = len(copy.rowids)
    if n == 0 or copy.matrix.shape[1] == 0:
        return []
    pos = {r: i for i, r in enumerate(copy.rowids.tolist())}
    kth = copy.lists[:, K - 1]
    todo = np.isnan(kth)  # written in this transaction, or never computed
    if state.removed:
        # A list that held a deleted vector is computed again.
        sims = copy.matrix @ _stack(state.removed).T
        todo |= (sims >= kth[:, None] - _EPS).any(axis=1)
    added = np.array(sorted(pos[r] for r in state.added if r in pos), dtype=np.int64)
    rows = np.flatnonzero(todo)
    # The new vectors' cosines to every memory come out of their own lists'
    # products; a list they come closer than its K-th neighbour merges them.
    columns = _compute(copy, rows, keep=added if not todo.all() else None)
    merged = np.zeros(n, dtype=bool)
    if columns is not None and len(added):
        merged = (columns > kth[:, None]).any(axis=1) & ~todo
        near = np.flatnonzero(merged)
        if len(near):
            copy.lists[near] = _top(np.concatenate([copy.lists[near], columns[near]], axis=1))
    changed = np.flatnonzero(todo | merged)
    lists = copy.lists[changed]
    finite = np.isfinite(lists)
    counts = finite.sum(axis=1)
    means = np.where(finite, lists, 0.0).sum(axis=1, dtype=np.float64) / np.maximum(counts, 1)
    full = counts == K
    return [(rowid, mean, row.tobytes() if whole else row[: count].tobytes())
            for rowid, mean, row, whole, count in zip(copy.rowids[changed].tolist(), means.tolist(), lists,
                                                      full.tolist(), counts.tolist())]
