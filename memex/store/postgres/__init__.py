"""The derived index on PostgreSQL + pgvector (``[index] backend = "postgres"``).

The same rows as the SQLite index (``memex/store/sqlite/schema.py``), in a PostgreSQL database
that several memex processes on several machines share:

* :mod:`.connection`: connecting, transactions, the advisory lock that plays
  the part of the vault's ``write.lock``, and the binary form of a pgvector;
* :mod:`.schema`: tables, the text search configuration, HNSW indexes;
* :mod:`.rows`: writing and purging one memory's row and every derived row;
* :mod:`.query`: BM25 top-k over PostgreSQL text search, vector KNN, usage;
* :mod:`.forensic`: ``VACUUM`` after a purge, and what PostgreSQL still holds;
* :mod:`.bulk`: loading many memories with ``COPY``;
* :mod:`.store`: :class:`PgStore`, the :class:`memex.store.protocol.IndexStore`
  on PostgreSQL (``Vault.store``), over :mod:`.reads` (rows, vectors,
  usage, entities) and :mod:`.selects` (what the features select);
* :mod:`.erasure`: an erasure's purge, the ids other clones erased;
* :mod:`.backend`: :class:`SharedBackend`, the vault's backend on it, whose
  store follows each clone's writes (the vault's indexer writes it with the
  same code as the SQLite index).

Search over it is the one hybrid search (:mod:`memex.search.hybrid`), which
asks :meth:`PgStore.candidates` for a query's candidates.

Setup, what is the same and what differs: docs/postgres.md.
"""

from memex.store.postgres.connection import PgConnection
from memex.store.postgres.forensic import vacuum_purged
from memex.store.postgres.query import PgFilters, bm25_top, knn, record_use
from memex.store.postgres.rows import purge_memory, upsert
from memex.store.postgres.schema import connect

__all__ = [
    "PgConnection", "PgFilters", "bm25_top", "connect", "knn", "purge_memory", "record_use", "upsert",
    "vacuum_purged",
]
