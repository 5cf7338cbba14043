"""Connecting to the PostgreSQL index, its transactions and its write lock.

SQLite serializes writers with ``BEGIN IMMEDIATE`` and the vault's
``write.lock``; on PostgreSQL, memex processes on different machines share
one database, so every write transaction first takes one transaction-level
advisory lock (:data:`WRITE_LOCK`). It is released at commit or rollback,
also when the process dies (the server ends its session), so a killed
writer never leaves the index locked. Readers take no lock: they read a
consistent snapshot (MVCC) while a writer works.

Vectors travel in pgvector's binary form (:class:`Vec`): no text formatting
of 384 floats per row.
"""

from __future__ import annotations

import contextlib
import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from memex.distribution import install_hint
from memex.errors import IndexStoreError

# pg_advisory_xact_lock takes a bigint key; this one is "memex" in ASCII,
# chosen so that other applications sharing the database do not collide.
WRITE_LOCK = 0x6D656D6578
# Candidates the HNSW scan keeps per step: at least the k search asks for (100).
EF_SEARCH = 200


class Vec:
    """A float32 vector to send as a pgvector ``vector``."""

    __slots__ = ("array",)

    def __init__(self, data: bytes | np.ndarray) -> None:
        if isinstance(data, (bytes, bytearray, memoryview)):
            self.array = np.frombuffer(bytes(data), dtype=np.float32)
        else:
            self.array = np.asarray(data, dtype=np.float32)


def vec_binary(vec: Vec) -> bytes:
    """pgvector's binary input: dimension and a zero (int16 each), then big-endian float4s."""
    return struct.pack(">HH", len(vec.array), 0) + vec.array.astype(">f4").tobytes()


def vec_from_binary(data: bytes) -> np.ndarray:
    dim = struct.unpack_from(">H", data)[0]
    return np.frombuffer(data, dtype=">f4", count=dim, offset=4).astype(np.float32)


@dataclass(eq=False)  # compared (and hashed) by identity: state is kept per connection
class PgConnection:
    """An open index connection (``psycopg.Connection``, autocommit off).

    ``before_commit``: what must run inside the outermost write transaction
    just before its COMMIT, by name (derived rows settled once per
    transaction: :mod:`memex.store.postgres.density`); ``after_rollback``:
    what forgets a rolled-back transaction's notes; ``state``: what a module
    keeps per connection between transactions (by the module's name)."""

    raw: Any
    url: str
    before_commit: dict[str, Callable[[], None]] = field(default_factory=dict)
    after_rollback: dict[str, Callable[[], None]] = field(default_factory=dict)
    state: dict[str, Any] = field(default_factory=dict)

    def execute(self, sql: str, params: Any = None) -> Any:
        return self.raw.execute(sql, params)

    @contextlib.contextmanager
    def write_txn(self) -> Iterator[None]:
        """One transaction holding the index's write lock; nested use joins it."""
        if self.raw.info.transaction_status != 0:  # already in a transaction: join it
            self.raw.execute("SELECT pg_advisory_xact_lock(%s)", (WRITE_LOCK,))
            yield
            return
        try:
            with self.raw.transaction():
                self.raw.execute("SELECT pg_advisory_xact_lock(%s)", (WRITE_LOCK,))
                yield
                while self.before_commit:  # a hook may note more work: run until none is left
                    self.before_commit.pop(next(iter(self.before_commit)))()
        except BaseException:
            self.before_commit.clear()
            for forget in list(self.after_rollback.values()):
                forget()
            raise

    def close(self) -> None:
        self.raw.close()


def server_error(exc: BaseException) -> IndexStoreError | None:
    """The one-line error for what the PostgreSQL driver raised (the server went
    away in the middle of a command, a statement failed), else None: no user
    should see the driver's traceback."""
    if type(exc).__module__.split(".")[0] != "psycopg":
        return None
    detail = " / ".join(line.strip() for line in str(exc).strip().splitlines()[:2]) or type(exc).__name__
    return IndexStoreError(f"[index] url: PostgreSQL failed: {detail}")


def _register_vector(raw: Any) -> None:
    from psycopg.adapt import Dumper, Loader
    from psycopg.pq import Format
    from psycopg.types import TypeInfo

    info = TypeInfo.fetch(raw, "vector")
    if info is None:
        raise IndexStoreError(
            f"{raw.info.dbname}: the pgvector extension is not installed in this database "
            "(run CREATE EXTENSION vector as a user allowed to)"
        )

    class VecDumper(Dumper):
        format = Format.BINARY
        oid = info.oid

        def dump(self, obj: Any) -> bytes:
            return vec_binary(obj)

    class VecLoader(Loader):
        format = Format.BINARY

        def load(self, data: Any) -> np.ndarray:
            return vec_from_binary(bytes(data))

    raw.adapters.register_dumper(Vec, VecDumper)
    raw.adapters.register_dumper(None, VecDumper)  # by oid: binary COPY (memex.store.postgres.bulk)
    info.register(raw)
    raw.adapters.register_loader(info.oid, VecLoader)


def open_connection(url: str, *, create_extension: bool = True) -> PgConnection:
    """Connect to ``url`` (a libpq connection string or URI): pgvector ready,
    vectors adapted, HNSW scans set; :func:`memex.store.postgres.schema.connect`
    then brings the schema up to date."""
    try:
        import psycopg
    except ImportError as exc:
        raise IndexStoreError(
            f"[index] backend = \"postgres\" needs the postgres extra: {install_hint('postgres')}"
        ) from exc
    try:
        raw = psycopg.connect(url, autocommit=False)
    except psycopg.Error as exc:
        raise IndexStoreError(f"[index] url: cannot connect to PostgreSQL: {str(exc).strip()}") from exc
    try:
        raw.autocommit = True
        if create_extension:
            # Taken under the write lock: two processes creating it at once race.
            with raw.transaction():
                raw.execute("SELECT pg_advisory_xact_lock(%s)", (WRITE_LOCK,))
                raw.execute("CREATE EXTENSION IF NOT EXISTS vector")
        _register_vector(raw)
        raw.execute(f"SET hnsw.ef_search = {EF_SEARCH}")
        raw.execute("SET hnsw.iterative_scan = relaxed_order")
    except psycopg.Error as exc:
        raw.close()
        raise IndexStoreError(f"[index] url: cannot set up the PostgreSQL index: {str(exc).strip()}") from exc
    return PgConnection(raw, url)
