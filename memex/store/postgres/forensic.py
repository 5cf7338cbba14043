"""After a purge on PostgreSQL: VACUUM what held the rows, and say what remains.

A ``DELETE`` on PostgreSQL only marks a row dead. ``VACUUM`` makes its space
reusable and removes its index entries, but it does not overwrite the
bytes: a raw-byte scan of the data folder after DELETE + VACUUM + CHECKPOINT
still finds the body in the ``memories`` heap, its GIN (text) and b-tree
(path) indexes, the BM25 postings and term counts (``fts_postings``,
``fts_terms`` and their indexes), and the vector in ``memory_vec`` and ``embedding_cache``,
until new rows happen to reuse that space (``tests/test_pg_forensic.py``).
Only a rewrite of the files removes them: ``VACUUM FULL`` writes each table
and its indexes anew and unlinks the old files (the blocks they held go
back to the filesystem, which does not wipe them either).

So :func:`vacuum_purged` has two strengths: ``full=False`` (plain VACUUM,
fast at any size: with ``INDEX_CLEANUP AUTO`` PostgreSQL skips the index
pass when few rows died, and the index pass would not wipe bytes either;
the HNSW pass alone took minutes at 100k memories) and ``full=True``
(VACUUM FULL of every table that held a trace, whose cost grows with the
tables: a lock on them and a rebuild of their indexes, the HNSW graph
included, 27 s at 30k memories; figures in docs/postgres.md).
``[index] erase_vacuum = "full"`` chooses the second for erasures. Either way it
then asks for a ``CHECKPOINT`` (allowed to superusers and members of
``pg_checkpoint``). What neither can reach is in :data:`RETAINED`, which
the erasure prints when the index is on PostgreSQL.
"""

from __future__ import annotations

from dataclasses import dataclass

from memex.store.postgres.connection import PgConnection
from memex.store.postgres.schema import TABLES

RETAINED = (
    "the index is on PostgreSQL: the rows were deleted and VACUUMed, but PostgreSQL still holds the "
    "text in its write-ahead log (pg_wal) until those segments are recycled after later checkpoints, "
    "and in any base backup, WAL archive or replica of the server; ask its administrator to rotate "
    "them (memex help postgres)"
)
RETAINED_PLAIN = (
    "plain VACUUM frees the rows' space but does not overwrite it: the text and vector stay in the "
    "table and index files until new rows reuse the space; a full erasure (VACUUM FULL) rewrites them"
)


@dataclass
class VacuumReport:
    tables: int
    full: bool
    checkpoint: bool  # False: this role may not CHECKPOINT (the WAL is then flushed on the server's schedule)

    def retained(self) -> list[str]:
        return [RETAINED] if self.full else [RETAINED_PLAIN, RETAINED]

    def as_dict(self) -> dict[str, object]:
        return {"tables": self.tables, "full": self.full, "checkpoint": self.checkpoint, "retained": self.retained()}


def vacuum_purged(conn: PgConnection, full: bool = True, checkpoint: bool = True) -> VacuumReport:
    """VACUUM (``full``: VACUUM FULL) every table a memory's traces live in,
    then CHECKPOINT if allowed. Runs outside any transaction."""
    present = {
        str(r[0]) for r in conn.execute(
            "SELECT relname FROM pg_class WHERE relkind = 'r' AND relname = ANY(%s) "
            "AND relnamespace = current_schema()::regnamespace",
            (list(TABLES),),
        )
    }
    tables = [t for t in TABLES if t in present]
    how = "FULL" if full else "INDEX_CLEANUP AUTO"
    conn.execute(f"VACUUM ({how}) {', '.join(tables)}")
    done = False
    if checkpoint:
        import psycopg

        try:
            conn.execute("CHECKPOINT")
            done = True
        except psycopg.errors.InsufficientPrivilege:
            done = False
    return VacuumReport(len(tables), full, done)
