"""How crowded each memory's neighbourhood is, on PostgreSQL: ``memory_density``.

The same values as SQLite's (:mod:`memex.store.density`: the mean cosine
of a memory's body vector to its K nearest others), computed by the same
code, so that search's hub prior ranks alike on both backends
(docs/postgres.md, "Densities"). Only the bookkeeping is PostgreSQL's:

* :mod:`.rows` notes each body vector written (:func:`note_insert`) or
  about to be deleted (:func:`note_delete`); the first note of a
  transaction asks :class:`PgConnection` to :func:`settle` just before its
  COMMIT, under the write lock, and to forget the notes on a rollback;
* a process keeps every body vector and list in memory between its own
  transactions, as SQLite's does; PostgreSQL has no ``data_version``, so
  each settle bumps ``meta.density_epoch`` and a copy made at another
  epoch (another process wrote since) is read again;
* a bulk load (:mod:`.bulk`) marks the copies stale and its ``finish``
  computes every list afresh.

``neighbours`` and ``density`` are derived from the vectors: no statistics
are sampled from them (as for every column holding a memory's text or
vector, docs/postgres.md, erasure), and a purge deletes the row.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from functools import partial

from memex.store import density as core
from memex.store.postgres.connection import PgConnection

_STATE: weakref.WeakKeyDictionary[PgConnection, core.Pending] = weakref.WeakKeyDictionary()
_HOOK = "density"


def create(conn: PgConnection) -> None:
    """The table, and the epoch every settle bumps."""
    conn.execute(
        "CREATE TABLE IF NOT EXISTS memory_density "
        "(rowid BIGINT PRIMARY KEY, density DOUBLE PRECISION NOT NULL, neighbours BYTEA NOT NULL)"
    )
    for column in ("density", "neighbours"):
        conn.execute(f"ALTER TABLE memory_density ALTER COLUMN {column} SET STATISTICS 0")
    conn.execute("INSERT INTO meta(key, value) VALUES ('density_epoch', '0') ON CONFLICT (key) DO NOTHING")


def rebuild(conn: PgConnection) -> None:
    """Every density computed afresh at this transaction's commit (an index
    made by a memex without the table)."""
    create(conn)
    if conn.execute("SELECT to_regclass('memory_vec')").fetchone()[0] is not None:
        recompute_all(conn)


def _state(conn: PgConnection) -> core.Pending:
    state = _STATE.get(conn)
    if state is None:
        state = _STATE[conn] = core.Pending()
    conn.before_commit.setdefault(_HOOK, partial(settle, conn))
    conn.after_rollback.setdefault(_HOOK, partial(forget, conn))
    return state


def note_insert(conn: PgConnection, rowid: int, blob: bytes) -> None:
    """A body vector was written for ``rowid`` in this transaction."""
    _state(conn).added[rowid] = blob


def note_delete(conn: PgConnection, rowid: int) -> None:
    """``rowid``'s body vector is about to be deleted: remember it until the
    settle (to find whose neighbour it was) and drop its own row now."""
    state = _state(conn)
    state.added.pop(rowid, None)
    for (vec,) in conn.raw.execute("SELECT embedding FROM memory_vec WHERE rowid = %s", (rowid,), binary=True):
        state.removed.append(_blob(vec))
        state.deleted.add(rowid)
    conn.execute("DELETE FROM memory_density WHERE rowid = %s", (rowid,))


def forget(conn: PgConnection) -> None:
    """Drop what this connection noted and holds (a rollback)."""
    _STATE.pop(conn, None)
    conn.before_commit.pop(_HOOK, None)


def clear(conn: PgConnection) -> None:
    """Every density goes (the vector tables were made anew for another model)."""
    conn.execute("DELETE FROM memory_density")
    forget(conn)
    _bump(conn)


def stale(conn: PgConnection) -> None:
    """Vectors were written without notes (a bulk load): every process's copy
    is out of date; :func:`recompute_all` brings the lists back."""
    forget(conn)
    _bump(conn)


def recompute_all(conn: PgConnection) -> None:
    """Have this transaction's settle compute every list afresh (after a bulk
    load, or orphan vectors removed without :func:`note_delete`)."""
    conn.execute("DELETE FROM memory_density d WHERE NOT EXISTS (SELECT 1 FROM memory_vec v WHERE v.rowid = d.rowid)")
    state = _state(conn)
    state.full = True
    state.copy = None


def densities(conn: PgConnection, rowids: Sequence[int]) -> dict[int, float]:
    """Density of these memories (those without a body vector are left out)."""
    if not rowids:
        return {}
    rows = conn.execute("SELECT rowid, density FROM memory_density WHERE rowid = ANY(%s)", (list(rowids),))
    return {int(r): float(d) for r, d in rows}


def _blob(vec: object) -> bytes:
    import numpy as np

    return np.ascontiguousarray(vec, dtype=np.float32).tobytes()


def _epoch(conn: PgConnection) -> int:
    row = conn.execute("SELECT value FROM meta WHERE key = 'density_epoch'").fetchone()
    return int(row[0]) if row and row[0] is not None else 0


def _bump(conn: PgConnection) -> int:
    epoch = _epoch(conn) + 1
    conn.execute(
        "INSERT INTO meta(key, value) VALUES ('density_epoch', %s) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        (str(epoch),),
    )
    return epoch


def _read(conn: PgConnection, epoch: int) -> core.Copy:
    vectors = ((int(r), _blob(v)) for r, v in conn.raw.execute("SELECT rowid, embedding FROM memory_vec", binary=True))
    stored = ((int(r), bytes(b)) for r, b in conn.execute("SELECT rowid, neighbours FROM memory_density"))
    return core.build_copy(epoch, list(vectors), list(stored))


def settle(conn: PgConnection) -> None:
    """Bring every density up to date with this transaction's vector writes
    and deletions (run by :meth:`PgConnection.write_txn` before COMMIT)."""
    state = _STATE.pop(conn, None)
    if state is None or not (state.added or state.removed or state.deleted or state.full):
        return
    epoch = _epoch(conn)
    if state.copy is not None and state.copy.version == epoch and not state.full:
        copy = core.apply(state.copy, state)
    else:
        copy = _read(conn, epoch)
    rows = core.derive(copy, state)
    if state.full:
        conn.execute("DELETE FROM memory_density")
    elif rows:
        conn.execute("DELETE FROM memory_density WHERE rowid = ANY(%s)", ([r for r, _, _ in rows],))
    if rows:
        with conn.raw.cursor() as cur:
            with cur.copy("COPY memory_density (rowid, density, neighbours) FROM STDIN (FORMAT BINARY)") as out:
                out.set_types(["int8", "float8", "bytea"])
                for row in rows:
                    out.write_row(row)
    copy.version = _bump(conn)
    # Kept for this process's next transaction (not registered: nothing to settle yet).
    _STATE[conn] = core.Pending(copy=copy if len(copy.rowids) and copy.matrix.shape[1] else None)


# A bulk load computes exact lists up to this many vectors: exact costs
# O(n^2 * dim) (20k: 24 s, 1M: about 17 hours; docs/postgres.md, "Densities"),
# so a larger load takes each memory's neighbours from the HNSW index instead.
EXACT_UPTO = 50_000
_KNN_BATCH = 1000


def fill_from_knn(conn: PgConnection) -> int:
    """Every list from pgvector's HNSW KNN (approximate: a true neighbour may be
    missed, and cosines differ from SQLite's in the last float32 bits), inside
    the caller's write transaction, after the vector index is built. Later
    writes keep them as exact ones are kept. Returns the rows written."""
    import numpy as np

    conn.execute("DELETE FROM memory_density")
    forget(conn)
    written, after = 0, 0
    while True:
        ids = [int(r) for (r,) in conn.execute(
            "SELECT rowid FROM memory_vec WHERE rowid > %s ORDER BY rowid LIMIT %s", (after, _KNN_BATCH))]
        if not ids:
            break
        found: dict[int, list[float]] = {r: [] for r in ids}
        for rowid, sims in conn.execute(
            "SELECT v.rowid, array_agg(n.sim ORDER BY n.sim DESC) FROM memory_vec v CROSS JOIN LATERAL ("
            "  SELECT 1 - (w.embedding <=> v.embedding) AS sim FROM memory_vec w WHERE w.rowid <> v.rowid"
            "  ORDER BY w.embedding <=> v.embedding LIMIT %s) n WHERE v.rowid = ANY(%s) GROUP BY v.rowid",
            (core.K, ids),
        ):
            found[int(rowid)] = list(sims)
        rows = []
        for rowid, sims in found.items():
            values = np.sort(np.array(sims, dtype=np.float32))[::-1]  # best first, as derive stores them
            mean = float(values.sum(dtype=np.float64) / max(len(values), 1))
            rows.append((rowid, mean, values.tobytes()))
        with conn.raw.cursor() as cur:
            with cur.copy("COPY memory_density (rowid, density, neighbours) FROM STDIN (FORMAT BINARY)") as out:
                out.set_types(["int8", "float8", "bytea"])
                for row in rows:
                    out.write_row(row)
        written += len(rows)
        after = ids[-1]
    _bump(conn)
    return written
