"""How crowded each memory's neighbourhood is: ``memory_density``.

A memory's *density* is the mean cosine of its body vector to its :data:`K`
nearest neighbours among the *reference set* R, itself left out. R is the
``S + 1`` memories (:data:`S`) whose :func:`key` (a hash of the memory id)
is smallest, so while a vault holds at most ``S + 1`` memories R is every
memory and the density is the mean cosine to the K nearest other memories.
Past that R is a uniform sample, the same whichever order or process wrote
the files. Small talk and boilerplate ("ok, sounds good") sit near many
memories and so near every query: they are the hubs of the vector space,
and a rule with a hub prior lowers them (:func:`memex.search.fusion.rank`, the
multilingual model's rule; why and the figures: docs/search.md).
A bulk write (:data:`DEFERRED`) empties the tables; the next settle after it
(or after its crash) finds them empty and computes every list once.

Kept exact where every vector passes: :mod:`memex.store.sqlite.vectors` notes each
body vector written or deleted (:func:`note_insert`, :func:`note_delete`);
:func:`settle` runs in the transaction before its COMMIT (``memex.store.sqlite.schema``). Stored: per memory its key
(indexed: R is the first ``S + 1`` rows in key order), its :data:`DEPTH`
nearest cosines among R (float32, best first: numbers only, no neighbour's
identity) and a digest of its body vector; the density, the mean of the
first K, is computed when read (:func:`memex.store.nearest.mean`). R's
vectors are not copied into a table of their own: a connection reads them
once and keeps them in memory (:class:`_Ref`), reading them again only
after another connection wrote. The read is O(S): from the embedding cache,
each vector checked against its row's digest, and from the vector table
only where the cache cannot vouch for the bits (:mod:`memex.store.refvectors`).

Cost: a write that leaves R alone (probability ~``1 - S/N``) computes each
new memory against R's vectors in memory: O(S). A write that changes R
needs every vector and list (each merges the entering member's cosine,
drops the leaving one's; one below K entries is recomputed): O(N) per
change, O(S) per write on average. Figures: docs/search.md.
"""

from __future__ import annotations

import hashlib
import weakref
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from memex.store import nearest, refvectors
from memex.store.nearest import DEPTH, K  # noqa: F401  (read here by tests and docs)

if TYPE_CHECKING:
    import numpy as np

    from memex.store.protocol import SqlConnection  # SQLite's connection or PostgreSQL's dialect

S = 2048  # reference set size - 1 (docs/store.md, docs/postgres.md "Densities")
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
                     np.empty((cap, nearest.DEPTH), dtype=np.float32))
            grown[0][: self.size], grown[2][: self.size] = self.rowids, self.lists
            if self.size:
                grown[1][: self.size] = self.matrix
            self._rowids, self._matrix, self._lists = grown
        self._rowids[self.size : need] = rowids
        self._matrix[self.size : need] = matrix
        self._lists[self.size : need] = np.nan
        self.size = need


class _Ref:
    """R as of a settle at ``version`` (``data_version``): its members in key
    order, their keys, and their vectors (float64, as products against R take
    them; one row per member). Kept between a connection's transactions, so a
    write reads R's vectors only after another connection wrote."""

    def __init__(self, version: int, rowids: list[int], keys: list[int], matrix: np.ndarray) -> None:
        import numpy as np

        self.version, self.rowids, self.keys, self.matrix = version, rowids, keys, matrix
        self.ids = np.array(rowids, dtype=np.int64)
        self.pos = {r: i for i, r in enumerate(rowids)}

    def vector(self, rowid: int) -> bytes:
        """A member's vector as stored (float32 bytes)."""
        import numpy as np

        return bytes(self.matrix[self.pos[rowid]].astype(np.float32).tobytes())


