"""How crowded each memory's neighbourhood is, on PostgreSQL: ``memory_density``.

The same values as SQLite's, computed by the same code: :mod:`memex.store.density`
(the definition, the reference set, how a write keeps every list exact) runs
here unchanged, through :class:`_Dialect`, which gives it the few statements
it sends in PostgreSQL's terms. So search's hub prior ranks alike on both
backends (docs/postgres.md, "Densities"). Only the bookkeeping is PostgreSQL's:

* :mod:`.rows` notes each body vector written (:func:`note_insert`) or
  about to be deleted (:func:`note_delete`); the first note of a
  transaction asks :class:`PgConnection` to :func:`settle` just before its
  COMMIT, under the write lock, and to forget the notes on a rollback;
* SQLite's code keeps every vector in memory between a process's own
  transactions and reads them again after another connection wrote
  (``PRAGMA data_version``). PostgreSQL has no such counter, so every settle
  bumps ``meta.density_epoch``; a process that finds the epoch where its
  own last settle left it answers the same ``data_version`` as then;
* the tables are PostgreSQL's (:func:`create`): BIGINT keys (the key is a
  63-bit hash), no statistics sampled from the vector-derived columns
  (docs/postgres.md, erasure); a purge deletes the memory's rows.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from functools import partial
from typing import Any, cast

import numpy as np

from memex.store import density as core
from memex.store import nearest
from memex.store.postgres.connection import PgConnection

_HOOK = "density"


class _Dialect:
    """What :mod:`memex.store.density` calls on a connection (``execute``,
    ``executemany``), answered by PostgreSQL: ``?`` placeholders become
    ``%s``, vectors are read in binary and handed over as float32 bytes, and
    SQLite's two introspection statements get their PostgreSQL equivalents."""

    # memory_vec's primary key answers R's rowids: no digest, no cache read (memex/store/refvectors.py).
    indexed_vectors = True

    def __init__(self, conn: PgConnection) -> None:
        self.conn = conn
        self.version = 0  # what data_version answers during a settle
        self.seen = -1  # the epoch this process's copies in memory are current with

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Any:
        if sql == "PRAGMA data_version":
            return _Rows([(self.version,)])
        if "sqlite_master" in sql:
            return self.conn.execute("SELECT 1 WHERE to_regclass('memory_vec') IS NOT NULL")
        sql = sql.replace("?", "%s")
        if sql.startswith("SELECT"):  # in binary: vectors as arrays, bytea without hex text (R: 2049 x 1.5 KB)
            rows = self.conn.raw.execute(sql, tuple(params), binary=True).fetchall()
            return _Rows([tuple(_blob(v) if isinstance(v, np.ndarray) else v for v in row) for row in rows])
        return self.conn.execute(sql, tuple(params) if params else None)

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        rows = list(rows)
        if rows:
            with self.conn.raw.cursor() as cur:
                cur.executemany(sql.replace("?", "%s"), rows)


class _Rows(list[tuple[Any, ...]]):
    def fetchone(self) -> tuple[Any, ...] | None:
        return self[0] if self else None


def _blob(vec: np.ndarray) -> bytes:
    return np.ascontiguousarray(vec, dtype=np.float32).tobytes()


def _dialect(conn: PgConnection) -> _Dialect:
    """This connection's dialect: what the shared code calls on a connection (:class:`memex.store.protocol.SqlConnection`)."""
    found = conn.state.get(_HOOK)
    if found is None:
        found = conn.state[_HOOK] = _Dialect(conn)
    return cast(_Dialect, found)


def _watch(conn: PgConnection) -> _Dialect:
    """The dialect, with this transaction's settle and rollback hooks set."""
    dialect = _dialect(conn)
    if _HOOK not in conn.before_commit:  # the transaction's first note: it may read R, which must be current
        _catch_up(conn, dialect)
        conn.before_commit[_HOOK] = partial(settle, conn)
    conn.after_rollback.setdefault(_HOOK, partial(forget, conn))
    return dialect


