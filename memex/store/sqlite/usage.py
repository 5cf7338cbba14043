"""Recall counts: ``usage``, one row per memory id that a search or list recalled.

A soft signal kept only in the index (rebuilding the index forgets it):
decay (:mod:`memex.decay`) counts from the last recall, and ``show``
prints the count. Keyed by memory id, so a row survives a reindex that
gives the memory a new rowid; a purge deletes it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import apsw

from memex.store.rows import DecayRow, Usage

_BATCH = 500


def record_use(conn: apsw.Connection, ids: Sequence[str], stamp: str) -> None:
    """Count one recall of each of these memories at ``stamp`` (caller holds the write transaction)."""
    conn.executemany(
        "INSERT INTO usage(memory_id, access_count, last_access) VALUES (?, 1, ?) "
        "ON CONFLICT(memory_id) DO UPDATE SET access_count = access_count + 1, "
        "last_access = excluded.last_access",
        [(i, stamp) for i in ids],
    )


def usage_of(conn: apsw.Connection, memory_id: str) -> Usage:
    row = conn.execute("SELECT access_count, last_access FROM usage WHERE memory_id = ?", (memory_id,)).fetchone()
    return Usage(0, None) if row is None else Usage(int(row[0] or 0), None if row[1] is None else str(row[1]))


def last_accesses(conn: apsw.Connection, ids: Iterable[str]) -> dict[str, str | None]:
    """``usage.last_access`` of these memories (absent ones are left out)."""
    wanted = list(dict.fromkeys(ids))
    out: dict[str, str | None] = {}
    for start in range(0, len(wanted), _BATCH):
        part = wanted[start : start + _BATCH]
        for memory_id, last in conn.execute(
            f"SELECT memory_id, last_access FROM usage WHERE memory_id IN ({','.join('?' * len(part))})",
            part,
        ):
            out[str(memory_id)] = None if last is None else str(last)
    return out


_DECAY = (
    "SELECT m.id, m.scope, m.category, m.confidence, m.created, u.last_access, m.body "
    "FROM memories m LEFT JOIN usage u ON u.memory_id = m.id"
)


def decay_row(conn: apsw.Connection, memory_id: str) -> DecayRow | None:
    row = conn.execute(f"{_DECAY} WHERE m.id = ?", (memory_id,)).fetchone()
    return None if row is None else _decay_row(row)


def active_decay_rows(conn: apsw.Connection, scope: str | None = None) -> list[DecayRow]:
    """Every active memory (of one scope) with its last recall."""
    if scope is None:
        return [_decay_row(r) for r in conn.execute(f"{_DECAY} WHERE m.status = 'active'")]
    return [_decay_row(r) for r in conn.execute(f"{_DECAY} WHERE m.status = 'active' AND m.scope = ?", (scope,))]


def _decay_row(r: Sequence[Any]) -> DecayRow:
    mid, scope, category, conf, created, last, body = r
    return DecayRow(
        str(mid), str(scope), None if category is None else str(category), float(conf),
        str(created), None if last is None else str(last), str(body),
    )