@dataclass
class _Pending:
    added: dict[int, bytes] = field(default_factory=dict)  # rowid -> body vector written
    left: dict[int, bytes] = field(default_factory=dict)  # R members deleted -> their vector (memory only)
    deleted: set[int] = field(default_factory=set)  # rowids whose vector was deleted
    full: bool = False  # compute every list afresh (a rebuild, orphan vectors removed)
    copy: _Copy | None = None
    ref: _Ref | None = None  # R as of this connection's last settle
    checked: bool = False  # ``ref`` checked against data_version in this transaction


_STATE: weakref.WeakKeyDictionary[SqlConnection, _Pending] = weakref.WeakKeyDictionary()
DEFERRED: weakref.WeakSet[SqlConnection] = weakref.WeakSet()  # connections in a bulk write


def _state(conn: SqlConnection) -> _Pending:
    state = _STATE.get(conn)
    if state is None:
        state = _STATE[conn] = _Pending()
    return state


def create(conn: SqlConnection) -> None:
    conn.execute(
        "CREATE TABLE IF NOT EXISTS memory_density "
        "(rowid INTEGER PRIMARY KEY, neighbours BLOB NOT NULL, key INTEGER NOT NULL, digest INTEGER);"
        "CREATE INDEX IF NOT EXISTS memory_density_key ON memory_density(key)"
    )


def note_insert(conn: SqlConnection, rowid: int, blob: bytes) -> None:
    """A body vector was written for ``rowid`` in this transaction."""
    _state(conn).added[rowid] = blob


def note_delete(conn: SqlConnection, rowid: int) -> None:
    """``rowid``'s body vector is about to be deleted: drop its row now and,
    if it was in R, remember its vector until the settle (whose lists held it)."""
    state = _state(conn)
    state.added.pop(rowid, None)
    if conn.execute("SELECT 1 FROM memory_vec WHERE rowid = ?", (rowid,)).fetchone() is not None:
        state.deleted.add(rowid)
    if not state.full and conn not in DEFERRED:
        ref = _reference(conn, state)  # R before this transaction deletes any row
        if rowid in ref.pos and rowid not in state.left:
            state.left[rowid] = ref.vector(rowid)
    conn.execute("DELETE FROM memory_density WHERE rowid = ?", (rowid,))


def forget(conn: SqlConnection) -> None:
    """Drop what this connection noted and holds (a rollback, new vector tables)."""
    _STATE.pop(conn, None)


def clear(conn: SqlConnection) -> None:
    """Every density goes (the vector tables were made anew for another model)."""
    conn.execute("DELETE FROM memory_density")
    forget(conn)


def densities(conn: SqlConnection, rowids: Sequence[int]) -> dict[int, float]:
    """Density of these memories (those without a body vector are left out)."""
    return {int(r): nearest.mean(b) for r, b in _rows_of(conn, "SELECT rowid, neighbours FROM memory_density", rowids)}


def _rows_of(conn: SqlConnection, select: str, rowids: Sequence[int]) -> Iterator[tuple[Any, Any]]:
    """``select`` ... ``WHERE rowid IN (...)`` over ``rowids``, in batches of bound parameters."""
    ids = list(rowids)
    for start in range(0, len(ids), _BATCH):
        part = ids[start : start + _BATCH]
        yield from conn.execute(f"{select} WHERE rowid IN ({','.join('?' * len(part))})", part)


def rebuild(conn: SqlConnection) -> None:
    """Every density computed afresh from the stored vectors (an index made
    by a memex without this table, or with another definition)."""
    conn.execute("DROP TABLE IF EXISTS memory_density")
    create(conn)
    forget(conn)
    if _has_vectors(conn):
        _state(conn).full = True  # the transaction's settle computes them


def recompute_all(conn: SqlConnection) -> None:
    """Have this transaction's settle compute every list afresh (vectors left
    without :func:`note_delete`: orphans removed after a crash)."""
    _STATE[conn] = _Pending(full=True)  # what was noted is computed afresh with the rest


def _data_version(conn: SqlConnection) -> int:
    row = conn.execute("PRAGMA data_version").fetchone()
    return int(row[0]) if row else 0


