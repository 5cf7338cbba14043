"""The SQLite index's connection, schema steps and transactions.

The standard library's ``sqlite3`` often cannot load extensions, so memex uses
apsw, which bundles a current SQLite, and loads sqlite-vec into it. The
schema grows in small numbered steps (``PRAGMA user_version``); vector tables
are created once the embedding model, and so the dimension, is known.

:func:`locked_txn` takes ``write.lock`` and then SQLite's write transaction,
but never holds the lock while waiting for SQLite: a ``reindex`` batch holds
SQLite's write lock without ``write.lock``, and whoever waited for it while
holding ``write.lock`` made every ``add`` behind it wait too (and time out).
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import apsw

from memex.files import permissions
from memex.files.locking import file_lock
from memex.errors import IndexStoreError, LockTimeout, SchemaTooNew
from memex.store import density, facts, nearest
from memex.store.sqlite.meta import get_meta, scalar, set_meta

BUSY_TIMEOUT_MS = 30_000
# Page size of a new index. A cached vector row is ~1.65 KB (384 float32 plus
# its key): a 4 KiB page holds two of them and leaves ~0.8 KB empty, an 8 KiB
# page holds five and leaves ~0.1 KB. Only a new, empty file takes it (an
# existing index keeps its size; WAL mode cannot change it).
NEW_INDEX_PAGE_SIZE = 8192


def _step1(conn: apsw.Connection) -> None:
    conn.execute(
        """
        CREATE TABLE memories (
            rowid INTEGER PRIMARY KEY,
            id TEXT NOT NULL UNIQUE,
            path TEXT NOT NULL UNIQUE,
            scope TEXT NOT NULL,
            source TEXT,
            session TEXT,
            source_ref TEXT,
            category TEXT,
            confidence REAL NOT NULL,
            created TEXT NOT NULL,
            supersedes TEXT,
            superseded_by TEXT,
            status TEXT NOT NULL,
            body TEXT NOT NULL,
            body_hash TEXT NOT NULL,
            file_hash TEXT NOT NULL,
            size INTEGER NOT NULL,
            mtime_ns INTEGER NOT NULL,
            embed_key TEXT,
            embedded INTEGER NOT NULL DEFAULT 0
        );
        CREATE INDEX memories_scope_hash ON memories(scope, body_hash);
        CREATE INDEX memories_hash ON memories(body_hash);
        CREATE INDEX memories_session ON memories(session);
        CREATE INDEX memories_source ON memories(source, source_ref);
        CREATE VIRTUAL TABLE memory_fts USING fts5(
            text, content='', contentless_delete=1,
            tokenize='porter unicode61 remove_diacritics 2'
        );
        CREATE TABLE chunks (
            rowid INTEGER PRIMARY KEY,
            memory_rowid INTEGER NOT NULL,
            seq INTEGER NOT NULL,
            text_hash TEXT NOT NULL
        );
        CREATE INDEX chunks_memory ON chunks(memory_rowid);
        CREATE TABLE embedding_cache (
            model TEXT NOT NULL,
            text_hash TEXT NOT NULL,
            vector BLOB NOT NULL,
            PRIMARY KEY (model, text_hash)
        ) WITHOUT ROWID;
        CREATE TABLE usage (
            memory_id TEXT PRIMARY KEY,
            access_count INTEGER NOT NULL DEFAULT 0,
            last_access TEXT
        ) WITHOUT ROWID;
        CREATE TABLE index_errors (
            path TEXT PRIMARY KEY,
            reason TEXT NOT NULL,
            size INTEGER,
            mtime_ns INTEGER
        ) WITHOUT ROWID;
        CREATE TABLE entities (
            rowid INTEGER PRIMARY KEY,
            key TEXT NOT NULL UNIQUE,
            name TEXT NOT NULL
        );
        CREATE TABLE entity_links (
            entity_rowid INTEGER NOT NULL,
            memory_rowid INTEGER NOT NULL,
            PRIMARY KEY (entity_rowid, memory_rowid)
        ) WITHOUT ROWID;
        CREATE INDEX entity_links_memory ON entity_links(memory_rowid);
        CREATE TABLE relations (
            rowid INTEGER PRIMARY KEY,
            subject_rowid INTEGER NOT NULL,
            predicate TEXT NOT NULL,
            object_rowid INTEGER NOT NULL,
            memory_rowid INTEGER NOT NULL
        );
        CREATE INDEX relations_memory ON relations(memory_rowid);
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT) WITHOUT ROWID;
        """
    )


def _step2(conn: apsw.Connection) -> None:
    # A row read within RACY_NS of its file's mtime: a same-size write in the
    # same mtime tick would look unchanged by stat, so the next sync re-hashes it.
    conn.execute("ALTER TABLE memories ADD COLUMN racy INTEGER NOT NULL DEFAULT 0")


def _step3(conn: apsw.Connection) -> None:
    # The embedding cache as a rowid table. Step 1 made it WITHOUT ROWID: its
    # rows live in an index b-tree, whose cells may hold only about a quarter
    # of a page, so on 4 KiB pages every 1.6 KB vector spilled onto an
    # overflow page of its own, ~60% of it empty (5,882 short memories: cache
    # 27.6 of 42.1 MB; scripts/bench_index_size.py). A rowid table keeps a row
    # of up to a page inline, and the key moves to a unique index, which also
    # serves the purge's lookup by text hash alone (hence text_hash first).
    conn.execute(
        """
        CREATE TABLE embedding_cache_rows (
            rowid INTEGER PRIMARY KEY,
            model TEXT NOT NULL,
            text_hash TEXT NOT NULL,
            vector BLOB NOT NULL
        );
        INSERT INTO embedding_cache_rows(model, text_hash, vector)
            SELECT model, text_hash, vector FROM embedding_cache ORDER BY model, text_hash;
        DROP TABLE embedding_cache;
        ALTER TABLE embedding_cache_rows RENAME TO embedding_cache;
        CREATE UNIQUE INDEX embedding_cache_key ON embedding_cache(text_hash, model);
        """
    )


def _step4(conn: apsw.Connection) -> None:
    # Each memory's nearest-neighbour cosines, from which search reads how
    # crowded its neighbourhood is (memex/store/density.py, docs/search.md).
    density.rebuild(conn)


def _step5(conn: apsw.Connection) -> None:
    # Densities against a reference set, with each memory's key and a copy of
    # the set's vectors, so a write costs O(S), not O(N) (memex/store/density.py).
    density.rebuild(conn)


def _step6(conn: apsw.Connection) -> None:
    # Smaller (scripts/bench_index_size.py, docs/store.md): R's vectors are
    # read from memory_vec by rowid and kept in memory, not copied into
    # density_reference (640 B per memory at 5,882); and memories_hash goes:
    # every lookup by body hash also names the scope, which
    # memories_scope_hash(scope, body_hash) serves.
    conn.execute("DROP TABLE IF EXISTS density_reference; DROP INDEX IF EXISTS memories_hash")


def _step7(conn: apsw.Connection) -> None:
    # Smaller rows of memory_density: no density column (the mean of a
    # list's first K, computed when read) and DEPTH cosines kept instead of
    # 20 (memex/store/nearest.py). A sorted list cut to its first DEPTH is
    # what computing it afresh gives, so the values stay exact.
    columns = {str(row[1]) for row in conn.execute("PRAGMA table_info(memory_density)")}
    if "density" in columns:
        conn.execute("ALTER TABLE memory_density DROP COLUMN density")
    conn.execute("UPDATE memory_density SET neighbours = substr(neighbours, 1, ?) WHERE length(neighbours) > ?",
                 (4 * nearest.DEPTH, 4 * nearest.DEPTH))


def _step8(conn: apsw.Connection) -> None:
    # Each memory_density row keeps a digest of its body vector, so a process
    # reads R's vectors from the embedding cache (checked against it) in
    # O(S), not from sqlite-vec in a scan of every vector (memex/store/refvectors.py).
    # Rows from before have none: the first read of each from memory_vec stores it.
    columns = {str(row[1]) for row in conn.execute("PRAGMA table_info(memory_density)")}
    if columns and "digest" not in columns:
        conn.execute("ALTER TABLE memory_density ADD COLUMN digest INTEGER")


def _step9(conn: apsw.Connection) -> None:
    # What search's rule needs about a memory, kept at write time instead of
    # computed per candidate per search (memex/store/facts.py): whether it asks
    # a question, and its neighbours in its session. The session's order is an
    # index, which also serves every lookup by session alone.
    columns = {str(row[1]) for row in conn.execute("PRAGMA table_info(memories)")}
    for column, kind in (("asks", "INTEGER NOT NULL DEFAULT 0"), ("before_rowid", "INTEGER"),
                         ("after_rowid", "INTEGER")):
        if column not in columns:
            conn.execute(f"ALTER TABLE memories ADD COLUMN {column} {kind}")
    conn.execute("CREATE INDEX IF NOT EXISTS memories_session_order ON memories(session, created, id);"
                 "DROP INDEX IF EXISTS memories_session")
    conn.executemany(facts.SQLITE.set_asks, facts.asking(conn.execute("SELECT rowid, body FROM memories")))
    facts.relink_all(conn.execute, facts.SQLITE)


# Each step moves the schema from version N-1 to N. Append, never edit.
MIGRATIONS: list[Callable[[apsw.Connection], None]] = [
    _step1, _step2, _step3, _step4, _step5, _step6, _step7, _step8, _step9,
]
SCHEMA_VERSION = len(MIGRATIONS)


def vec_extension_path() -> str:
    """What ``sqlite_vec.loadable_path()`` returns, found without running the
    package's ``__init__``: that imports ``numpy.typing`` (about 10 ms of a
    one-shot command's start-up: docs/benchmarks.md) for a helper memex never uses."""
    spec = importlib.util.find_spec("sqlite_vec")
    if spec is None or not spec.submodule_search_locations:
        raise IndexStoreError("the sqlite-vec package is not installed (pip install sqlite-vec)")
    return str(Path(next(iter(spec.submodule_search_locations))) / "vec0")


