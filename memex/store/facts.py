"""What search needs to know about a memory to rank it, kept by the index: :class:`Facts`.

Each memory row holds whether the memory asks a question (``asks``:
:func:`memex.text.asks_question` of its body, set when the row is written)
and the rowids of the memories just before and just after it in its
session (``before_rowid``, ``after_rowid``): the memories of one
``session`` in the order of ``created``, then id (byte order on both
backends), any status, as a doubly linked list. A memory without a session
has no neighbours. Every write that can move a memory in that order (a new
row; a changed session, ``created`` or id; a purge) takes it out of its list
and puts it back where it belongs (:func:`place`, :func:`unlink`): a few
statements on the index ``memories_session_order``, never a whole session.
The third fact, a memory's density (the mean cosine to its nearest
memories), is kept by :mod:`memex.store.density`; it is read only for a
rule with a hub prior.

Search reads the facts of its candidates in one statement (each backend's
own: memex/store/sqlite/facts.py, memex/store/postgres/query.py), so it
ranks without reading or tokenizing a body (docs/search.md). Both indexes
keep the same columns by the same steps here, each in its own SQL
(:data:`SQLITE`, :data:`POSTGRES`): nothing in this module loads a driver.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, NamedTuple

from memex.text import asks_question

Execute = Callable[..., Any]  # either backend's ``conn.execute(sql, params)``, returning a cursor


class Facts(NamedTuple):
    """Ranking's facts about one memory: does it ask, which rowids are beside
    it, its density (None: not read, or no vector)."""

    asks: bool
    before: int | None
    after: int | None
    density: float | None = None


@dataclass(frozen=True)
class Dialect:
    """The statements that keep the lists, in one backend's SQL."""

    position: str
    previous: str
    following: str
    set_links: str
    set_before: str
    set_after: str
    set_asks: str
    relink: str
    unlink_sessionless: str


def _dialect(mark: str, collate: str) -> Dialect:
    c, i = f"created{collate}", f"id{collate}"
    this = f"({mark}{collate}, {mark}{collate})"
    return Dialect(
        position=f"SELECT session, created, id, before_rowid, after_rowid FROM memories WHERE rowid = {mark}",
        previous=(f"SELECT rowid FROM memories WHERE session = {mark} AND ({c}, {i}) < {this} "
                  f"ORDER BY {c} DESC, {i} DESC LIMIT 1"),
        following=(f"SELECT rowid FROM memories WHERE session = {mark} AND ({c}, {i}) > {this} "
                   f"ORDER BY {c}, {i} LIMIT 1"),
        set_links=f"UPDATE memories SET before_rowid = {mark}, after_rowid = {mark} WHERE rowid = {mark}",
        set_before=f"UPDATE memories SET before_rowid = {mark} WHERE rowid = {mark}",
        set_after=f"UPDATE memories SET after_rowid = {mark} WHERE rowid = {mark}",
        set_asks=f"UPDATE memories SET asks = {mark} WHERE rowid = {mark}",
        relink=(
            "UPDATE memories SET before_rowid = x.b, after_rowid = x.a FROM "
            "(SELECT rowid AS r, LAG(rowid) OVER w AS b, LEAD(rowid) OVER w AS a FROM memories "
            f"WHERE session IS NOT NULL WINDOW w AS (PARTITION BY session ORDER BY {c}, {i})) AS x "
            "WHERE memories.rowid = x.r"
        ),
        unlink_sessionless="UPDATE memories SET before_rowid = NULL, after_rowid = NULL WHERE session IS NULL",
    )


SQLITE = _dialect("?", "")
# PostgreSQL compares text by the database's collation; "C" is SQLite's byte order.
POSTGRES = _dialect("%s", ' COLLATE "C"')


def unlink(execute: Execute, sql: Dialect, rowid: int) -> None:
    """Take ``rowid`` out of its session's list (before it is purged or moved)."""
    row = execute(sql.position, (rowid,)).fetchone()
    if row is None or (row[3] is None and row[4] is None):
        return
    before, after = row[3], row[4]
    if before is not None:
        execute(sql.set_after, (after, before))
    if after is not None:
        execute(sql.set_before, (before, after))
    execute(sql.set_links, (None, None, rowid))


def place(execute: Execute, sql: Dialect, rowid: int) -> None:
    """Put ``rowid`` where its session, ``created`` and id now say (out of where it was first)."""
    unlink(execute, sql, rowid)
    row = execute(sql.position, (rowid,)).fetchone()
    if row is None or row[0] is None:
        return
    session, created, memory_id = row[0], row[1], row[2]
    found = execute(sql.previous, (session, created, memory_id)).fetchone()
    before = None if found is None else int(found[0])
    found = execute(sql.following, (session, created, memory_id)).fetchone()
    after = None if found is None else int(found[0])
    if before is None and after is None:
        return
    execute(sql.set_links, (before, after, rowid))
    if before is not None:
        execute(sql.set_after, (rowid, before))
    if after is not None:
        execute(sql.set_before, (rowid, after))


def written(execute: Execute, sql: Dialect, rowid: int, body: str) -> None:
    """After a memory's row was written: whether it asks, and its place in its session."""
    execute(sql.set_asks, (1 if asks_question(body) else 0, rowid))
    place(execute, sql, rowid)


def relink_all(execute: Execute, sql: Dialect) -> None:
    """Every list computed afresh (a schema step, a bulk load)."""
    execute(sql.unlink_sessionless)
    execute(sql.relink)


def asking(rows: Iterable[tuple[Any, Any]]) -> list[tuple[int, int]]:
    """``(1, rowid)`` for each ``(rowid, body)`` that asks: what a schema step sets."""
    return [(1, int(r)) for r, body in rows if asks_question(str(body))]