def _has_vectors(conn: SqlConnection) -> bool:
    return conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'memory_vec'").fetchone() is not None


def _reference(conn: SqlConnection, state: _Pending) -> _Ref:
    """R as of the last settle: this connection's own unless another
    connection wrote since; else read (its rows in key order, their vectors
    from the vector table by rowid). Called before this transaction deletes
    a row of ``memory_density``."""
    if not state.checked or state.ref is None:
        version = _data_version(conn)
        if state.ref is None or state.ref.version != version:
            members = [(int(r), int(k)) for r, k in conn.execute(
                "SELECT rowid, key FROM memory_density ORDER BY key LIMIT ?", (S + 1,))]
            blobs = refvectors.read(conn, [r for r, _ in members])
            state.ref = _Ref(version, [r for r, _ in members], [k for _, k in members],
                             nearest.wide(nearest.stack([blobs[r] for r, _ in members])))
        state.checked = True
    return state.ref


def _keys(conn: SqlConnection, rowids: Sequence[int]) -> dict[int, int]:
    """Each memory's :func:`key` (a vector without a memory row, an orphan, hashes its rowid)."""
    ids = {int(r): str(i) for r, i in _rows_of(conn, "SELECT rowid, id FROM memories", rowids)}
    return {r: key(ids.get(r, f"#{r}")) for r in rowids}


def _read(conn: SqlConnection, version: int) -> _Copy:
    """Every body vector and stored list, read from the index (this transaction's writes included)."""
    import numpy as np

    rows = sorted((int(r), bytes(b)) for r, b in conn.execute("SELECT rowid, embedding FROM memory_vec"))
    rowids = np.fromiter((r for r, _ in rows), dtype=np.int64, count=len(rows))
    lists = np.full((len(rows), nearest.DEPTH), np.nan, dtype=np.float32)  # no stored list: computed at this settle
    pos = {r: i for i, r in enumerate(rowids.tolist())}
    for rowid, blob in conn.execute("SELECT rowid, neighbours FROM memory_density"):
        i = pos.get(int(rowid))
        if i is not None:
            values = np.frombuffer(blob, dtype=np.float32)[: nearest.DEPTH]
            lists[i] = -np.inf
            lists[i, : len(values)] = values
    return _Copy(version, rowids, nearest.stack([b for _, b in rows]), lists)


def _updated(copy: _Copy, state: _Pending) -> _Copy:
    """The copy with this transaction's deletions and writes applied, without a read."""
    import numpy as np

    changed = np.fromiter(state.deleted | set(state.added), dtype=np.int64)
    gone = np.isin(copy.rowids, changed)
    if gone.any():  # deletions and rewrites (rare: an erase, an edit)
        copy.keep(~gone)
    new = np.fromiter(state.added, dtype=np.int64, count=len(state.added))
    if len(new):
        copy.append(new, nearest.stack(list(state.added.values())))
    return copy


def _write(conn: SqlConnection, rowids: Sequence[int], lists: np.ndarray, keys: dict[int, int],
           digests: dict[int, int]) -> None:
    """Store these lists (their finite cosines; the density is read from them:
    :func:`densities`) and, for rows whose vector is new, its digest
    (:mod:`memex.store.refvectors`; a row keeps its digest while its vector stays)."""
    import numpy as np

    counts = np.isfinite(lists).sum(axis=1)
    rows = [(rowid, row[:count].tobytes(), keys.get(rowid, 0))
            for rowid, row, count in zip(rowids, lists, counts.tolist())]
    if refvectors.indexed(conn):  # no digest kept (refvectors: PostgreSQL)
        conn.executemany("INSERT INTO memory_density(rowid, neighbours, key) VALUES (?, ?, ?) "
                         "ON CONFLICT(rowid) DO UPDATE SET neighbours = excluded.neighbours", rows)
        return
    conn.executemany(
        "INSERT INTO memory_density(rowid, neighbours, key, digest) VALUES (?, ?, ?, ?) "
        "ON CONFLICT(rowid) DO UPDATE SET neighbours = excluded.neighbours, "
        "digest = coalesce(excluded.digest, memory_density.digest)",
        [(*row, digests.get(row[0])) for row in rows],
    )


