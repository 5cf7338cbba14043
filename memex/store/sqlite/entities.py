"""Entities and relations in the index: ``entities``, ``entity_links``, ``relations``.

What counts as an entity and how names are matched is
:mod:`memex.index.graph`; this module writes a memory's links, removes them
(dropping entities and relations no memory supports any more: relations
first, then entities) and answers ``memex entities`` / ``memex graph NAME``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import apsw

from memex.store.rows import Entity, EntityCount, EntityMemory, EntityRelation
from memex.store.rows import EntityNeighbour as Neighbour

from memex.fields import Relation
from memex.text import entity_key


def _entity_rowid(conn: apsw.Connection, name: str) -> int:
    key = entity_key(name)
    row = conn.execute("SELECT rowid FROM entities WHERE key = ?", (key,)).fetchone()
    if row is not None:
        return int(row[0])
    conn.execute("INSERT INTO entities(key, name) VALUES (?, ?)", (key, name))
    return int(conn.last_insert_rowid())


def write_links(
    conn: apsw.Connection,
    memory_rowid: int,
    entities: Sequence[str],
    relations: Sequence[Relation],
    fresh: bool = False,
) -> None:
    """Replace a memory's entity links and relations (inside the caller's transaction).

    ``fresh``: the row was just inserted, so there is nothing to unlink.
    """
    if not fresh:
        unlink_memory(conn, memory_rowid)
    names = list(entities)
    for rel in relations:
        names.extend([rel.subject, rel.object])
    seen: set[int] = set()
    for name in names:
        rowid = _entity_rowid(conn, name)
        if rowid not in seen:
            seen.add(rowid)
            conn.execute(
                "INSERT OR IGNORE INTO entity_links(entity_rowid, memory_rowid) VALUES (?, ?)",
                (rowid, memory_rowid),
            )
    for rel in relations:
        conn.execute(
            "INSERT INTO relations(subject_rowid, predicate, object_rowid, memory_rowid) VALUES (?, ?, ?, ?)",
            (_entity_rowid(conn, rel.subject), rel.predicate, _entity_rowid(conn, rel.object), memory_rowid),
        )


def unlink_memory(conn: apsw.Connection, memory_rowid: int) -> tuple[int, int]:
    """Remove a memory's links; drop relations and entities left unsupported.

    Returns (relations removed, entities removed).
    """
    linked = [r[0] for r in conn.execute(
        "SELECT entity_rowid FROM entity_links WHERE memory_rowid = ?", (memory_rowid,)
    )]
    relations = conn.execute(
        "DELETE FROM relations WHERE memory_rowid = ? RETURNING rowid", (memory_rowid,)
    ).fetchall()
    conn.execute("DELETE FROM entity_links WHERE memory_rowid = ?", (memory_rowid,))
    removed = 0
    for rowid in linked:
        still = conn.execute(
            "SELECT 1 FROM entity_links WHERE entity_rowid = ? LIMIT 1", (rowid,)
        ).fetchone()
        if still is None:
            conn.execute(
                "DELETE FROM relations WHERE subject_rowid = ? OR object_rowid = ?", (rowid, rowid)
            )
            conn.execute("DELETE FROM entities WHERE rowid = ?", (rowid,))
            removed += 1
    return len(relations), removed


def entity_counts(conn: apsw.Connection) -> list[EntityCount]:
    """Every entity, most-mentioned first; one row per entity however many memories name it."""
    rows: list[Any] = conn.execute(
        """
        SELECT e.name,
               count(DISTINCT l.memory_rowid),
               count(DISTINCT CASE WHEN m.status = 'active' THEN l.memory_rowid END),
               (SELECT count(*) FROM relations r WHERE r.subject_rowid = e.rowid OR r.object_rowid = e.rowid)
        FROM entities e
        LEFT JOIN entity_links l ON l.entity_rowid = e.rowid
        LEFT JOIN memories m ON m.rowid = l.memory_rowid
        GROUP BY e.rowid
        ORDER BY 2 DESC, e.key
        """
    ).fetchall()
    return [EntityCount(str(n), int(c), int(a), int(r)) for n, c, a, r in rows]


def find_entity(conn: apsw.Connection, key: str) -> Entity | None:
    """The rowid and display name of the entity with this key."""
    row = conn.execute("SELECT rowid, name FROM entities WHERE key = ?", (key,)).fetchone()
    return None if row is None else Entity(int(row[0]), str(row[1]))


def entity_memories(conn: apsw.Connection, entity_rowid: int) -> list[EntityMemory]:
    """The memories naming an entity, newest first."""
    return [
        EntityMemory(str(mid), str(scope), str(status), str(body))
        for mid, scope, status, body in conn.execute(
            "SELECT m.id, m.scope, m.status, m.body FROM entity_links l JOIN memories m "
            "ON m.rowid = l.memory_rowid WHERE l.entity_rowid = ? ORDER BY m.created DESC, m.id",
            (entity_rowid,),
        )
    ]


def entity_relations(conn: apsw.Connection, entity_rowid: int) -> list[EntityRelation]:
    """An entity's relations, both ways, with the memory stating each."""
    return [
        EntityRelation(str(s), str(p), str(o), str(mid))
        for s, p, o, mid in conn.execute(
            "SELECT es.name, r.predicate, eo.name, m.id FROM relations r "
            "JOIN entities es ON es.rowid = r.subject_rowid JOIN entities eo ON eo.rowid = r.object_rowid "
            "JOIN memories m ON m.rowid = r.memory_rowid "
            "WHERE r.subject_rowid = ? OR r.object_rowid = ? ORDER BY es.key, r.predicate, eo.key",
            (entity_rowid, entity_rowid),
        )
    ]


def neighbours(conn: apsw.Connection, entity_rowid: int) -> list[Neighbour]:
    """Entities named together with this one in some memory, most shared first."""
    return [
        Neighbour(str(n), int(c))
        for n, c in conn.execute(
            "SELECT e.name, count(DISTINCT l2.memory_rowid) FROM entity_links l1 "
            "JOIN entity_links l2 ON l2.memory_rowid = l1.memory_rowid AND l2.entity_rowid != l1.entity_rowid "
            "JOIN entities e ON e.rowid = l2.entity_rowid WHERE l1.entity_rowid = ? "
            "GROUP BY e.rowid ORDER BY 2 DESC, e.key",
            (entity_rowid,),
        )
    ]
