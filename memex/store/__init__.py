"""The index store: the one package that owns the index's schema and every
SQL statement memex runs.

Code outside this package reaches the index through the names exported here
and the objects they give, never through one of its modules
(tests/test_architecture.py): the vault's :class:`Backend` (opened by
:func:`open_backend`; this clone's transactions and scrub are its
operations), the stores it holds, typed by role (:class:`IndexStore`,
:class:`RecordStore`, :class:`CandidateStore`), the rows they answer with
(:mod:`.rows`), and the one-line errors for what a driver raised
(:func:`index_damaged`, :func:`store_error`). Code outside this package
names no backend: it takes an :class:`IndexStore` (or :data:`IndexLike`,
either that or this clone's :data:`LocalConnection`, made a store by
:func:`as_store`).

Inside: the interface (:mod:`.protocol`), the backend a vault opens
(:mod:`.backend`, :mod:`.backends`), what both backends compute alike
(:mod:`.density`, :mod:`.nearest`, :mod:`.refvectors`, :mod:`.facts`,
:mod:`.bodies`), and one package per backend: :mod:`.sqlite`,
:mod:`.postgres`. See docs/store.md.

Names load on first use (PEP 562): a command that never opens the index
loads no driver for importing this package, and asking whether an error
is a damaged index loads none either.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memex.store.backend import Backend, ConnectFn, EmbedderFn
    from memex.store.backends import describe_target, open_backend
    from memex.store.facts import Facts
    from memex.store.failures import index_damaged, store_error
    from memex.store.protocol import SCRUB_PENDING, CandidateStore, FeatureQueries, IndexStore, RecordStore
    from memex.store.rows import (
        BodyRow, CacheRow, DecayRow, DuplicateRow, EmbedState, Entity, EntityCount, EntityMemory, EntityNeighbour,
        EntityRelation, ErrorRow, Filters, Found, HashKey, Located, MemoryRow, Neighbour, OwnedVector, PurgeCounts,
        RowVector, ScopeRow, SessionItem, SessionRow, Stats, SyncRow, TargetRow, Usage,
    )
    from memex.store.sqlite.store import IndexLike, LocalConnection, SqliteStore, as_store

# Each exported name and the module that defines it.
_WHERE = {
    **dict.fromkeys(("Backend", "ConnectFn", "EmbedderFn"), "backend"),
    **dict.fromkeys(("describe_target", "open_backend"), "backends"),
    "Facts": "facts",
    **dict.fromkeys(("index_damaged", "store_error"), "failures"),
    **dict.fromkeys(("SCRUB_PENDING", "CandidateStore", "FeatureQueries", "IndexStore", "RecordStore"), "protocol"),
    **dict.fromkeys((
        "BodyRow", "CacheRow", "DecayRow", "DuplicateRow", "EmbedState", "Entity", "EntityCount", "EntityMemory",
        "EntityNeighbour", "EntityRelation", "ErrorRow", "Filters", "Found", "HashKey", "Located", "MemoryRow",
        "Neighbour", "OwnedVector", "PurgeCounts", "RowVector", "ScopeRow", "SessionItem", "SessionRow", "Stats",
        "SyncRow", "TargetRow", "Usage",
    ), "rows"),
    **dict.fromkeys(("IndexLike", "LocalConnection", "SqliteStore", "as_store"), "sqlite.store"),
}

__all__ = [  # every name of _WHERE (tests/test_architecture.py)
    "Backend", "BodyRow", "CacheRow", "CandidateStore", "ConnectFn", "DecayRow", "DuplicateRow", "EmbedState",
    "EmbedderFn", "Entity", "EntityCount", "EntityMemory", "EntityNeighbour", "EntityRelation", "ErrorRow", "Facts",
    "FeatureQueries", "Filters", "Found", "HashKey", "IndexLike", "IndexStore", "LocalConnection", "Located",
    "MemoryRow", "Neighbour", "OwnedVector", "PurgeCounts", "RecordStore", "RowVector", "SCRUB_PENDING", "ScopeRow",
    "SessionItem", "SessionRow", "SqliteStore", "Stats", "SyncRow", "TargetRow", "Usage", "as_store",
    "describe_target", "index_damaged", "open_backend", "store_error",
]


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value  # once: later lookups do not come here
    return value