def _digests(conn: SqlConnection, rowids: Sequence[int], vectors: np.ndarray) -> dict[int, int]:
    """The digests of these vectors (float32 rows: the bytes memory_vec holds), where kept."""
    if refvectors.indexed(conn):
        return {}
    return refvectors.digests((r, v.tobytes()) for r, v in zip(rowids, vectors))


def _full(conn: SqlConnection, version: int) -> tuple[_Copy, _Ref]:
    """Every list computed afresh (a rebuild, orphans removed)."""
    import numpy as np

    conn.execute("DELETE FROM memory_density")
    copy = _read(conn, version)
    rowids = copy.rowids.tolist()
    keys = _keys(conn, rowids)
    pos = {r: i for i, r in enumerate(rowids)}
    ranked = sorted((k, r) for r, k in keys.items())[: S + 1]
    ref_ids = np.array([r for _, r in ranked], dtype=np.int64)
    held = nearest.wide(copy.matrix[[pos[r] for r in ref_ids.tolist()]])
    ref = _Ref(version, ref_ids.tolist(), [k for k, _ in ranked], held)
    copy.lists[:] = nearest.lists(copy.matrix, copy.rowids, ref.matrix, ref_ids)
    _write(conn, rowids, copy.lists, keys, _digests(conn, rowids, copy.matrix))
    return copy, ref


def settle(conn: SqlConnection) -> None:
    """Bring every density up to date with this transaction's vector writes
    and deletions (inside it, before COMMIT). Does nothing when there were none."""
    state = _STATE.get(conn)
    if state is None or not (state.added or state.deleted or state.full):
        if state is not None:  # the next transaction checks R against data_version again
            _STATE[conn] = _Pending(copy=state.copy, ref=state.ref)
        return
    if conn in DEFERRED:  # a bulk write: no density until its end
        conn.execute("DELETE FROM memory_density")
    if not _has_vectors(conn) or conn in DEFERRED:
        _STATE[conn] = _Pending()
        return
    if conn.execute("SELECT 1 FROM memory_density LIMIT 1").fetchone() is None:
        state.full = True  # a bulk write that never reached its end, or the first vectors
    version = _data_version(conn)
    cached = state.copy if state.copy is not None and state.copy.version == version else None
    copy: _Copy | None
    if state.full:
        copy, ref = _full(conn, version)
    else:
        copy, ref = _incremental(conn, state, version, cached)
    _STATE[conn] = _Pending(copy=copy, ref=ref)


def _incremental(conn: SqlConnection, state: _Pending, version: int,
                 cached: _Copy | None) -> tuple[_Copy | None, _Ref]:
    import numpy as np

    old = _reference(conn, state)
    keys = _keys(conn, list(state.added))
    digests = {} if refvectors.indexed(conn) else refvectors.digests(state.added.items())
    ref, entering, leaving = _next(conn, state, version, old, keys)
    ref_ids = ref.ids
    added = sorted(state.added)
    if not entering and not leaving:  # R as it was: only the new memories' lists
        if cached is not None:
            copy = _fill(_updated(cached, state), ref.matrix, ref_ids)
            rows = np.flatnonzero(np.isin(copy.rowids, np.array(added, dtype=np.int64)))
            _write(conn, copy.rowids[rows].tolist(), copy.lists[rows], keys, digests)
            return copy, ref
        if added:
            _write(conn, added, nearest.lists(nearest.stack([state.added[r] for r in added]),
                                              np.array(added, dtype=np.int64), ref.matrix, ref_ids), keys, digests)
        return None, ref
    copy = _updated(cached, state) if cached is not None else _read(conn, version)
    if added:
        copy.lists[np.isin(copy.rowids, np.array(added, dtype=np.int64))] = np.nan
    stay = set(old.rowids) - set(state.left)
    changed = nearest.follow(copy.lists, copy.rowids, copy.matrix, len(old.rowids), stay, ref.matrix, ref_ids,
                             entering, leaving)
    todo = np.isnan(copy.lists[:, 0])
    rows = np.flatnonzero(todo)
    copy.lists[rows] = nearest.lists(copy.matrix[rows], copy.rowids[rows], ref.matrix, ref_ids)
    digests.update(_digests(conn, copy.rowids[rows].tolist(), copy.matrix[rows]))  # rows new to the table
    write = np.flatnonzero(todo | changed)
    keys.update(_keys(conn, [r for r in copy.rowids[rows].tolist() if r not in keys]))
    _write(conn, copy.rowids[write].tolist(), copy.lists[write], keys, digests)
    return copy, ref


