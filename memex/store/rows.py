"""What crosses the store interface, whichever backend answers: rows, counts,
filters, and the few keys both backends derive alike.

Every operation of :class:`memex.store.protocol.IndexStore` speaks in these;
each backend builds them from its own statements (SQLite:
memex/store/sqlite/, PostgreSQL: memex/store/postgres/). Code outside
memex/store/ names them through :mod:`memex.store`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, fields
from typing import NamedTuple

from memex.text import normalize, strip_injected, text_key

# -- memories -------------------------------------------------------------------


class MemoryRow(NamedTuple):
    """A memory as shown: its rowid and the shown fields that are columns
    (:data:`memex.fields.HIT_FIELDS`, in that order; tests/test_fields.py)."""

    rowid: int
    id: str
    path: str
    scope: str
    source: str | None
    session: str | None
    source_ref: str | None
    category: str | None
    confidence: float
    created: str
    status: str
    superseded_by: str | None
    body: str


class SyncRow(NamedTuple):
    """What a sync compares with a file: is it the bytes the row was built from?"""

    rowid: int
    id: str
    size: int
    mtime_ns: int
    file_hash: str
    embedded: int
    racy: int = 0

    def same_stat(self, st: os.stat_result) -> bool:
        """Size and mtime say unchanged, and the row was not read racily."""
        return self.size == st.st_size and self.mtime_ns == st.st_mtime_ns and not self.racy


class ErrorRow(NamedTuple):
    """A file that could not be indexed, with the stat it had then."""

    reason: str
    size: int | None
    mtime_ns: int | None


class Located(NamedTuple):
    """Where a memory is indexed."""

    rowid: int
    path: str


class BodyRow(NamedTuple):
    rowid: int
    id: str
    path: str
    body: str


class ScopeRow(NamedTuple):
    path: str
    scope: str


class EmbedState(NamedTuple):
    """The key of the text a memory's vectors were made from, and whether it has them."""

    key: str | None
    embedded: int


class Scored(NamedTuple):
    """A full-text match: a memory's rowid and its BM25 score (higher is better)."""

    rowid: int
    score: float


@dataclass(frozen=True)
class Filters:
    """What a search or list narrows to (all of it ANDed); each backend spells
    it in its own SQL (memex/store/sqlite/filters.py, memex/store/postgres/filters.py)."""

    scopes: tuple[str, ...] | None = None
    source: str | None = None
    session: str | None = None
    include_superseded: bool = False

    @property
    def narrowing(self) -> bool:
        """True when more than the status filter applies (scope, source, session)."""
        return bool(self.scopes or self.source or self.session)


# A body vector and (text hash, vector) per chunk.
Vectors = tuple[bytes, list[tuple[str, bytes]]]


def like_prefix(prefix: str) -> str:
    """A LIKE pattern matching text that begins with ``prefix`` taken literally."""
    return prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


# -- search ----------------------------------------------------------------------


class Found(NamedTuple):
    """BM25 (higher is better) and cosine per candidate rowid."""

    lexical: dict[int, float]
    semantic: dict[int, float]


# -- vectors and the embedding cache ---------------------------------------------


class RowVector(NamedTuple):
    """A memory's rowid and one of its vectors (body or chunk)."""

    rowid: int
    blob: bytes


class OwnedVector(NamedTuple):
    """A body or chunk vector: its key (memory or chunk rowid), the memory it speaks for, the vector."""

    key: int
    owner: int
    blob: bytes


# (model, text hash, vector blob): one row of the cache.
CacheRow = tuple[str, str, bytes]


def body_cache_keys(body: str) -> list[str]:
    """Cache keys under which this body's vector may also be stored.

    ``add`` embeds the body as typed (to run dedup before the file exists)
    and a search for the exact text caches its query vector: both are the
    memory's embedding under another key unless whitespace happens to agree.
    """
    stripped = strip_injected(body).strip()
    variants = {body, body.strip(), stripped, normalize(stripped)}
    return [text_key(v) for v in variants if v]


# -- purging ---------------------------------------------------------------------


@dataclass
class PurgeCounts:
    memories: int = 0
    fts_rows: int = 0
    vectors: int = 0
    chunks: int = 0
    chunk_vectors: int = 0
    cache_entries: int = 0
    usage: int = 0
    entities: int = 0
    relations: int = 0

    def add(self, other: PurgeCounts) -> None:
        for f in fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))

    def as_dict(self) -> dict[str, int]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


# -- recall counts ---------------------------------------------------------------


class Usage(NamedTuple):
    access_count: int
    last_access: str | None


class DecayRow(NamedTuple):
    """What decay reads of one memory: its own values and its last recall."""

    id: str
    scope: str
    category: str | None
    confidence: float
    created: str
    last_access: str | None
    body: str


# -- what the features select ------------------------------------------------------


class Neighbour(NamedTuple):
    """An active memory a new text is compared with."""

    rowid: int
    id: str
    body: str
    session: str | None


class SessionRow(NamedTuple):
    """An active memory of one session, as the echo guard and the hand-off note read it."""

    id: str
    scope: str
    source: str | None
    created: str
    body: str


class HashKey(NamedTuple):
    scope: str
    body_hash: str


class DuplicateRow(NamedTuple):
    id: str
    confidence: float
    created: str
    body: str


class TargetRow(NamedTuple):
    """A memory row as erasure selects it."""

    rowid: int
    id: str
    path: str
    body: str
    source: str | None
    source_ref: str | None
    session: str | None
    supersedes: str | None
    superseded_by: str | None


class SessionItem(NamedTuple):
    """An active memory of a session, as consolidation weighs it."""

    rowid: int
    id: str
    body: str
    scope: str
    category: str | None
    confidence: float
    created: str
    access_count: int


class Stats(NamedTuple):
    by_status: dict[str, int]
    by_scope: dict[str, int]  # most memories first
    embedded: int
    chunks: int
    entities: int
    cached_embeddings: int
    errors: int


# -- entities --------------------------------------------------------------------


class Entity(NamedTuple):
    rowid: int
    name: str


class EntityCount(NamedTuple):
    name: str
    memories: int
    active: int
    relations: int


class EntityMemory(NamedTuple):
    id: str
    scope: str
    status: str
    body: str


class EntityRelation(NamedTuple):
    subject: str
    predicate: str
    object: str
    memory: str


class EntityNeighbour(NamedTuple):
    name: str
    shared_memories: int
