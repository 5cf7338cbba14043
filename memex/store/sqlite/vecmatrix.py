"""An in-process copy of the index's vectors, for fast exact nearest neighbours.

sqlite-vec's ``vec0`` answers a k-nearest query by scanning every stored
vector, and fetching single vectors by rowid is slow. Measured on the 2-core
reference machine at 10k memories: a ``vec0`` KNN took 8-12 ms, a numpy
matrix-vector product over the same 10k x 384 floats 0.4 ms, and the
vector lookups that fill in cosine for lexical-only candidates 2-14 ms. So
search keeps the vectors of one connection in a numpy matrix and answers
from it; the SQLite tables stay the truth.

Keeping the copy true:

- changes made through *this* connection are seen by an SQLite update hook
  on ``memories`` and ``chunks``; the touched rows are re-read before the
  next search (a cheap, incremental refresh, so add-then-search stays fast);
- changes made by *another* connection (another process, another Vault)
  move ``PRAGMA data_version``; then the whole copy is reloaded, but only
  once the index has held still between two searches (until then, and in a
  one-shot process, search asks sqlite-vec as before: a load took 70-190 ms
  at 10k memories here).

Memory cost: 4 bytes x dimension per vector (1.5 KiB for 384 dimensions;
about 15 MiB at 10k memories, 150 MiB at 100k).
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Sequence

import apsw
import numpy as np

from memex.store.sqlite import vectors
from memex.store.sqlite.meta import get_meta
from memex.store.sqlite.schema import data_version

def _dot(matrix: np.ndarray, qvec: np.ndarray) -> np.ndarray:
    """Row-wise dot products without BLAS.

    ``matrix @ qvec`` goes to OpenBLAS, whose threads spin and wait for each
    other on a busy 2-core machine: 21 ms median for 10k x 384 while other
    work ran, against 0.4 ms for einsum's single-threaded loop.
    """
    out: np.ndarray = np.einsum("ij,j->i", matrix, np.asarray(qvec, dtype=np.float32))
    return out


class _Block:
    """Vectors keyed by rowid, each optionally owned by a memory rowid."""

    def __init__(self, dim: int) -> None:
        self.dim = dim
        self.matrix = np.zeros((0, dim), dtype=np.float32)
        self.keys = np.zeros(0, dtype=np.int64)  # rowid of each matrix row
        self.owners = np.zeros(0, dtype=np.int64)  # memory rowid each row speaks for
        self.live = np.zeros(0, dtype=bool)
        self.where: dict[int, int] = {}
        self.size = 0

    def _grow(self, need: int) -> None:
        cap = max(need, 2 * len(self.keys), 256)
        for name in ("matrix", "keys", "owners", "live"):
            old = getattr(self, name)
            shape = (cap, self.dim) if name == "matrix" else (cap,)
            new = np.zeros(shape, dtype=old.dtype)
            new[: self.size] = old[: self.size]
            setattr(self, name, new)

    def load(self, rows: Sequence[tuple[int, int, bytes]]) -> None:
        """Replace the contents with ``(key, owner, blob)`` rows in one go."""
        rows = [r for r in rows if len(r[2]) == 4 * self.dim]  # others: another model's
        n = len(rows)
        self.matrix = (
            np.frombuffer(b"".join(r[2] for r in rows), dtype=np.float32).reshape(n, self.dim).copy()
            if n else np.zeros((0, self.dim), dtype=np.float32)
        )
        self.keys = np.fromiter((r[0] for r in rows), dtype=np.int64, count=n)
        self.owners = np.fromiter((r[1] for r in rows), dtype=np.int64, count=n)
        self.live = np.ones(n, dtype=bool)
        self.where = {int(k): i for i, k in enumerate(self.keys.tolist())}
        self.size = n

    def put(self, key: int, owner: int, blob: bytes) -> None:
        vec = np.frombuffer(blob, dtype=np.float32)
        if vec.shape[0] != self.dim:
            return  # a vector of another model; the tables are being rebuilt
        slot = self.where.get(key)
        if slot is None:
            if self.size == len(self.keys):
                self._grow(self.size + 1)
            slot = self.size
            self.size += 1
            self.where[key] = slot
            self.keys[slot] = key
        self.matrix[slot] = vec
        self.owners[slot] = owner
        self.live[slot] = True

    def drop(self, key: int) -> None:
        slot = self.where.pop(key, None)
        if slot is not None:
            self.live[slot] = False
            self.matrix[slot] = 0.0

    def scores(self, qvec: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Cosine of every live row (vectors are unit length) and its owner."""
        n = self.size
        sims = _dot(self.matrix[:n], qvec)
        live = self.live[:n]
        return sims[live], self.owners[:n][live]


