"""After a purge on PostgreSQL: VACUUM what held the rows, and say what remains.

A ``DELETE`` on PostgreSQL only marks a row dead; its bytes stay in the
table's pages, its index entries in the indexes, until ``VACUUM``. So after
a purge :func:`vacuum_purged` vacuums every table that held a trace of the
memory (:data:`memex.store.postgres.schema.TABLES`), with index cleanup, so
the GIN (text), HNSW (vectors) and b-tree entries go too, and then asks for
a ``CHECKPOINT`` (allowed to superusers and members of ``pg_checkpoint``).

What VACUUM cannot reach, measured by a raw-byte scan of the data folder in
``tests/test_pg_forensic.py`` and explained in docs/postgres.md, is in
:data:`RETAINED`: ``memex erase`` prints it when the index is on PostgreSQL.
"""

from __future__ import annotations

from dataclasses import dataclass

from memex.store.postgres.connection import PgConnection
from memex.store.postgres.schema import TABLES

RETAINED = (
    "the index is on PostgreSQL: the rows were deleted and VACUUMed, but PostgreSQL still holds the "
    "text in its write-ahead log (pg_wal) until those segments are recycled after later checkpoints, "
    "and in any base backup, WAL archive or replica of the server; ask its administrator to rotate "
    "them (docs/postgres.md)"
)


@dataclass
class VacuumReport:
    tables: int
    checkpoint: bool  # False: this role may not CHECKPOINT (the WAL is then flushed on the server's schedule)

    def as_dict(self) -> dict[str, object]:
        return {"tables": self.tables, "checkpoint": self.checkpoint, "retained": RETAINED}


def vacuum_purged(conn: PgConnection, checkpoint: bool = True) -> VacuumReport:
    """VACUUM every table a memory's traces live in, then CHECKPOINT if allowed.

    Runs outside any transaction (VACUUM cannot run inside one).
    """
    present = {
        str(r[0]) for r in conn.execute(
            "SELECT relname FROM pg_class WHERE relkind = 'r' AND relname = ANY(%s) "
            "AND relnamespace = current_schema()::regnamespace",
            (list(TABLES),),
        )
    }
    tables = [t for t in TABLES if t in present]
    conn.execute(f"VACUUM (INDEX_CLEANUP ON) {', '.join(tables)}")
    done = False
    if checkpoint:
        import psycopg

        try:
            conn.execute("CHECKPOINT")
            done = True
        except psycopg.errors.InsufficientPrivilege:
            done = False
    return VacuumReport(len(tables), done)
