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

This class is the SQLite index alone (``.memex/index.db``): its store and its
local store are one. The PostgreSQL index shared by every clone is
:class:`memex.store.postgres.backend.SharedBackend`.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import apsw

from memex.errors import IndexStoreError
from memex.store.protocol import IndexStore
from memex.store.schema import SCHEMA_VERSION, connect
from memex.store.sqlite import SqliteStore

# What a vault hands its backend: the embedding model (an ``Embedder`` or None:
# typed loosely, as the store sits below memex.embedding), asked for only when
# the shared index first connects (loading it is slow), and what to run then.
EmbedderFn = Callable[[], Any]
ConnectFn = Callable[["Backend"], None]


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

    @property
    def conn(self) -> apsw.Connection:
        """This clone's SQLite index (opened on first use)."""
        if self._conn is None:
            self._conn = connect(self.index_path)
        return self._conn

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


    def commit(self, local: AbstractContextManager[None]) -> AbstractContextManager[None]:
        """A write commit around ``local`` (``write.lock`` and this index's transaction)."""
        return local

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
        return SCHEMA_VERSION

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None


def store_error(exc: BaseException) -> IndexStoreError | None:
    """The one-line error for what a database driver raised (a server that went
    away in the middle of a command, a statement that failed), else None."""
    if "psycopg" not in sys.modules:  # no driver loaded: nothing it could have raised
        return None
    from memex.store.postgres.connection import server_error

    return server_error(exc)