class VectorMatrix:
    """Memory and chunk vectors of one connection, refreshed as the index changes."""

    def __init__(self, conn: apsw.Connection) -> None:
        self._conn = weakref.ref(conn)
        self._lock = threading.Lock()
        self._dirty_memories: set[int] = set()
        self._dirty_chunks: set[int] = set()
        self._data_version = -1
        self._seen_version = -1  # data_version at the last search that found the copy stale
        self._model: str | None = None
        self.memories = _Block(0)
        self.chunks = _Block(0)
        conn.set_update_hook(self._on_change)

    def _on_change(self, kind: int, db: str, table: str, rowid: int) -> None:
        # A deleted (e.g. erased) memory's vector leaves the copy at once, not
        # at the next search; the hook may not query, but it may zero a row.
        if table == "memories":
            self._dirty_memories.add(rowid)
            if kind == apsw.SQLITE_DELETE:
                self.memories.drop(rowid)
        elif table == "chunks":
            self._dirty_chunks.add(rowid)
            if kind == apsw.SQLITE_DELETE:
                self.chunks.drop(rowid)

    def _full_load(self, conn: apsw.Connection, model: str, dim: int) -> None:
        self.memories, self.chunks = _Block(dim), _Block(dim)
        self._dirty_memories.clear()
        self._dirty_chunks.clear()
        self.memories.load(vectors.all_memory_vectors(conn))
        self.chunks.load(vectors.all_chunk_vectors(conn))
        self._model = model

    def _refresh_rows(self, conn: apsw.Connection) -> None:
        mem, self._dirty_memories = sorted(self._dirty_memories), set()
        chk, self._dirty_chunks = sorted(self._dirty_chunks), set()
        for start in range(0, len(mem), 500):
            batch = mem[start : start + 500]
            for key in batch:
                self.memories.drop(key)
            for rowid, owner, blob in vectors.memory_vectors_of(conn, batch):
                self.memories.put(rowid, owner, blob)
        for start in range(0, len(chk), 500):
            batch = chk[start : start + 500]
            for key in batch:
                self.chunks.drop(key)
            for rowid, owner, blob in vectors.chunk_vectors_of(conn, batch):
                self.chunks.put(rowid, owner, blob)

    def current(self, may_load: bool = True) -> VectorMatrix | None:
        """The copy, up to date; None when the caller should use SQLite instead.

        None when the index has no vector tables, and when the copy would
        have to be (re)loaded while that does not pay yet. A full load took
        70-190 ms at 10k memories, as much as 10-20 sqlite-vec searches. So it happens
        only once the index has stayed the same between two searches: a
        one-shot process (``memex search``) never pays for it, and neither
        does a search between other processes' busy writes.
        """
        conn = self._conn()
        if conn is None:
            return None
        with self._lock:
            model = get_meta(conn, "vector_model")
            dim = get_meta(conn, "vector_dim")
            if model is None or dim is None:
                return None
            version = data_version(conn)
            fresh = version == self._data_version and model == self._model and int(dim) == self.memories.dim
            if not fresh:
                if not may_load:
                    return None
                if version != self._seen_version:
                    self._seen_version = version
                    return None
                self._full_load(conn, model, int(dim))
                self._data_version = version
            elif self.memories.size - len(self.memories.where) > max(1000, len(self.memories.where)):
                if not may_load:
                    return None
                self._full_load(conn, model, int(dim))  # compact after much churn
            elif self._dirty_memories or self._dirty_chunks:
                self._refresh_rows(conn)
        return self

    def nearest(self, qvec: np.ndarray, k: int, allowed: np.ndarray | None = None) -> dict[int, float]:
        """The ``k`` memories nearest ``qvec`` (a chunk speaks for its memory),
        among the memory rowids in ``allowed`` when given."""
        best: dict[int, float] = {}
        for block in (self.memories, self.chunks):
            sims, owners = block.scores(qvec)
            if allowed is not None and sims.size:
                keep = np.isin(owners, allowed)
                sims, owners = sims[keep], owners[keep]
            if sims.size == 0:
                continue
            top = np.argpartition(-sims, k - 1)[:k] if sims.size > k else np.arange(sims.size)
            for i in top:
                owner, sim = int(owners[i]), float(sims[i])
                if sim > best.get(owner, -2.0):
                    best[owner] = sim
        if len(best) > k:
            best = dict(sorted(best.items(), key=lambda kv: -kv[1])[:k])
        return best

    def nearest_bodies(self, qvec: np.ndarray, k: int) -> dict[int, float]:
        """The ``k`` memories whose own vectors are nearest ``qvec`` (no chunks:
        what dedup compares), as sqlite-vec's KNN over ``memory_vec`` finds them."""
        sims, owners = self.memories.scores(qvec)
        top = np.argpartition(-sims, k - 1)[:k] if sims.size > k else np.arange(sims.size)
        return {int(owners[i]): float(sims[i]) for i in top}

    def body_cosines(self, qvec: np.ndarray, rowids: list[int] | set[int]) -> dict[int, float]:
        """Cosine of the query to each of these memories' own vectors."""
        out: dict[int, float] = {}
        mem = self.memories
        slots = [mem.where[r] for r in set(rowids) if r in mem.where]
        if slots:
            sims = _dot(mem.matrix[slots], qvec)
            for slot, sim in zip(slots, sims):
                out[int(mem.keys[slot])] = float(sim)
        return out

    def cosines(self, qvec: np.ndarray, rowids: list[int] | set[int]) -> dict[int, float]:
        """Cosine of the query to each of these memories (body or best chunk)."""
        wanted = set(rowids)
        out = self.body_cosines(qvec, wanted)
        if self.chunks.size:
            sims, owners = self.chunks.scores(qvec)
            for owner, sim in zip(owners.tolist(), sims.tolist()):
                if owner in wanted and sim > out.get(owner, -2.0):
                    out[owner] = sim
        return out


_MATRICES: weakref.WeakKeyDictionary[apsw.Connection, VectorMatrix] = weakref.WeakKeyDictionary()
_MATRICES_LOCK = threading.Lock()


def for_connection(conn: apsw.Connection, may_load: bool = True) -> VectorMatrix | None:
    """The up-to-date vector copy of ``conn``, or None: then search SQLite.

    The copy is made on first use and loaded on the second search that finds
    the index unchanged (see :meth:`VectorMatrix.current`). ``may_load=False``
    (dedup) takes the copy only when it is loaded already: an add in a hook
    process must not pay for the load a second search would.
    """
    with _MATRICES_LOCK:
        matrix = _MATRICES.get(conn)
        if matrix is None:
            if not may_load:
                return None
            matrix = _MATRICES[conn] = VectorMatrix(conn)
    return matrix.current(may_load)
