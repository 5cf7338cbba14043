"""An erasure's step on the PostgreSQL index: every trace of the memories out
of it, their ids on its own erased list, then VACUUM.

:func:`purge` is what :meth:`memex.store.postgres.backend.SharedBackend.purge`
runs after the clone purged its own index (docs/design.md, "The one purge
path"): in one write transaction, the erased ids go on the index's
``erased_ids`` (ids only, no text, as the audit log keeps them: a clone that
has not pulled the erasure must not index the memory back) and every row
goes through :func:`memex.store.postgres.rows.purge_memory`; then
:func:`memex.store.postgres.forensic.vacuum_purged` VACUUMs what held them.
``[index] erase_vacuum`` chooses plain VACUUM or VACUUM FULL
(docs/postgres.md, "Erasure on PostgreSQL").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from memex.config import CONFIG_RELPATH, Config, setting
from memex.errors import ConfigError
from memex.faults import point
from memex.records import explicit_ids
from memex.store.postgres import forensic, rows
from memex.store.postgres.connection import PgConnection
from memex.store.rows import PurgeCounts

ERASE_VACUUM = ("plain", "full")


def erase_vacuum(config: Config) -> str:
    """``[index] erase_vacuum``: "plain" (VACUUM, fast) or "full" (VACUUM FULL, a clean data folder)."""
    where = f"{CONFIG_RELPATH} [index]"
    value = str(setting(config.section("index"), "erase_vacuum", "plain", where))
    if value not in ERASE_VACUUM:
        raise ConfigError(f"{where}: erase_vacuum must be \"plain\" or \"full\", got {value!r}")
    return value


@dataclass
class PgErasure:
    purged: dict[str, int]
    vacuum: dict[str, object]

    def as_dict(self) -> dict[str, object]:
        return {"purged": self.purged, **self.vacuum, "summary": self.summary()}

    def summary(self) -> str:
        """One line for ``memex erase``: what was purged and how it was vacuumed."""
        if not self.vacuum:
            return f"{self.purged['memories']} row(s) purged, not vacuumed"
        how = "VACUUM FULL" if self.vacuum["full"] else "VACUUM"
        line = f"{self.purged['memories']} row(s) purged, {how} of {self.vacuum['tables']} tables"
        return line + ("" if self.vacuum["checkpoint"] else "; CHECKPOINT not allowed to this role")


def purge(conn: PgConnection, ids: Sequence[str], vacuum: bool = True, full: bool = False) -> PgErasure:
    """Every trace of these memories out of the index, then VACUUM (``full``:
    VACUUM FULL, see :mod:`.forensic`); the files are the caller's."""
    counts = PurgeCounts()
    with conn.write_txn():
        # Ids a file's frontmatter gives (not made from its path, which the next file there would share).
        with conn.raw.cursor() as cur:
            cur.executemany("INSERT INTO erased_ids(id) VALUES (%s) ON CONFLICT DO NOTHING",
                            [(i,) for i in explicit_ids(ids)])
        for (rowid,) in conn.execute("SELECT rowid FROM memories WHERE id = ANY(%s)", (list(ids),)).fetchall():
            counts.add(rows.purge_memory(conn, int(rowid)))
        point("erase.shared_txn")
    point("erase.shared_purged")
    report = forensic.vacuum_purged(conn, full) if vacuum else None
    return PgErasure(counts.as_dict(), report.as_dict() if report else {})


def erased_ids(conn: PgConnection, ids: Sequence[str]) -> set[str]:
    """Which of these ids some clone erased (the index's own list, ``erased_ids``)."""
    if not ids:
        return set()
    return {str(r[0]) for r in conn.execute("SELECT id FROM erased_ids WHERE id = ANY(%s)", (list(ids),))}


def allow_ids(conn: PgConnection, ids: Sequence[str]) -> None:
    """``memex reindex --allow-erased``: these ids may be indexed again, from every clone."""
    if ids:
        with conn.write_txn():
            conn.execute("DELETE FROM erased_ids WHERE id = ANY(%s)", (list(ids),))