def connect(path: Path) -> apsw.Connection:
    """Open (creating if needed) the index at ``path`` and bring its schema up to date."""
    # Created 0600 before SQLite opens it: its -wal and -shm files take the
    # database file's mode, and every body is in them in plain text.
    permissions.create_private(path)
    try:
        conn = apsw.Connection(str(path))
        conn.set_busy_timeout(BUSY_TIMEOUT_MS)
        conn.enable_load_extension(True)
        conn.load_extension(vec_extension_path())
        conn.enable_load_extension(False)
        if int(scalar(conn, "PRAGMA page_count") or 0) == 0:
            conn.execute(f"PRAGMA page_size={NEW_INDEX_PAGE_SIZE}")
        _enter_wal(conn)
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA secure_delete=ON")
        migrate(conn, path)
    except apsw.Error as exc:
        if not _writable(path):
            # Deleting the index would not help: memex writes to it even to
            # search (WAL, access counts), so it needs the folder writable.
            raise IndexStoreError(
                f"{path.parent}: cannot open the index: the folder is read-only ({exc}); memex writes "
                "its index there even to search: make it writable, or copy the vault somewhere writable"
            ) from exc
        raise IndexStoreError(
            f"{path}: cannot open the index: {exc}; it is derived from the files, so delete "
            f"{path.name}* and run `memex reindex` to rebuild it"
        ) from exc
    return conn


