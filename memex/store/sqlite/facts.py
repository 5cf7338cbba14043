"""SQLite's reader of ranking's facts (:class:`memex.store.facts.Facts`):
the facts of a search's candidates in one statement per batch, so search
ranks without reading or tokenizing a body (docs/search.md). The columns
are kept by memex/store/facts.py's list upkeep; PostgreSQL reads the same
in its own SQL (memex/store/postgres/query.py)."""

from __future__ import annotations

from collections.abc import Sequence

import apsw

from memex.store import density as densities
from memex.store.facts import Facts

_BATCH = 500  # values per IN (...) list


def facts(conn: apsw.Connection, rowids: Sequence[int], density: bool = True) -> dict[int, Facts]:
    """The facts of each of ``rowids`` that is a memory (``density``: read it too)."""
    out: dict[int, Facts] = {}
    wanted = list(dict.fromkeys(rowids))
    for start in range(0, len(wanted), _BATCH):
        part = wanted[start : start + _BATCH]
        dense = densities.densities(conn, part) if density else {}
        for rowid, asks, before, after in conn.execute(
            "SELECT rowid, asks, before_rowid, after_rowid FROM memories "
            f"WHERE rowid IN ({','.join('?' * len(part))})", part,
        ):
            out[int(rowid)] = Facts(bool(asks), None if before is None else int(before),
                                    None if after is None else int(after), dense.get(int(rowid)))
    return out
