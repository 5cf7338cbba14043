"""The PostgreSQL index every clone of a vault shares, as the vault's one backend.

Reads answer from PostgreSQL (:class:`memex.store.postgres.store.PgStore`);
this clone's SQLite index stays its own bookkeeping (which of its files it
read, at which size and mtime: sizes and mtimes differ between checkouts)
and the PostgreSQL index follows every write it sees: the vault's indexer
indexes the same paths into :attr:`SharedBackend.followers` with the same
code (``Indexer.follow``; docs/postgres.md, "What is shared and what stays
local"). What is PostgreSQL's own stays here and beside it: the connection,
its write lock (:mod:`.connection`), the erasure's purge and VACUUM
(:mod:`.erasure`), the ids other clones erased. The server is reached on
first use, not when the vault opens: a command that never reads the index
never waits for it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from memex.store.backend import Backend, ConnectFn, EmbedderFn
from memex.store.protocol import IndexStore

if TYPE_CHECKING:
    from memex.config import Config
    from memex.store.postgres.connection import PgConnection
    from memex.store.postgres.erasure import PgErasure
    from memex.store.postgres.store import PgStore


# How an erasure journals this store (memex/erased/pending.py): by identity, not by URL, which may hold secrets.
PREFIX = "postgres:"
DESCRIPTION = "the PostgreSQL index ([index] url)"


class SharedBackend(Backend):
    name = "postgres"
    shared = True

    def __init__(self, index_path: Path, root: Path, config: Config, embedder: EmbedderFn,
                 on_connect: ConnectFn) -> None:
        super().__init__(index_path)
        assert config.index_url is not None  # load_config requires it for postgres
        self.root = root
        self.config = config
        self.url = config.index_url
        self.target = PREFIX + hashlib.sha256(self.url.encode("utf-8")).hexdigest()[:16]
        self._embedder = embedder
        self._on_connect = on_connect
        self._pg: PgConnection | None = None
        self._erase_full = False

    @property
    def pg(self) -> PgConnection:
        """The PostgreSQL index, reached on first use; the erasures journaled for it finish then."""
        if self._pg is None:
            from memex.store.postgres import schema
            from memex.store.postgres.erasure import erase_vacuum

            # Checked before anything is written: an erasure must not fail half way on a typo.
            self._erase_full = erase_vacuum(self.config) == "full"
            conn = schema.connect(self.url)
            embedder = self._embedder()
            if embedder is not None:
                schema.ensure_vectors(conn, embedder.model_id, embedder.dim)
            self._pg = conn
            self._on_connect(self)
        return self._pg

    @property
    def shared_store(self) -> PgStore:
        from memex.store.postgres.store import PgStore

        return PgStore(self.pg)

    @property
    def store(self) -> IndexStore:
        return self.shared_store

    @property
    def stores(self) -> tuple[IndexStore, ...]:
        return (self.local, self.store)

    @property
    def followers(self) -> tuple[IndexStore, ...]:
        return (self.store,)

    @property
    def lookup(self) -> IndexStore:
        return self.store

    def connect(self) -> None:
        self.pg

    def commit(self, lock: Path, timeout: float | None) -> AbstractContextManager[None]:
        """The shared index's write lock too, taken second as every writer
        takes them (no two orders): what ``add`` checks under it and then
        writes are one step for every clone (docs/postgres.md)."""
        return self._both(super().commit(lock, timeout))

    @contextmanager
    def _both(self, local: AbstractContextManager[None]) -> Iterator[None]:
        with local, self.pg.write_txn():
            yield

    def record_use(self, ids: Sequence[str], stamp: str) -> None:
        self.store.record_use(ids, stamp)

    def purge(self, ids: list[str], vacuum: bool = True) -> PgErasure:
        from memex.store.postgres import erasure

        conn = self.pg  # sets how to VACUUM ([index] erase_vacuum)
        return erasure.purge(conn, ids, vacuum=vacuum, full=self._erase_full)

    def allow_ids(self, ids: Sequence[str]) -> None:
        self.shared_store.allow_ids(ids)

    def schema_version(self) -> int:
        return self.store.schema_version()

    def close(self) -> None:
        if self._pg is not None:
            self._pg.close()
            self._pg = None
        super().close()
