"""The index store: the one package that owns the index's schema and every
SQL statement memex runs.

One module per table family: :mod:`.schema` (connection, schema steps,
transactions, vector tables), :mod:`.meta`, :mod:`.memories` (rows, FTS5,
index errors), :mod:`.vectors` (memory and chunk vectors), :mod:`.cache`
(the embedding cache), :mod:`.usage`, :mod:`.entities`, :mod:`.purge` (one
memory's every trace), :mod:`.scrub` (the scrub after it). :class:`IndexStore`
is the backend interface (every operation, no SQL); :class:`SqliteStore`
implements it on one apsw connection. Code outside this package names no backend: it takes
an :class:`IndexStore` (or :data:`IndexLike`, either that or this clone's
:data:`LocalConnection`, made a store by :func:`as_store`). See docs/store.md.
"""

from memex.store.memories import Filters, MemoryRow, SyncRow
from memex.store.protocol import IndexStore
from memex.store.purge import PurgeCounts
from memex.store.sqlite import IndexLike, LocalConnection, SqliteStore, as_store

__all__ = [
    "Filters", "IndexLike", "IndexStore", "LocalConnection", "MemoryRow", "PurgeCounts", "SqliteStore", "SyncRow",
    "as_store",
]
