"""The index backend interface: every operation memex asks of its index.

:class:`IndexStore` names them at the level memex thinks in (write a
memory with its text entry, vectors and links; the best full-text matches;
the nearest vectors; rows by ids; purge one memory's every trace; recall
counts; entities; the embedding cache; the schema version), never SQL.
Rows cross it as the named tuples and dataclasses of :mod:`memex.store`.
:class:`memex.store.sqlite.SqliteStore` is the SQLite implementation; a
second backend (PostgreSQL + pgvector) implements the same Protocol.
How a backend plugs in: docs/store.md.

Memories are addressed by ``rowid``, an integer the backend assigns when a
memory is first written and keeps while its id stays (a move keeps it);
vectors and chunks are keyed by it. Writes run inside :meth:`write_txn`.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Protocol

from memex.store.cache import CacheRow
from memex.store.entities import EntityCount, EntityMemory, EntityRelation, Neighbour
from memex.store.memories import Filters, IndexError_, MemoryRow, SyncRow, Vectors
from memex.store.purge import PurgeCounts
from memex.store.usage import DecayRow, Usage
from memex.store.vectors import OwnedVector

if TYPE_CHECKING:
    from memex.records import Record


class IndexStore(Protocol):
    # -- schema, settings, transactions ----------------------------------------

    def schema_version(self) -> int:
        """The version of the schema the index is at."""
        ...

    def write_txn(self) -> AbstractContextManager[None]:
        """One writer at a time (across processes); nested use joins the outer one."""
        ...

    def get_meta(self, key: str) -> str | None: ...

    def set_meta(self, key: str, value: str) -> None: ...

    def ensure_vectors(self, model: str, dim: int) -> bool:
        """Vector storage for ``model`` at ``dim``; True when old vectors were discarded."""
        ...

    def ensure_model_profile(self, profile: str) -> None: ...

    def ensure_chunk_rule(self, rule: str, shortest: int) -> bool:
        """Record the chunk rule; True when memories were marked to be embedded again."""
        ...

    def has_vectors(self) -> bool: ...

    # -- writing one memory ------------------------------------------------------

    def write_memory(self, rowid: int | None, rec: Record, fts_text: str, vecs: Vectors | None) -> int:
        """Upsert a memory's row, full-text entry, vectors and chunks (if given)
        and entity links; ``rowid`` is the row it replaces (None: new). Returns its rowid."""
        ...

    def move_row(self, rowid: int, old_id: str, new_id: str, new_path: str) -> None: ...

    def touch_row(self, rowid: int, rec: Record) -> None:
        """The file's bytes did not change: only its stat (and a stat-derived ``created``)."""
        ...

    def purge_memory(self, rowid: int) -> PurgeCounts:
        """Delete every derived trace of one memory (row, text entry, vectors,
        chunks, links, usage, cached vectors no other memory uses)."""
        ...

    def optimize_fts(self) -> None:
        """Rewrite the full-text index so purged terms are gone from its storage."""
        ...

    def checkpoint(self) -> bool:
        """Flush the write-ahead log so purged rows leave it; False if it stayed in use."""
        ...

    # -- reading rows --------------------------------------------------------------

    def row_by_id(self, memory_id: str) -> MemoryRow | None: ...

    def rows_by_rowids(self, rowids: Sequence[int]) -> dict[int, MemoryRow]: ...

    def list_rows(self, filters: Filters, limit: int | None = None) -> list[MemoryRow]: ...

    def text_column(self, column: str, rowids: Sequence[int]) -> dict[int, str]: ...

    def rowids_by_ids(self, ids: Sequence[str]) -> dict[str, int]: ...

    def passing(self, rowids: Sequence[int], filters: Filters) -> set[int]: ...

    def all_passing(self, filters: Filters) -> list[int]: ...

    def scope_in_use(self, scope: str) -> bool: ...

    def path_scopes(self) -> list[tuple[str, str]]: ...

    def bodies(self) -> list[tuple[int, str, str, str]]: ...

    # -- what a sync compares --------------------------------------------------------

    def sync_rows(self) -> dict[str, SyncRow]: ...

    def sync_row_at(self, path: str) -> SyncRow | None: ...

    def rowid_path_of(self, memory_id: str) -> tuple[int, str] | None: ...

    def embed_state(self, ids: Sequence[str]) -> dict[str, tuple[str | None, int]]: ...

    def index_errors(self) -> dict[str, IndexError_]: ...

    def record_index_error(self, path: str, reason: str, st: os.stat_result | None) -> None: ...

    def drop_index_error(self, path: str) -> list[str]: ...

    # -- search ------------------------------------------------------------------------

    def fts_top(self, query: str, k: int) -> list[tuple[int, float]]:
        """The best ``k`` full-text matches by BM25 (higher is better)."""
        ...

    def fts_top_passing(self, query: str, filters: Filters, k: int) -> dict[int, float]: ...

    def knn(self, blob: bytes, k: int) -> dict[int, float]:
        """The ``k`` nearest memories (body or chunk) by cosine."""
        ...

    def scan(self, blob: bytes, filters: Filters, k: int) -> dict[int, float]:
        """The exact ``k`` nearest among the memories passing the filters."""
        ...

    def vectors_of(self, rowids: Sequence[int]) -> list[tuple[int, bytes]]: ...

    def all_memory_vectors(self) -> list[OwnedVector]: ...

    def all_chunk_vectors(self) -> list[OwnedVector]: ...

    # -- the embedding cache ---------------------------------------------------------

    def cache_get(self, model: str, keys: Sequence[str]) -> dict[str, bytes]: ...

    def cache_put(self, rows: Sequence[CacheRow]) -> None: ...

    def cache_drop_unused(self, keys: Iterable[str]) -> int: ...

    # -- recall counts -----------------------------------------------------------------

    def record_use(self, ids: Sequence[str], stamp: str) -> None: ...

    def usage_of(self, memory_id: str) -> Usage: ...

    def last_accesses(self, ids: Iterable[str]) -> dict[str, str | None]: ...

    def decay_row(self, memory_id: str) -> DecayRow | None: ...

    def active_decay_rows(self, scope: str | None = None) -> list[DecayRow]: ...

    # -- entities ----------------------------------------------------------------------

    def entity_counts(self) -> list[EntityCount]: ...

    def find_entity(self, key: str) -> tuple[int, str] | None: ...

    def entity_memories(self, entity_rowid: int) -> list[EntityMemory]: ...

    def entity_relations(self, entity_rowid: int) -> list[EntityRelation]: ...

    def neighbours(self, entity_rowid: int) -> list[Neighbour]: ...
