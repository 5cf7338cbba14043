"""The PostgreSQL index every clone of a vault shares, as the vault's one backend.

Reads answer from PostgreSQL (:class:`memex.store.postgres.store.PgStore`);
this clone's SQLite index stays its own bookkeeping (which of its files it
read, at which size and mtime: sizes and mtimes differ between checkouts)
and the PostgreSQL index follows every write it sees (docs/postgres.md,
"What is shared and what stays local"). The server is reached on first use,
not when the vault opens: a command that never reads the index never waits
for it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from memex.store.backend import Backend, ConnectFn, EmbedderFn
from memex.store.protocol import IndexStore

if TYPE_CHECKING:
    from memex.config import Config
    from memex.store.postgres.erasure import PgErasure
    from memex.store.postgres.vault_index import PgVaultIndex


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
        self._shared: PgVaultIndex | None = None

    @property
    def index(self) -> PgVaultIndex:
        """The PostgreSQL index, reached on first use; the erasures journaled for it finish then."""
        if self._shared is None:
            from memex.store.postgres.vault_index import PgVaultIndex

            self._shared = PgVaultIndex(
                self.root, self.config, self._embedder(), self.url, local_cache=self.local.cache_get
            )
            self._on_connect(self)
        return self._shared

    @property
    def store(self) -> IndexStore:
        from memex.store.postgres.store import PgStore

        return PgStore(self.index.conn)

    @property
    def stores(self) -> tuple[IndexStore, ...]:
        return (self.local, self.store)

    @property
    def lookup(self) -> IndexStore:
        return self.store

    def connect(self) -> None:
        self.index

    def follow(self, relpaths: list[str] | None, vanished: list[str]) -> None:
        self.index.follow(relpaths, vanished)

    def commit(self, local: AbstractContextManager[None]) -> AbstractContextManager[None]:
        """The shared index's write lock too, taken second as every writer
        takes them (no two orders): what ``add`` checks under it and then
        writes are one step for every clone (docs/postgres.md)."""
        return self._both(local)

    @contextmanager
    def _both(self, local: AbstractContextManager[None]) -> Iterator[None]:
        with local, self.index.conn.write_txn():
            yield

    def record_use(self, ids: Sequence[str], stamp: str) -> None:
        self.index.record_access(list(ids), stamp)

    def last_accesses(self, ids: Iterable[str]) -> dict[str, str | None]:
        return self.index.last_accesses(ids)

    def purge(self, ids: list[str], vacuum: bool = True) -> PgErasure:
        return self.index.purge(ids, vacuum=vacuum)

    def erased_elsewhere(self, ids: Sequence[str]) -> set[str]:
        return self.index.erased_ids(ids)

    def allow_ids(self, ids: Sequence[str]) -> None:
        self.index.allow_ids(ids)

    def schema_version(self) -> int:
        return self.store.schema_version()

    def close(self) -> None:
        if self._shared is not None:
            self._shared.close()
            self._shared = None
        super().close()
