"""The PostgreSQL implementation of :class:`memex.store.protocol.IndexStore`.

A :class:`PgStore` wraps one :class:`PgConnection` and answers each
operation with the statements of :mod:`.rows` (writing and purging a
memory), :mod:`.reads` (rows, vectors, usage, entities), :mod:`.selects`
(what the features select) and :mod:`.query` (BM25, KNN), returning the
row types of :mod:`memex.store`; like :class:`memex.store.sqlite.store.SqliteStore`
it decides nothing. ``_conforms`` below makes mypy prove it implements
every operation.

Where the backends differ underneath (docs/postgres.md):

* ``write_txn`` is a transaction holding the advisory write lock
  (:mod:`.connection`), which several processes on several machines share;
* ``optimize_fts`` has nothing to do (the GIN index drops a purged
  document's entries at the next VACUUM) and ``checkpoint`` is that VACUUM
  plus a CHECKPOINT (:mod:`.forensic`);
* ``knn`` asks the HNSW indexes (approximate), ``scan`` computes every
  distance of the filtered rows (exact), as sqlite-vec's do.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING

import numpy as np

from memex.store import facts
from memex.store.bodies import BodySearch, StoredBodies
from memex.store.facts import Facts
from memex.store.postgres import density as pgdensity
from memex.store.postgres import erasure, forensic, reads, schema, selects
from memex.store.postgres import query as pgquery
from memex.store.postgres import rows as pgrows
from memex.store.postgres.connection import PgConnection
from memex.store.rows import (
    BodyRow, CacheRow, DecayRow, DuplicateRow, EmbedState, Entity, EntityCount, EntityMemory, EntityNeighbour,
    EntityRelation, ErrorRow, Filters, Found, HashKey, Located, MemoryRow, Neighbour, OwnedVector, PurgeCounts,
    RowVector, Scored, ScopeRow, SessionItem, SessionRow, Stats, SyncRow, TargetRow, Usage, Vectors,
)

if TYPE_CHECKING:
    from memex.records import Record
    from memex.store.protocol import IndexStore

_ALL = Filters(include_superseded=True)  # what SQLite's unfiltered full text and KNN see: every status


class PgStore:
    __slots__ = ("conn",)

    def __init__(self, conn: PgConnection) -> None:
        self.conn = conn

    # -- schema, settings, transactions

    def schema_version(self) -> int:
        return int(schema.get_meta(self.conn, "schema_version") or 0)

    def write_txn(self) -> AbstractContextManager[None]:
        return self.conn.write_txn()

    def bulk_writes(self) -> AbstractContextManager[None]:
        return pgdensity.bulk_writes(self.conn)  # densities once at the end, as on SQLite

    def get_meta(self, key: str) -> str | None:
        return schema.get_meta(self.conn, key)

    def set_meta(self, key: str, value: str) -> None:
        schema.set_meta(self.conn, key, value)

    def ensure_vectors(self, model: str, dim: int) -> bool:
        return schema.ensure_vectors(self.conn, model, dim)

    def ensure_model_profile(self, profile: str) -> None:
        if schema.get_meta(self.conn, "model_profile") != profile:
            with self.conn.write_txn():
                schema.set_meta(self.conn, "model_profile", profile)

    def ensure_chunk_rule(self, rule: str, shortest: int) -> bool:
        """As :func:`memex.store.sqlite.schema.ensure_chunk_rule`: a new rule marks what it may cut differently."""
        if schema.get_meta(self.conn, "chunk_rule") == rule:
            return False
        with self.conn.write_txn():
            had = schema.get_meta(self.conn, "chunk_rule")
            if had == rule:
                return False
            marked = self.conn.execute(
                "UPDATE memories SET embedded = 0 WHERE embedded = 1 AND (length(body) > %s "
                "OR rowid IN (SELECT memory_rowid FROM chunks))",
                (shortest,),
            ).rowcount
            schema.set_meta(self.conn, "chunk_rule", rule)
        return int(marked) > 0

    def has_vectors(self) -> bool:
        return schema.get_meta(self.conn, "vector_model") is not None

    # -- writing one memory

    def write_memory(self, rowid: int | None, rec: Record, fts_text: str, vecs: Vectors | None) -> int:
        # The indexer asked, in this write transaction (the lock every clone's writer takes), which
        # row holds the path and which the id: ``rowid`` is the id's row, the path holds no other id.
        return pgrows.upsert(self.conn, rec, vecs, fts_text, rowid=rowid, checked=True)[0]

    def move_row(self, rowid: int, old_id: str, new_id: str, new_path: str) -> None:
        self.conn.execute("UPDATE usage SET memory_id = %s WHERE memory_id = %s", (new_id, old_id))
        self.conn.execute("UPDATE memories SET id = %s, path = %s WHERE rowid = %s", (new_id, new_path, rowid))

    def touch_row(self, rowid: int, rec: Record) -> None:
        moved = self.conn.execute(
            "UPDATE memories m SET size = %s, mtime_ns = %s, created = %s, racy = %s FROM memories old "
            "WHERE m.rowid = %s AND old.rowid = m.rowid RETURNING old.created IS DISTINCT FROM m.created",
            (rec.size, rec.mtime_ns, rec.created, int(rec.racy), rowid),
        ).fetchone()
        if moved is not None and moved[0]:
            # A stat-derived created moved it in its session; else its place stands (its bytes, so
            # its session and id, did not change), and re-placing it would cost eight round trips.
            facts.place(self.conn.execute, facts.POSTGRES, rowid)

    def purge_memory(self, rowid: int) -> PurgeCounts:
        return pgrows.purge_memory(self.conn, rowid)

    def optimize_fts(self) -> None:
        """Nothing to rewrite: the GIN index loses a purged row's entries at the VACUUM of :meth:`checkpoint`."""

    def checkpoint(self) -> bool:
        """VACUUM what held purged rows, then CHECKPOINT; False if this role may not CHECKPOINT."""
        return forensic.vacuum_purged(self.conn, full=False).checkpoint

    # -- reading rows

    def row_by_id(self, memory_id: str) -> MemoryRow | None:
        return reads.row_by_id(self.conn, memory_id)

    def ids_with_prefix(self, prefix: str, limit: int) -> list[str]:
        return reads.ids_with_prefix(self.conn, prefix, limit)

    def rows_by_rowids(self, rowids: Sequence[int]) -> dict[int, MemoryRow]:
        return reads.rows_by_rowids(self.conn, rowids)

    def list_rows(self, filters: Filters, limit: int | None = None) -> list[MemoryRow]:
        return reads.list_rows(self.conn, filters, limit)

    def text_column(self, column: str, rowids: Sequence[int]) -> dict[int, str]:
        return reads.text_column(self.conn, column, rowids)

    def rowids_by_ids(self, ids: Sequence[str]) -> dict[str, int]:
        return pgquery.rowids_of(self.conn, ids)

    def passing(self, rowids: Sequence[int], filters: Filters) -> set[int]:
        return reads.passing(self.conn, rowids, filters)

    def all_passing(self, filters: Filters) -> list[int]:
        return reads.all_passing(self.conn, filters)

    def scope_in_use(self, scope: str) -> bool:
        return reads.scope_in_use(self.conn, scope)

    def path_scopes(self) -> list[ScopeRow]:
        return reads.path_scopes(self.conn)

    def bodies(self) -> list[BodyRow]:
        return reads.bodies(self.conn)

    # -- what a sync compares

    def sync_rows(self) -> dict[str, SyncRow]:
        return reads.sync_rows(self.conn)

    def sync_row_at(self, path: str) -> SyncRow | None:
        return reads.sync_row_at(self.conn, path)

    def rowid_path_of(self, memory_id: str) -> Located | None:
        return reads.rowid_path_of(self.conn, memory_id)

    def embed_state(self, ids: Sequence[str]) -> dict[str, EmbedState]:
        return reads.embed_state(self.conn, ids)

    def index_errors(self) -> dict[str, ErrorRow]:
        return reads.index_errors(self.conn)

    def record_index_error(self, path: str, reason: str, st: os.stat_result | None) -> None:
        self.conn.execute(
            "INSERT INTO index_errors(path, reason, size, mtime_ns) VALUES (%s, %s, %s, %s) "
            "ON CONFLICT (path) DO UPDATE SET reason = excluded.reason, size = excluded.size, "
            "mtime_ns = excluded.mtime_ns",
            (path, reason, st.st_size if st else None, st.st_mtime_ns if st else None),
        )

    def drop_index_error(self, path: str) -> list[str]:
        return [str(r[0]) for r in self.conn.execute(
            "DELETE FROM index_errors WHERE path = %s RETURNING reason", (path,)
        ).fetchall()]

    def erased_ids(self, ids: Sequence[str]) -> set[str]:
        return erasure.erased_ids(self.conn, ids)

    def allow_ids(self, ids: Sequence[str]) -> None:
        """``memex reindex --allow-erased``: these ids may be indexed again, from every clone."""
        erasure.allow_ids(self.conn, ids)

    # -- search

    def candidates(self, query: str, qvec: np.ndarray | None, filters: Filters, k: int) -> Found:
        # BM25 top-k that stops early, and pgvector's filtered (iterative) HNSW scan, on the server.
        lexical = pgquery.bm25_top(self.conn, query, filters, k)
        if qvec is None:
            return Found(lexical, {})
        semantic = pgquery.knn(self.conn, qvec, filters, k)
        semantic.update(pgquery.cosines(self.conn, qvec, [r for r in lexical if r not in semantic]))
        return Found(lexical, semantic)

    # What the candidates are found with (kept for the stores' parity tests).

    def fts_top(self, query: str, k: int) -> list[Scored]:
        return [Scored(r, s) for r, s in pgquery.bm25_top(self.conn, query, _ALL, k).items()]

    def fts_top_passing(self, query: str, filters: Filters, k: int) -> dict[int, float]:
        return pgquery.bm25_top(self.conn, query, filters, k)

    def knn(self, blob: bytes, k: int) -> dict[int, float]:
        return reads.knn(self.conn, blob, k)

    def scan(self, blob: bytes, filters: Filters, k: int) -> dict[int, float]:
        return reads.scan(self.conn, blob, filters, k)

    def knn_bodies(self, blob: bytes, k: int) -> dict[int, float]:
        return reads.knn(self.conn, blob, k, chunks=False)

    def body_search(self) -> BodySearch:
        return StoredBodies(self)

    def vectors_of(self, rowids: Sequence[int]) -> list[RowVector]:
        return reads.vectors_of(self.conn, rowids)

    def memory_vectors_of(self, rowids: Sequence[int]) -> list[OwnedVector]:
        return reads.memory_vectors_of(self.conn, rowids)

    def body_vectors(self, rowids: Sequence[int]) -> dict[int, bytes]:
        return reads.body_vectors(self.conn, rowids)

    def facts(self, rowids: Sequence[int], density: bool = True) -> dict[int, Facts]:
        return pgquery.facts(self.conn, rowids, density)

    def memory_count(self) -> int:
        return int(self.conn.execute("SELECT count(*) FROM memories").fetchone()[0])

    def all_memory_vectors(self) -> list[OwnedVector]:
        return reads.all_memory_vectors(self.conn)

    def all_chunk_vectors(self) -> list[OwnedVector]:
        return reads.all_chunk_vectors(self.conn)

    # -- the embedding cache

    def cache_get(self, model: str, keys: Sequence[str]) -> dict[str, bytes]:
        return pgrows.cached(self.conn, model, keys) if keys else {}

    def cache_put(self, rows: Sequence[CacheRow]) -> None:
        pgrows.store_cache(self.conn, rows)

    def cache_drop_unused(self, keys: Iterable[str]) -> int:
        return pgrows.drop_unused_cache(self.conn, set(keys))

    # -- recall counts

    def record_use(self, ids: Sequence[str], stamp: str) -> None:
        pgquery.record_use(self.conn, ids, stamp)

    def usage_of(self, memory_id: str) -> Usage:
        return reads.usage_of(self.conn, memory_id)

    def last_accesses(self, ids: Iterable[str]) -> dict[str, str | None]:
        return pgquery.last_accesses(self.conn, ids)

    def decay_row(self, memory_id: str) -> DecayRow | None:
        return reads.decay_row(self.conn, memory_id)

    def active_decay_rows(self, scope: str | None = None) -> list[DecayRow]:
        return reads.active_decay_rows(self.conn, scope)

    # -- what the features select

    def exact_duplicate(self, scope: str, body_hash: str, exclude_id: str | None) -> str | None:
        return selects.exact_duplicate(self.conn, scope, body_hash, exclude_id)

    def fts_neighbours(self, text: str, scope: str, exclude_id: str | None, k: int) -> list[Neighbour]:
        return selects.fts_neighbours(self.conn, text, scope, exclude_id, k)

    def neighbours_among(self, rowids: Sequence[int], scope: str, exclude_id: str | None) -> list[Neighbour]:
        return selects.neighbours_among(self.conn, rowids, scope, exclude_id)

    def session_rowids(self, session: str, scope: str, k: int) -> list[int]:
        return selects.session_rowids(self.conn, session, scope, k)

    def session_rows(
        self, session: str, sources: Sequence[str], since: str, k: int, newest_first: bool
    ) -> list[SessionRow]:
        return selects.session_rows(self.conn, session, sources, since, k, newest_first)

    def duplicate_keys(self) -> list[HashKey]:
        return selects.duplicate_keys(self.conn)

    def active_with_hash(self, scope: str, body_hash: str) -> list[DuplicateRow]:
        return selects.active_with_hash(self.conn, scope, body_hash)

    def targets_by_id(self, memory_id: str) -> list[TargetRow]:
        return selects.targets_by_id(self.conn, memory_id)

    def targets_of_subject(
        self, source: str | None, source_ref: str | None, session: str | None
    ) -> list[TargetRow]:
        return selects.targets_of_subject(self.conn, source, source_ref, session)

    def targets_from_ref(self, ref: str) -> list[TargetRow]:
        return selects.targets_from_ref(self.conn, ref)

    def supersede_children(self, ids: Sequence[str]) -> list[TargetRow]:
        return selects.supersede_children(self.conn, ids)

    def superseded_by(self, memory_id: str) -> set[str]:
        return selects.superseded_by(self.conn, memory_id)

    def has_id(self, memory_id: str) -> bool:
        return selects.has_id(self.conn, memory_id)

    def targets_containing(self, word: str | None) -> list[TargetRow]:
        return selects.targets_containing(self.conn, word)

    def session_items(self, session: str, scope: str | None) -> list[SessionItem]:
        return selects.session_items(self.conn, session, scope)

    def active_sessions(self, scope: str | None) -> list[str]:
        return selects.active_sessions(self.conn, scope)

    def has_path(self, path: str) -> bool:
        return selects.has_path(self.conn, path)

    def known_paths(self) -> list[str]:
        return selects.known_paths(self.conn)

    def is_empty(self) -> bool:
        return selects.is_empty(self.conn)

    def stats(self) -> Stats:
        return selects.stats(self.conn)

    def orphan_vectors(self) -> int:
        return reads.orphan_vectors(self.conn) if self.has_vectors() else 0

    def remove_orphan_vectors(self) -> int:
        return reads.remove_orphan_vectors(self.conn) if self.has_vectors() else 0

    # -- entities

    def entity_counts(self) -> list[EntityCount]:
        return reads.entity_counts(self.conn)

    def find_entity(self, key: str) -> Entity | None:
        return reads.find_entity(self.conn, key)

    def entity_memories(self, entity_rowid: int) -> list[EntityMemory]:
        return reads.entity_memories(self.conn, entity_rowid)

    def entity_relations(self, entity_rowid: int) -> list[EntityRelation]:
        return reads.entity_relations(self.conn, entity_rowid)

    def neighbours(self, entity_rowid: int) -> list[EntityNeighbour]:
        return reads.entity_neighbours(self.conn, entity_rowid)


def _conforms(store: PgStore) -> IndexStore:
    return store  # mypy checks here that PgStore implements every operation of IndexStore