def _enter_wal(conn: apsw.Connection) -> None:
    """Put the index in WAL mode, waiting for other processes doing the same.

    SQLite answers "database is locked" at once, without its busy handler,
    when another connection is changing the journal mode of a new file at
    the same moment (several hooks or commands opening a vault whose index
    does not exist yet): so this waits and retries itself, up to the busy
    timeout (tests/test_concurrency.py).
    """
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
    pause = 0.002
    while True:
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            return
        except apsw.BusyError:
            if time.monotonic() >= deadline:
                raise
            time.sleep(pause)
            pause = min(pause * 2, 0.1)


def _writable(path: Path) -> bool:
    """Can this process write the index and its -wal/-shm files beside it?"""
    if not os.access(path.parent, os.W_OK):
        return False
    return not path.exists() or os.access(path, os.W_OK)


def migrate(conn: apsw.Connection, path: Path) -> None:
    with write_txn(conn):
        version = int(scalar(conn, "PRAGMA user_version") or 0)
        if version > SCHEMA_VERSION:
            raise SchemaTooNew(
                f"{path}: schema version {version} is newer than this memex ({SCHEMA_VERSION}); "
                "upgrade memex or delete the index and run `memex reindex`"
            )
        for step in MIGRATIONS[version:]:
            step(conn)
        if version != SCHEMA_VERSION:
            conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")


