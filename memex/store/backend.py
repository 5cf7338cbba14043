"""The index a vault opens: one object, whichever database holds it.

:func:`memex.store.backends.open_backend` reads ``[index] backend`` once and
returns the :class:`Backend` every other part of memex reaches the index through; no
module outside ``memex/store/`` asks which database that is (docs/design.md,
"One seam"). What differs between databases is answered here, as
capabilities, not names:

- :attr:`Backend.store` is the index reads answer from, :attr:`Backend.local`
  this clone's own index (its files, as it last read them: the sync's
  bookkeeping, drift, erasure's selection and scrub);
- :attr:`Backend.shared` says whether other clones write the index too (reads
  then hide, row by row, what this clone's erased list holds);
- :attr:`Backend.target` names the store besides this clone's index that an
  erasure must purge (journaled under that name, memex/erased/pending.py), and
  :meth:`Backend.purge` purges it;
- :attr:`Backend.followers` are the indexes besides this clone's own that
  follow its writes (the vault's indexer indexes into each the same paths,
  with the same code).

This clone's own index is SQLite whichever backend holds the rest, so its
transactions (:meth:`Backend.commit`: ``write.lock`` and a write
transaction) and its scrub after a purge (:meth:`Backend.scrub_if_pending`,
:meth:`Backend.begin_scrub`, :meth:`Backend.end_scrub`) are operations here,
for every backend.

This class is the SQLite index alone (``.memex/index.db``): its store and its
local store are one. The PostgreSQL index shared by every clone is
:class:`memex.store.postgres.backend.SharedBackend`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import apsw

from memex.store.protocol import SCRUB_PENDING, IndexStore
from memex.store.sqlite import schema, scrub
from memex.store.sqlite.store import SqliteStore

# What a vault hands its backend: the embedding model (an ``Embedder`` or None:
# typed loosely, as the store sits below memex.embedding), asked for only when
# the shared index first connects (loading it is slow), and what to run then.
EmbedderFn = Callable[[], Any]
ConnectFn = Callable[["Backend"], None]


def _file_identity(path: Path) -> tuple[int, int] | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return (info.st_ino, info.st_dev)


class Backend:
    """This clone's SQLite index, alone."""

    #: The database's name, as ``stats`` and an erasure's report give it.
    name = "sqlite"
    #: Other clones write this index too: reads hide what this clone's erased list holds, row by row.
    shared = False
    #: The store an erasure must purge besides this clone's index (memex/erased/pending.py); None: none.
    target: str | None = None

    def __init__(self, index_path: Path) -> None:
        self.index_path = index_path
        self._conn: apsw.Connection | None = None
        self._opened: tuple[int, int] | None = None  # (inode, device) of the file the connection opened
        self._folder: tuple[int, int] | None = None  # ... and of its folder, .memex/

    @property
    def conn(self) -> apsw.Connection:
        """This clone's SQLite index (opened on first use)."""
        if self._conn is None:
            self._conn = schema.connect(self.index_path)
            self._opened = _file_identity(self.index_path)
            self._folder = _file_identity(self.index_path.parent)
        return self._conn

    def replaced(self) -> bool:
        """Whether ``index.db`` was deleted or replaced since the connection
        opened it (it may be deleted any time; a backup restored over it): the
        connection still reads and writes the old file, which nothing else sees."""
        if self._conn is None or _file_identity(self.index_path.parent) != self._folder:
            # Not the .memex/ folder it was opened in (none there, or one made
            # anew): the vault folder itself was moved or deleted, and the open
            # file is still the moved vault's own. No new index where it was.
            return False
        return _file_identity(self.index_path) != self._opened

    @property
    def local(self) -> IndexStore:
        """This clone's own index: what its files were when it last read them."""
        return SqliteStore(self.conn)

    @property
    def store(self) -> IndexStore:
        """The index reads answer from."""
        return self.local

    @property
    def stores(self) -> tuple[IndexStore, ...]:
        """Every index this backend keeps (what ``doctor`` checks): this clone's, and a shared one."""
        return (self.local,)

    @property
    def followers(self) -> tuple[IndexStore, ...]:
        """The indexes besides this clone's own that follow its writes: the vault's
        indexer indexes every path it indexed into each of them too (``Indexer.follow``)."""
        return ()

    @property
    def lookup(self) -> IndexStore:
        """What search and dedup read: the store (on SQLite its in-process
        vector copy serves them: ``candidates``, ``body_search``)."""
        return self.store

    def connect(self) -> None:
        """Reach every store now (an error names what cannot be reached)."""


    def commit(self, lock: Path, timeout: float | None) -> AbstractContextManager[None]:
        """A short write commit: the file lock ``lock`` (``write.lock``) and this
        clone's index's write transaction, never holding the lock while SQLite is
        busy (memex/store/sqlite/schema.py, ``locked_txn``); ``timeout`` bounds
        the wait (None: as long as it takes)."""
        return schema.locked_txn(self.conn, lock, timeout)

    # -- the scrub of this clone's index after a purge (memex/store/sqlite/scrub.py)

    def scrub_pending(self) -> bool:
        """A purge happened since this clone's index was last scrubbed."""
        return self.local.get_meta(SCRUB_PENDING) is not None

    def scrub_if_pending(self) -> bool | None:
        """Scrub this clone's index when a purge (or a scrub cut short) left it to
        do; whether the WAL was truncated, None when nothing was pending."""
        return scrub.scrub_if_pending(self.conn)

    def begin_scrub(self) -> None:
        """Note, durably, that a scrub has begun: one cut short is done again by the next sync."""
        scrub.mark_scrub(self.conn)

    def end_scrub(self) -> bool:
        """Truncate the WAL (the scrub's last step: the FTS rewrite is the purge
        transaction's ``optimize_fts``); False when a reader kept it in use, and
        the next sync scrubs again."""
        done = self.local.checkpoint()
        if done:
            scrub.scrub_done(self.conn)
        return done

    def record_use(self, ids: Sequence[str], stamp: str) -> None:
        """Count a recall beyond this clone's index (whose count the caller keeps)."""

    def last_accesses(self, ids: Iterable[str]) -> dict[str, str | None]:
        """When each memory was last recalled, as the index reads answer from holds it."""
        return self.store.last_accesses(ids)

    def purge(self, ids: list[str], vacuum: bool = True) -> Any:
        """Every trace of these memories out of :attr:`target` (its report, with ``as_dict``)."""
        raise NotImplementedError("no store besides this clone's index")

    def erased_elsewhere(self, ids: Sequence[str]) -> set[str]:
        """Which of these ids another clone erased (whose erasure git has not brought)."""
        return self.store.erased_ids(ids)

    def allow_ids(self, ids: Sequence[str]) -> None:
        """``reindex --allow-erased``: these ids may be indexed again by every clone."""

    def schema_version(self) -> int:
        return schema.SCHEMA_VERSION

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

