"""Entities and relations derived from memory files.

A memory names entities in frontmatter (``entities: [SQLite, FTS5]``) and as
``[[wikilinks]]`` in its body, and relations as ``relations: [[subject,
predicate, object], ...]``. Entities are matched case-insensitively after
Unicode (NFKC) normalization, so "SQLite" in two memories is one entity.

Index rows are written by :func:`write_links` and removed by
:func:`unlink_memory`, which also drops entities and relations that no
memory supports any more (relations first, then entities).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Any

import apsw

from memex.errors import InvalidArgument
from memex.text import normalize

_WIKILINK = re.compile(r"\[\[([^\[\]|#\n]{1,200})(?:[#|][^\[\]\n]*)?\]\]")


@dataclass(frozen=True)
class Relation:
    subject: str
    predicate: str
    object: str


def entity_key(name: str) -> str:
    # NFKC too: a full-width "ＳＱＬｉｔｅ" (common in CJK text) is the same entity.
    return unicodedata.normalize("NFKC", normalize(name)).casefold()


def extract_entities(meta: dict[str, Any], body: str) -> list[str]:
    """Entity names from frontmatter and wikilinks, first spelling wins."""
    names: dict[str, str] = {}
    raw = meta.get("entities") or []
    if isinstance(raw, str):
        raw = [raw]
    if isinstance(raw, list):
        for item in raw:
            if isinstance(item, (str, int, float)) and normalize(str(item)):
                names.setdefault(entity_key(str(item)), normalize(str(item)))
    for match in _WIKILINK.finditer(body):
        name = normalize(match.group(1))
        if name:
            names.setdefault(entity_key(name), name)
    return list(names.values())


def extract_relations(meta: dict[str, Any]) -> list[Relation]:
    out: list[Relation] = []
    raw = meta.get("relations") or []
    if not isinstance(raw, list):
        return out
    for item in raw:
        if isinstance(item, list) and len(item) == 3 and all(isinstance(x, str) and x.strip() for x in item):
            out.append(Relation(normalize(item[0]), normalize(item[1]), normalize(item[2])))
    return out


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
    entities: list[str],
    relations: list[Relation],
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


# -- reading the graph (``memex entities``, ``memex graph NAME``) ------------


@dataclass
class EntitySummary:
    name: str
    memories: int
    active: int
    relations: int

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "memories": self.memories, "active": self.active, "relations": self.relations}


def list_entities(conn: apsw.Connection) -> list[EntitySummary]:
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
    return [EntitySummary(str(n), int(c), int(a), int(r)) for n, c, a, r in rows]


def entity_graph(conn: apsw.Connection, name: str) -> dict[str, Any]:
    """One entity: the memories naming it, its relations (both ways), its neighbours."""
    key = entity_key(name)
    if not key:
        raise InvalidArgument("NAME", "must not be empty")
    row = conn.execute("SELECT rowid, name FROM entities WHERE key = ?", (key,)).fetchone()
    if row is None:
        raise InvalidArgument("NAME", f"no entity named {name!r} (see `memex entities`)")
    rowid, display = int(row[0]), str(row[1])
    memories = [
        {"id": mid, "scope": scope, "status": status, "body": body}
        for mid, scope, status, body in conn.execute(
            "SELECT m.id, m.scope, m.status, m.body FROM entity_links l JOIN memories m "
            "ON m.rowid = l.memory_rowid WHERE l.entity_rowid = ? ORDER BY m.created DESC, m.id",
            (rowid,),
        )
    ]
    relations = [
        {"subject": s, "predicate": p, "object": o, "memory": mid}
        for s, p, o, mid in conn.execute(
            "SELECT es.name, r.predicate, eo.name, m.id FROM relations r "
            "JOIN entities es ON es.rowid = r.subject_rowid JOIN entities eo ON eo.rowid = r.object_rowid "
            "JOIN memories m ON m.rowid = r.memory_rowid "
            "WHERE r.subject_rowid = ? OR r.object_rowid = ? ORDER BY es.key, r.predicate, eo.key",
            (rowid, rowid),
        )
    ]
    # Neighbours: entities named together with this one in some memory.
    neighbours = [
        {"name": n, "shared_memories": int(c)}
        for n, c in conn.execute(
            "SELECT e.name, count(DISTINCT l2.memory_rowid) FROM entity_links l1 "
            "JOIN entity_links l2 ON l2.memory_rowid = l1.memory_rowid AND l2.entity_rowid != l1.entity_rowid "
            "JOIN entities e ON e.rowid = l2.entity_rowid WHERE l1.entity_rowid = ? "
            "GROUP BY e.rowid ORDER BY 2 DESC, e.key",
            (rowid,),
        )
    ]
    return {"name": display, "memories": memories, "relations": relations, "neighbours": neighbours}