@contextlib.contextmanager
def write_txn(conn: apsw.Connection) -> Iterator[None]:
    """A ``BEGIN IMMEDIATE`` transaction: one writer at a time across processes.

    The busy timeout makes other writers wait instead of failing with
    "database is locked". Nested use joins the outer transaction.
    """
    if not conn.get_autocommit():
        yield
        return
    conn.execute("BEGIN IMMEDIATE")
    with _ending(conn):
        yield


# SQLite errors that say the index file cannot take a write (a full disk, an
# I/O error, a read-only or damaged file): the files are unharmed, so they are
# reported as one IndexStoreError naming the index, never a traceback
# (docs/write-path.md, "When the index cannot be written").
_CANNOT_WRITE = (apsw.FullError, apsw.IOError, apsw.ReadOnlyError, apsw.CorruptError)


def damaged(exc: BaseException, path: Path | str) -> IndexStoreError | None:
    """The one-line error for SQLite's "database disk image is malformed" or
    "file is not a database" (a damaged index.db, which any read may find), or
    None for any other exception. The CLI and the MCP server ask this at their
    edge, so a damaged index is never a traceback."""
    if not isinstance(exc, (apsw.CorruptError, apsw.NotADBError)):
        return None
    return IndexStoreError(
        f"{path}: the index is damaged ({exc}); it is derived from the files, so delete "
        f"{Path(path).name}* and run `memex reindex` to rebuild it"
    )


def _vector_table_full(exc: BaseException) -> bool:
    """sqlite-vec's vec0 reports a row its shadow tables could not take (what a
    full disk gives it) as a plain SQLError: "Internal sqlite-vec error: Could
    not insert a new vector chunk"."""
    return isinstance(exc, apsw.SQLError) and "sqlite-vec error: could not insert" in str(exc).lower()


def _cannot_write(conn: apsw.Connection, exc: apsw.Error) -> IndexStoreError:
    path = conn.filename
    broken = damaged(exc, path)
    if broken is not None:
        return broken
    full = isinstance(exc, apsw.FullError)
    vectors = _vector_table_full(exc)
    what = "the disk is full" if full else f"{exc} (is the disk full?)" if vectors else str(exc)
    return IndexStoreError(
        f"{path}: cannot write the index: {what}; memory files already "
        f"written are kept: {'make room' if full or vectors else 'fix that'}, then run `memex reindex` to index them"
    )


def _rollback(conn: apsw.Connection) -> None:
    # SQLite may already have rolled back (it does on SQLITE_FULL in a
    # statement); a second ROLLBACK would hide the real error.
    if not conn.get_autocommit():
        conn.execute("ROLLBACK")


@contextlib.contextmanager
def _ending(conn: apsw.Connection) -> Iterator[None]:
    """End the transaction the caller began: COMMIT after the block, ROLLBACK if it raises."""
    try:
        yield
        density.settle(conn)  # derived from this transaction's vector writes (memex/store/density.py)
        conn.execute("COMMIT")
    except BaseException as exc:
        density.forget(conn)
        _rollback(conn)
        if isinstance(exc, apsw.Error) and (isinstance(exc, _CANNOT_WRITE) or _vector_table_full(exc)):
            raise _cannot_write(conn, exc) from exc
        raise


def try_begin(conn: apsw.Connection, wait_ms: int) -> bool:
    """``BEGIN IMMEDIATE``, waiting at most ``wait_ms`` for another writer;
    False when it stayed busy (see :func:`locked_txn`)."""
    conn.set_busy_timeout(wait_ms)
    try:
        conn.execute("BEGIN IMMEDIATE")
        return True
    except apsw.BusyError:
        return False
    finally:
        conn.set_busy_timeout(BUSY_TIMEOUT_MS)


# How long BEGIN IMMEDIATE may wait while write.lock is held: long enough
# for another writer's short commit, short enough that the lock is not held
# through a reindex batch (it is let go and taken again instead).
_SQLITE_WAIT_MS = 50


