"""The index backend interface, by role: every operation memex asks of its index.

Three roles, each a Protocol, and :class:`IndexStore` all three:

- :class:`RecordStore`, writing and purging records: what the indexer and
  erasure's purge ask (write a memory with its text entry, vectors and
  links; move it; purge its every trace; the bookkeeping a sync compares
  files with; the embedding cache; the schema and its settings);
- :class:`CandidateStore`, what search asks: a query's candidates with
  their lexical and semantic scores (:class:`memex.store.rows.Found`),
  what ranking knows about them, and rows by id. How a store finds the
  candidates is its own: SQLite reads an in-process copy of its vectors
  (:mod:`memex.store.sqlite.vecmatrix`), PostgreSQL asks its server;
- :class:`FeatureQueries`, what the features select, one query each.

All speak at the level memex thinks in, never SQL; rows cross them as the
named tuples and dataclasses of :mod:`memex.store.rows`.
:class:`memex.store.sqlite.store.SqliteStore` and
:class:`memex.store.postgres.store.PgStore` implement them. How a backend
plugs in: docs/store.md.

Memories are addressed by ``rowid``, an integer the backend assigns when a
memory is first written and keeps while its id stays (a move keeps it);
vectors and chunks are keyed by it. Writes run inside :meth:`write_txn`.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Protocol

from memex.store.facts import Facts
from memex.store.rows import (
    BodyRow, CacheRow, DecayRow, DuplicateRow, EmbedState, Entity, EntityCount, EntityMemory, EntityNeighbour,
    EntityRelation, ErrorRow, Filters, Found, HashKey, Located, MemoryRow, Neighbour, OwnedVector, PurgeCounts,
    ScopeRow, SessionItem, SessionRow, Stats, SyncRow, TargetRow, Usage, Vectors,
)

if TYPE_CHECKING:
    import numpy as np

    from memex.records import Record
    from memex.store.bodies import BodySearch  # numpy's: a lexical search never loads it

# The ``meta`` key that says a purge happened since the index was last
# scrubbed (a flag any store may hold; what a scrub is: memex/store/sqlite/scrub.py).
SCRUB_PENDING = "scrub_pending"


class SqlConnection(Protocol):
    """What the code both backends share (memex/store/density.py,
    memex/store/refvectors.py) calls on a connection: SQLite's apsw connection,
    or PostgreSQL's dialect of it (memex/store/postgres/density.py). Either
    answers ``execute`` with rows it can iterate and ``fetchone``."""

    def execute(self, sql: str, params: Any = ..., /) -> Any: ...

    def executemany(self, sql: str, rows: Any, /) -> Any: ...


class RecordStore(Protocol):
    """Writing and purging records: what the indexer and erasure's purge ask,
    and the bookkeeping a sync compares files with."""

    # -- schema, settings, transactions ----------------------------------------

    def schema_version(self) -> int:
        """The version of the schema the index is at."""
        ...

    def write_txn(self) -> AbstractContextManager[None]:
        """One writer at a time (across processes); nested use joins the outer one."""
        ...

    def bulk_writes(self) -> AbstractContextManager[None]:
        """Around writes of many memories (a reindex): what is derived from all
        of them (densities) is computed once at the end, not per transaction."""
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

    # -- writing one memory ------------------------------------------------------

    def write_memory(self, rowid: int | None, rec: Record, fts_text: str, vecs: Vectors | None) -> int:
        """Upsert a memory's row, full-text entry, vectors and chunks (if given)
        and entity links; ``rowid`` is the row it replaces (None: new). Returns its rowid."""
        ...

    def move_row(self, rowid: int, old_id: str, new_id: str, new_path: str) -> None:
        """The same bytes under a new path (and maybe id); the caller writes the
        row after it (``write_memory``), which puts it in its place in its session."""
        ...

    def touch_row(self, rowid: int, rec: Record) -> None:
        """The file's bytes did not change: only its stat (and a stat-derived
        ``created``, which may move it in its session: its facts follow)."""
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

    # -- what a sync compares --------------------------------------------------------

    def sync_rows(self) -> dict[str, SyncRow]: ...

    def sync_row_at(self, path: str) -> SyncRow | None: ...

    def rowid_path_of(self, memory_id: str) -> Located | None: ...

    def embed_state(self, ids: Sequence[str]) -> dict[str, EmbedState]: ...

    def index_errors(self) -> dict[str, ErrorRow]: ...

    def record_index_error(self, path: str, reason: str, st: os.stat_result | None) -> None: ...

    def drop_index_error(self, path: str) -> list[str]: ...

    def erased_ids(self, ids: Sequence[str]) -> set[str]:
        """Which of these ids an erasure on another clone listed in the index itself
        (an index the clones share keeps their erased ids; a clone's own keeps none:
        its erased list is the vault's)."""
        ...

    # -- the embedding cache ---------------------------------------------------------

    def cache_get(self, model: str, keys: Sequence[str]) -> dict[str, bytes]: ...

    def cache_put(self, rows: Sequence[CacheRow]) -> None: ...

    def cache_drop_unused(self, keys: Iterable[str]) -> int: ...

    # -- recall counts ------------------------------------------------------------------

    def record_use(self, ids: Sequence[str], stamp: str) -> None: ...


class CandidateStore(Protocol):
    """What search asks: a query's candidates with both signals, what ranking
    knows about them, and the rows of the few it shows."""

    def has_vectors(self) -> bool: ...

    def candidates(self, query: str, qvec: np.ndarray | None, filters: Filters, k: int) -> Found:
        """The best ``k`` memories by BM25 (higher is better) and the ``k``
        nearest by cosine (body or best chunk) that pass the filters, each
        lexical candidate's cosine filled in (``qvec`` None: lexical only)."""
        ...

    def facts(self, rowids: Sequence[int], density: bool = True) -> dict[int, Facts]:
        """What ranking needs about each memory, as the index keeps it: does it
        ask a question, which memories are beside it in its session, and (with
        ``density``) its density (memex/store/facts.py)."""
        ...

    def rows_by_rowids(self, rowids: Sequence[int]) -> dict[int, MemoryRow]: ...

    def rowids_by_ids(self, ids: Sequence[str]) -> dict[str, int]: ...


class FeatureQueries(Protocol):
    """What the features select (dedup, consolidation, erasure's selection,
    decay, the graph, stats): one query each, named for what it answers."""

    # -- reading rows --------------------------------------------------------------

    def row_by_id(self, memory_id: str) -> MemoryRow | None: ...

    def ids_with_prefix(self, prefix: str, limit: int) -> list[str]:
        """Up to ``limit`` ids beginning with ``prefix`` in any ASCII case, in order."""
        ...

    def list_rows(self, filters: Filters, limit: int | None = None) -> list[MemoryRow]: ...

    def text_column(self, column: str, rowids: Sequence[int]) -> dict[int, str]: ...

    def scope_in_use(self, scope: str) -> bool: ...

    def path_scopes(self) -> list[ScopeRow]: ...

    def bodies(self) -> list[BodyRow]: ...

    # -- vectors -------------------------------------------------------------------------

    def knn_bodies(self, blob: bytes, k: int) -> dict[int, float]:
        """The ``k`` nearest memories by body vector alone."""
        ...

    def body_search(self) -> BodySearch:
        """Nearest memories by body vector and cosines to chosen ones, from one
        source for a whole dedup check (memex/store/bodies.py): SQLite's
        in-process copy when this process has loaded it, else the store."""
        ...

    def memory_vectors_of(self, rowids: Sequence[int]) -> list[OwnedVector]: ...

    def body_vectors(self, rowids: Sequence[int]) -> dict[int, bytes]: ...

    def memory_count(self) -> int:
        """How many memories the index holds (any status)."""
        ...

    def all_memory_vectors(self) -> list[OwnedVector]: ...

    def all_chunk_vectors(self) -> list[OwnedVector]: ...

    # -- recall counts -----------------------------------------------------------------

    def usage_of(self, memory_id: str) -> Usage: ...

    def last_accesses(self, ids: Iterable[str]) -> dict[str, str | None]: ...

    def decay_row(self, memory_id: str) -> DecayRow | None: ...

    def active_decay_rows(self, scope: str | None = None) -> list[DecayRow]: ...

    # -- what the features select ---------------------------------------------------

    def exact_duplicate(self, scope: str, body_hash: str, exclude_id: str | None) -> str | None: ...

    def fts_neighbours(self, text: str, scope: str, exclude_id: str | None, k: int) -> list[Neighbour]: ...

    def neighbours_among(self, rowids: Sequence[int], scope: str, exclude_id: str | None) -> list[Neighbour]: ...

    def session_rowids(self, session: str, scope: str, k: int) -> list[int]: ...

    def session_rows(
        self, session: str, sources: Sequence[str], since: str, k: int, newest_first: bool
    ) -> list[SessionRow]: ...

    def duplicate_keys(self) -> list[HashKey]: ...

    def active_with_hash(self, scope: str, body_hash: str) -> list[DuplicateRow]: ...

    def targets_by_id(self, memory_id: str) -> list[TargetRow]: ...

    def targets_of_subject(
        self, source: str | None, source_ref: str | None, session: str | None
    ) -> list[TargetRow]: ...

    def targets_from_ref(self, ref: str) -> list[TargetRow]: ...

    def supersede_children(self, ids: Sequence[str]) -> list[TargetRow]: ...

    def superseded_by(self, memory_id: str) -> set[str]: ...

    def has_id(self, memory_id: str) -> bool: ...

    def targets_containing(self, word: str | None) -> list[TargetRow]: ...

    def session_items(self, session: str, scope: str | None) -> list[SessionItem]: ...

    def active_sessions(self, scope: str | None) -> list[str]: ...

    def has_path(self, path: str) -> bool: ...

    def known_paths(self) -> list[str]: ...

    def is_empty(self) -> bool: ...

    def stats(self) -> Stats: ...

    def orphan_vectors(self) -> int:
        """Vectors whose memory or chunk is gone."""
        ...

    def remove_orphan_vectors(self) -> int: ...

    # -- entities ----------------------------------------------------------------------

    def entity_counts(self) -> list[EntityCount]: ...

    def find_entity(self, key: str) -> Entity | None: ...

    def entity_memories(self, entity_rowid: int) -> list[EntityMemory]: ...

    def entity_relations(self, entity_rowid: int) -> list[EntityRelation]: ...

    def neighbours(self, entity_rowid: int) -> list[EntityNeighbour]: ...


class IndexStore(RecordStore, CandidateStore, FeatureQueries, Protocol):
    """Every operation memex asks of its index: the three roles together."""