def _next(conn: SqlConnection, state: _Pending, version: int, old: _Ref,
          keys: dict[int, int]) -> tuple[_Ref, list[int], dict[int, bytes]]:
    """R after this transaction, the members entering it, and those leaving
    it with their vectors. Most writes (no member deleted, every new key
    after R's last) leave R as it was: nothing to read or rank."""
    last = (old.keys[-1], old.rowids[-1]) if len(old.rowids) > S else None
    if not state.left and last is not None and all((k, r) > last for r, k in keys.items()):
        old.version = version
        return old, [], {}
    held = [r for r in old.rowids if r not in state.left]  # members that stay in the index
    ranked = [(old.keys[old.pos[r]], r) for r in held] + [(k, r) for r, k in keys.items()]
    if state.left and last is not None:  # members left: the next in line take their places
        wanted = len(state.left) + old.keys.count(last[0]) + len(keys)  # past R's last and any rewritten
        ranked += [(int(k), int(r)) for r, k in conn.execute(
            "SELECT rowid, key FROM memory_density WHERE key >= ? ORDER BY key LIMIT ?", (last[0], wanted))
            if int(r) not in old.pos and int(r) not in keys]
    stay = set(held)
    ref = _assemble(conn, version, sorted(ranked)[: S + 1], old, stay, state.added)
    kept = set(ref.rowids)
    entering = [r for r in ref.rowids if r not in stay]
    return ref, entering, {r: old.vector(r) for r in held if r not in kept} | state.left


def _assemble(conn: SqlConnection, version: int, ranked: list[tuple[int, int]], old: _Ref,
              held: set[int], added: dict[int, bytes]) -> _Ref:
    """R after this transaction (``ranked``: its keys and rowids in key
    order): the old R's rows that stay, the vectors written in this
    transaction, and those of the next in line read by rowid."""
    import numpy as np

    rowids = [r for _, r in ranked]
    new = [r for r in rowids if r not in held]
    blobs = {r: added[r] for r in new if r in added}
    blobs.update(refvectors.read(conn, [r for r in new if r not in blobs]))
    fresh = nearest.wide(nearest.stack([blobs[r] for r in new]))
    dim = old.matrix.shape[1] if held else fresh.shape[1]
    matrix = np.empty((len(rowids), dim), dtype=np.float64)
    at = [i for i, r in enumerate(rowids) if r in held]
    matrix[at] = old.matrix[[old.pos[rowids[i]] for i in at]]
    if new:
        matrix[[i for i, r in enumerate(rowids) if r not in held]] = fresh
    return _Ref(version, rowids, [k for k, _ in ranked], matrix)


def _fill(copy: _Copy, ref: np.ndarray, ref_ids: np.ndarray) -> _Copy:
    """The cached copy's rows not computed yet (new this transaction) get their lists."""
    import numpy as np

    rows = np.flatnonzero(np.isnan(copy.lists[:, 0]))
    if len(rows):
        copy.lists[rows] = nearest.lists(copy.matrix[rows], copy.rowids[rows], ref, ref_ids)
    return copy