@contextlib.contextmanager
def locked_txn(conn: apsw.Connection, path: Path, timeout: float | None = None) -> Iterator[None]:
    """``write.lock`` plus a ``BEGIN IMMEDIATE`` transaction on ``conn``.

    When SQLite is busy (a reindex batch is writing), the lock is released
    and both are tried again after a pause, so nobody waits for the lock
    behind someone who is only waiting for SQLite. ``timeout`` bounds the
    whole wait (None: wait as long as it takes). Nested transactions
    (``write_txn``) inside join this one.
    """
    deadline = None if timeout is None else time.monotonic() + timeout
    pause = 0.005
    while True:
        left = None if deadline is None else max(0.0, deadline - time.monotonic())
        with file_lock(path, left):
            if try_begin(conn, _SQLITE_WAIT_MS):
                with _ending(conn):
                    yield
                return
        if deadline is not None and time.monotonic() >= deadline:
            raise LockTimeout(f"{path}: the index stayed busy for over {timeout:.0f}s")
        # Jitter: processes that let go together must not retry in lockstep.
        time.sleep(pause * (0.5 + int.from_bytes(os.urandom(1), "big") / 255))
        pause = min(pause * 2, 0.2)


def ensure_vector_tables(conn: apsw.Connection, model: str, dim: int) -> bool:
    """Create the vec0 tables for ``model``; drop old ones if the model changed.

    Returns True when existing vectors were discarded (so memories must be
    embedded again).
    """
    have_model, have_dim = get_meta(conn, "vector_model"), get_meta(conn, "vector_dim")
    if have_model == model and have_dim == str(dim):
        return False
    with write_txn(conn):
        # Again under the write lock: another process opening the same new
        # index may have just created them (and stored vectors since).
        have_model, have_dim = get_meta(conn, "vector_model"), get_meta(conn, "vector_dim")
        if have_model == model and have_dim == str(dim):
            return False
        conn.execute("DROP TABLE IF EXISTS memory_vec")
        conn.execute("DROP TABLE IF EXISTS chunk_vec")
        density.clear(conn)
        conn.execute(
            f"CREATE VIRTUAL TABLE memory_vec USING vec0(embedding float[{dim}] distance_metric=cosine)"
        )
        conn.execute(
            f"CREATE VIRTUAL TABLE chunk_vec USING vec0(embedding float[{dim}] distance_metric=cosine)"
        )
        conn.execute("UPDATE memories SET embedded = 0")
        set_meta(conn, "vector_model", model)
        set_meta(conn, "vector_dim", str(dim))
    return have_model is not None


def ensure_model_profile(conn: apsw.Connection, profile: str) -> None:
    """Record the model profile (thresholds, :mod:`memex.embedding.profiles`) in force
    for the index's vectors; written only when it changed."""
    if get_meta(conn, "model_profile") == profile:
        return
    with write_txn(conn):
        set_meta(conn, "model_profile", profile)


def ensure_chunk_rule(conn: apsw.Connection, rule: str, shortest: int) -> bool:
    """Record the rule that cuts chunks; when it changed, mark the memories it
    may cut differently (bodies longer than ``shortest`` characters) as not
    embedded, so the next sync re-cuts them (their body vectors come from
    the cache). Returns True when memories were marked."""
    if get_meta(conn, "chunk_rule") == rule:
        return False
    with write_txn(conn):
        had = get_meta(conn, "chunk_rule")
        if had == rule:
            return False
        marked = len(conn.execute(
            "UPDATE memories SET embedded = 0 WHERE embedded = 1 AND (length(body) > ? "
            "OR rowid IN (SELECT memory_rowid FROM chunks)) RETURNING rowid",
            (shortest,),
        ).fetchall())
        set_meta(conn, "chunk_rule", rule)
    return marked > 0


def has_vector_tables(conn: apsw.Connection) -> bool:
    return get_meta(conn, "vector_model") is not None


def schema_version(conn: apsw.Connection) -> int:
    """The schema version the index file is at (``PRAGMA user_version``)."""
    return int(scalar(conn, "PRAGMA user_version") or 0)


def data_version(conn: apsw.Connection) -> int:
    """Moves whenever another connection commits a change (``PRAGMA data_version``)."""
    return int(scalar(conn, "PRAGMA data_version"))