def create(conn: PgConnection) -> None:
    """The tables (as :func:`memex.store.density.create`, in PostgreSQL's types) and the epoch."""
    conn.execute(
        "CREATE TABLE IF NOT EXISTS memory_density (rowid BIGINT PRIMARY KEY, neighbours BYTEA NOT NULL, "
        "key BIGINT NOT NULL)"
    )
    conn.execute("CREATE INDEX IF NOT EXISTS memory_density_key ON memory_density(key)")
    conn.execute("ALTER TABLE memory_density ALTER COLUMN neighbours SET STATISTICS 0")
    conn.execute("INSERT INTO meta(key, value) VALUES ('density_epoch', '0') ON CONFLICT (key) DO NOTHING")


def rebuild(conn: PgConnection) -> None:
    """Every density computed afresh at this transaction's commit (an index
    made by a memex without the tables)."""
    conn.execute("DROP TABLE IF EXISTS memory_density")
    create(conn)
    forget(conn)
    recompute_all(conn)


def note_insert(conn: PgConnection, rowid: int, blob: bytes) -> None:
    """A body vector was written for ``rowid`` in this transaction."""
    core.note_insert(_watch(conn), rowid, blob)


def note_delete(conn: PgConnection, rowid: int) -> None:
    """``rowid``'s body vector is about to be deleted (its rows go now)."""
    core.note_delete(_watch(conn), rowid)


def forget(conn: PgConnection) -> None:
    """Drop what this connection noted and holds (a rollback)."""
    core.forget(_dialect(conn))
    conn.before_commit.pop(_HOOK, None)


def clear(conn: PgConnection) -> None:
    """Every density goes (the vector tables were made anew for another model)."""
    core.clear(_dialect(conn))
    conn.before_commit.pop(_HOOK, None)
    _bump(conn)


def recompute_all(conn: PgConnection) -> None:
    """Have this transaction's settle compute every list afresh (a bulk load,
    orphan vectors removed without :func:`note_delete`, a schema step)."""
    core.recompute_all(_watch(conn))


def densities(conn: PgConnection, rowids: Sequence[int]) -> dict[int, float]:
    """Density of these memories (those without a body vector are left out)."""
    if not rowids:
        return {}
    rows = conn.execute("SELECT rowid, neighbours FROM memory_density WHERE rowid = ANY(%s)", (list(rowids),))
    return {int(r): nearest.mean(bytes(b)) for r, b in rows}


def _epoch(conn: PgConnection) -> int:
    row = conn.execute("SELECT value FROM meta WHERE key = 'density_epoch'").fetchone()
    return int(row[0]) if row and row[0] is not None else 0


def _bump(conn: PgConnection) -> int:
    epoch = _epoch(conn) + 1
    conn.execute(
        "INSERT INTO meta(key, value) VALUES ('density_epoch', %s) "
        "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        (str(epoch),),
    )
    return epoch


def _catch_up(conn: PgConnection, dialect: _Dialect) -> None:
    """Another process settled since this one last looked: what it keeps
    in memory (vectors, lists, R) is stale, so data_version moves."""
    epoch = _epoch(conn)
    if dialect.seen != epoch:
        dialect.version += 1
        dialect.seen = epoch


def settle(conn: PgConnection) -> None:
    """Bring every density up to date with this transaction's vector writes and
    deletions (run by :meth:`PgConnection.write_txn` before COMMIT)."""
    dialect = _dialect(conn)
    _catch_up(conn, dialect)
    core.settle(dialect)
    dialect.seen = _bump(conn)


def stale(conn: PgConnection) -> None:
    """Vectors were written without notes (a bulk load): every process's copy
    is out of date; :func:`recompute_all` brings the lists back."""
    forget(conn)
    _bump(conn)


@contextmanager
def bulk_writes(conn: PgConnection) -> Iterator[None]:
    """Around a reindex of many files (as :func:`memex.store.sqlite.store._bulk_writes`):
    the settles inside empty the tables, and the end computes every list once."""
    dialect = _dialect(conn)
    core.DEFERRED.add(dialect)
    try:
        yield
    finally:
        core.DEFERRED.discard(dialect)
    if conn.execute("SELECT 1 FROM memory_density LIMIT 1").fetchone() is None:
        with conn.write_txn():
            recompute_all(conn)  # its settle computes every list once
