"""The index store: the one package that owns the index's schema and every
SQL statement memex runs.

One module per table family: :mod:`.schema` (connection, schema steps,
transactions, vector tables), :mod:`.meta`, :mod:`.memories` (rows, FTS5,
index errors), :mod:`.vectors` (memory and chunk vectors), :mod:`.cache`
(the embedding cache), :mod:`.usage`, :mod:`.entities`, :mod:`.purge` (one
memory's every trace, and the scrub). :class:`IndexStore` is the backend
interface (every operation, no SQL); :class:`SqliteStore` implements it on
one apsw connection. See docs/store.md.
"""

from memex.store.memories import Filters, MemoryRow, SyncRow
from memex.store.protocol import IndexStore
from memex.store.purge import PurgeCounts
from memex.store.sqlite import SqliteStore

__all__ = ["Filters", "IndexStore", "MemoryRow", "PurgeCounts", "SqliteStore", "SyncRow"]
