"""The SQLite implementation of :class:`memex.store.protocol.IndexStore`.

A :class:`SqliteStore` wraps one apsw connection (:func:`memex.store.sqlite.schema.connect`)
and answers each operation with the statement of its table family
(``memories``, ``vectors``, ``cache``, ``usage``, ``entities``, ``meta``,
``purge``, ``schema``). Nothing here decides anything: the families hold
the SQL, this class only binds them to a connection.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import TYPE_CHECKING, TypeAlias, TypeVar

import apsw

from memex.store import density
from memex.store.facts import Facts
from memex.store.rows import (
    BodyRow, CacheRow, DecayRow, DuplicateRow, EmbedState, Entity, EntityCount, EntityMemory, EntityNeighbour,
    EntityRelation, ErrorRow, Filters, Found, HashKey, Located, MemoryRow, Neighbour, OwnedVector, PurgeCounts,
    RowVector, Scored, ScopeRow, SessionItem, SessionRow, Stats, SyncRow, TargetRow, Usage, Vectors,
)
from memex.store.sqlite import (
    cache, candidates, entities, facts, memories, meta, purge, queries, schema, usage, vectors,
)

if TYPE_CHECKING:
    import numpy as np

    from memex.records import Record
    from memex.store.bodies import BodySearch  # numpy's: a lexical search never loads it
    from memex.store.protocol import IndexStore


class SqliteStore:
    __slots__ = ("conn",)

    def __init__(self, conn: apsw.Connection) -> None:
        self.conn = conn

    # -- schema, settings, transactions

    def schema_version(self) -> int:
        return schema.schema_version(self.conn)

    def write_txn(self) -> AbstractContextManager[None]:
        return schema.write_txn(self.conn)

    def bulk_writes(self) -> AbstractContextManager[None]:
        return _bulk_writes(self)

    def get_meta(self, key: str) -> str | None:
        return meta.get_meta(self.conn, key)

    def set_meta(self, key: str, value: str) -> None:
        meta.set_meta(self.conn, key, value)

    def ensure_vectors(self, model: str, dim: int) -> bool:
        return schema.ensure_vector_tables(self.conn, model, dim)

    def ensure_model_profile(self, profile: str) -> None:
        schema.ensure_model_profile(self.conn, profile)

    def ensure_chunk_rule(self, rule: str, shortest: int) -> bool:
        return schema.ensure_chunk_rule(self.conn, rule, shortest)

    def has_vectors(self) -> bool:
        return schema.has_vector_tables(self.conn)

    # -- writing one memory

    def write_memory(self, rowid: int | None, rec: Record, fts_text: str, vecs: Vectors | None) -> int:
        return memories.write_memory(self.conn, rowid, rec, fts_text, vecs)

    def move_row(self, rowid: int, old_id: str, new_id: str, new_path: str) -> None:
        memories.move_row(self.conn, rowid, old_id, new_id, new_path)

    def touch_row(self, rowid: int, rec: Record) -> None:
        memories.touch_row(self.conn, rowid, rec)

    def purge_memory(self, rowid: int) -> PurgeCounts:
        return purge.purge_memory(self.conn, rowid)

    def optimize_fts(self) -> None:
        purge.optimize_fts(self.conn)

    def checkpoint(self) -> bool:
        return purge.checkpoint(self.conn)

    # -- reading rows

    def row_by_id(self, memory_id: str) -> MemoryRow | None:
        return memories.row_by_id(self.conn, memory_id)

    def ids_with_prefix(self, prefix: str, limit: int) -> list[str]:
        return memories.ids_with_prefix(self.conn, prefix, limit)

    def rows_by_rowids(self, rowids: Sequence[int]) -> dict[int, MemoryRow]:
        return memories.rows_by_rowids(self.conn, rowids)

    def list_rows(self, filters: Filters, limit: int | None = None) -> list[MemoryRow]:
        return memories.list_rows(self.conn, filters, limit)

    def text_column(self, column: str, rowids: Sequence[int]) -> dict[int, str]:
        return memories.text_column(self.conn, column, rowids)

    def rowids_by_ids(self, ids: Sequence[str]) -> dict[str, int]:
        return memories.rowids_by_ids(self.conn, ids)

    def passing(self, rowids: Sequence[int], filters: Filters) -> set[int]:
        return memories.passing(self.conn, rowids, filters)

    def all_passing(self, filters: Filters) -> list[int]:
        return memories.all_passing(self.conn, filters)

    def scope_in_use(self, scope: str) -> bool:
        return memories.scope_in_use(self.conn, scope)

    def path_scopes(self) -> list[ScopeRow]:
        return memories.path_scopes(self.conn)

    def bodies(self) -> list[BodyRow]:
        return memories.bodies(self.conn)

    # -- what a sync compares

    def sync_rows(self) -> dict[str, SyncRow]:
        return memories.sync_rows(self.conn)

    def sync_row_at(self, path: str) -> SyncRow | None:
        return memories.sync_row_at(self.conn, path)

    def rowid_path_of(self, memory_id: str) -> Located | None:
        return memories.rowid_path_of(self.conn, memory_id)

    def embed_state(self, ids: Sequence[str]) -> dict[str, EmbedState]:
        return memories.embed_state(self.conn, ids)

    def index_errors(self) -> dict[str, ErrorRow]:
        return memories.index_errors(self.conn)

    def record_index_error(self, path: str, reason: str, st: os.stat_result | None) -> None:
        memories.record_index_error(self.conn, path, reason, st)

    def drop_index_error(self, path: str) -> list[str]:
        return memories.drop_index_error(self.conn, path)

    # -- search

    def candidates(self, query: str, qvec: np.ndarray | None, filters: Filters, k: int) -> Found:
        return candidates.find(self.conn, query, qvec, filters, k)

    # What the candidates are found with (kept for the stores' parity tests).

    def fts_top(self, query: str, k: int) -> list[Scored]:
        return memories.fts_top(self.conn, query, k)

    def fts_top_passing(self, query: str, filters: Filters, k: int) -> dict[int, float]:
        return memories.fts_top_passing(self.conn, query, filters, k)

    def knn(self, blob: bytes, k: int) -> dict[int, float]:
        return vectors.knn(self.conn, blob, k)

    def scan(self, blob: bytes, filters: Filters, k: int) -> dict[int, float]:
        return vectors.scan(self.conn, blob, filters, k)

    def knn_bodies(self, blob: bytes, k: int) -> dict[int, float]:
        return vectors.knn_bodies(self.conn, blob, k)

    def body_search(self) -> BodySearch:
        # A long-lived process (MCP server, watcher, a session's hooks through
        # one vault) has the in-process copy; a one-shot `memex add` does not
        # load it for one check, and asks sqlite-vec.
        from memex.store.sqlite import vecmatrix  # numpy: only a search with vectors comes here
        from memex.store.bodies import StoredBodies

        matrix = vecmatrix.for_connection(self.conn, may_load=False)
        return matrix if matrix is not None else StoredBodies(self)

    def vectors_of(self, rowids: Sequence[int]) -> list[RowVector]:
        return vectors.vectors_of(self.conn, rowids)

    def memory_vectors_of(self, rowids: Sequence[int]) -> list[OwnedVector]:
        return vectors.memory_vectors_of(self.conn, rowids)

    def body_vectors(self, rowids: Sequence[int]) -> dict[int, bytes]:
        return vectors.body_vectors(self.conn, rowids)

    def facts(self, rowids: Sequence[int], density: bool = True) -> dict[int, Facts]:
        return facts.facts(self.conn, rowids, density)

    def memory_count(self) -> int:
        return queries.memory_count(self.conn)

    def all_memory_vectors(self) -> list[OwnedVector]:
        return vectors.all_memory_vectors(self.conn)

    def all_chunk_vectors(self) -> list[OwnedVector]:
        return vectors.all_chunk_vectors(self.conn)

    def erased_ids(self, ids: Sequence[str]) -> set[str]:
        return set()  # this clone's own index: the vault's erased list is the one

    # -- the embedding cache

    def cache_get(self, model: str, keys: Sequence[str]) -> dict[str, bytes]:
        return cache.get(self.conn, model, keys)

    def cache_put(self, rows: Sequence[CacheRow]) -> None:
        cache.put(self.conn, rows)

    def cache_drop_unused(self, keys: Iterable[str]) -> int:
        return cache.drop_unused(self.conn, keys)

    # -- recall counts

    def record_use(self, ids: Sequence[str], stamp: str) -> None:
        usage.record_use(self.conn, ids, stamp)

    def usage_of(self, memory_id: str) -> Usage:
        return usage.usage_of(self.conn, memory_id)

    def last_accesses(self, ids: Iterable[str]) -> dict[str, str | None]:
        return usage.last_accesses(self.conn, ids)

    def decay_row(self, memory_id: str) -> DecayRow | None:
        return usage.decay_row(self.conn, memory_id)

    def active_decay_rows(self, scope: str | None = None) -> list[DecayRow]:
        return usage.active_decay_rows(self.conn, scope)

    # -- what the features select

    def exact_duplicate(self, scope: str, body_hash: str, exclude_id: str | None) -> str | None:
        return queries.exact_duplicate(self.conn, scope, body_hash, exclude_id)

    def fts_neighbours(self, text: str, scope: str, exclude_id: str | None, k: int) -> list[Neighbour]:
        return queries.fts_neighbours(self.conn, text, scope, exclude_id, k)

    def neighbours_among(self, rowids: Sequence[int], scope: str, exclude_id: str | None) -> list[Neighbour]:
        return queries.neighbours_among(self.conn, rowids, scope, exclude_id)

    def session_rowids(self, session: str, scope: str, k: int) -> list[int]:
        return queries.session_rowids(self.conn, session, scope, k)

    def session_rows(
        self, session: str, sources: Sequence[str], since: str, k: int, newest_first: bool
    ) -> list[SessionRow]:
        return queries.session_rows(self.conn, session, sources, since, k, newest_first)

    def duplicate_keys(self) -> list[HashKey]:
        return queries.duplicate_keys(self.conn)

    def active_with_hash(self, scope: str, body_hash: str) -> list[DuplicateRow]:
        return queries.active_with_hash(self.conn, scope, body_hash)

    def targets_by_id(self, memory_id: str) -> list[TargetRow]:
        return queries.targets_by_id(self.conn, memory_id)

    def targets_of_subject(
        self, source: str | None, source_ref: str | None, session: str | None
    ) -> list[TargetRow]:
        return queries.targets_of_subject(self.conn, source, source_ref, session)

    def targets_from_ref(self, ref: str) -> list[TargetRow]:
        return queries.targets_from_ref(self.conn, ref)

    def supersede_children(self, ids: Sequence[str]) -> list[TargetRow]:
        return queries.supersede_children(self.conn, ids)

    def superseded_by(self, memory_id: str) -> set[str]:
        return queries.superseded_by(self.conn, memory_id)

    def has_id(self, memory_id: str) -> bool:
        return queries.has_id(self.conn, memory_id)

    def targets_containing(self, word: str | None) -> list[TargetRow]:
        return queries.targets_containing(self.conn, word)

    def session_items(self, session: str, scope: str | None) -> list[SessionItem]:
        return queries.session_items(self.conn, session, scope)

    def active_sessions(self, scope: str | None) -> list[str]:
        return queries.active_sessions(self.conn, scope)

    def has_path(self, path: str) -> bool:
        return queries.has_path(self.conn, path)

    def known_paths(self) -> list[str]:
        return queries.known_paths(self.conn)

    def is_empty(self) -> bool:
        return queries.is_empty(self.conn)

    def stats(self) -> Stats:
        return queries.stats(self.conn)

    def orphan_vectors(self) -> int:
        return vectors.orphan_count(self.conn)

    def remove_orphan_vectors(self) -> int:
        return vectors.remove_orphans(self.conn)

    # -- entities

    def entity_counts(self) -> list[EntityCount]:
        return entities.entity_counts(self.conn)

    def find_entity(self, key: str) -> Entity | None:
        return entities.find_entity(self.conn, key)

    def entity_memories(self, entity_rowid: int) -> list[EntityMemory]:
        return entities.entity_memories(self.conn, entity_rowid)

    def entity_relations(self, entity_rowid: int) -> list[EntityRelation]:
        return entities.entity_relations(self.conn, entity_rowid)

    def neighbours(self, entity_rowid: int) -> list[EntityNeighbour]:
        return entities.neighbours(self.conn, entity_rowid)


# This clone's own index: what ``Vault.conn`` is. Code outside memex/store/
# names it only through these aliases (docs/store.md, "One seam").
LocalConnection: TypeAlias = apsw.Connection
# What the functions that serve either take: this clone's connection, or any
# backend's store.
IndexLike: TypeAlias = "apsw.Connection | IndexStore"

_Store = TypeVar("_Store")


def as_store(index: apsw.Connection | _Store) -> SqliteStore | _Store:
    """The store for ``index``: a connection's (functions that take either:
    callers that hold this clone's connection, and those that hold a store)."""
    return SqliteStore(index) if isinstance(index, apsw.Connection) else index


def _conforms(store: SqliteStore) -> IndexStore:
    return store  # mypy checks here that SqliteStore implements every operation of IndexStore


@contextmanager
def _bulk_writes(store: SqliteStore) -> Iterator[None]:
    """Densities wait for the end of a bulk write: per batch, each would cost
    a product against every vector (memex/store/density.py)."""
    density.DEFERRED.add(store.conn)
    try:
        yield
    finally:
        density.DEFERRED.discard(store.conn)
    if store.conn.execute("SELECT 1 FROM memory_density LIMIT 1").fetchone() is None:
        with store.write_txn():
            density.recompute_all(store.conn)  # its settle computes every list once
