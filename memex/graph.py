"""Entities and relations derived from memory files.

A memory names entities in frontmatter (``entities: [SQLite, FTS5]``) and as
``[[wikilinks]]`` in its body, and relations as ``relations: [[subject,
predicate, object], ...]``. Entities are matched case-insensitively after
Unicode normalization, so "SQLite" in two memories is one entity.

Index rows are written by :func:`write_links` and removed by
:func:`unlink_memory`, which also drops entities and relations that no
memory supports any more (relations first, then entities).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import apsw

from memex.text import normalize

_WIKILINK = re.compile(r"\[\[([^\[\]|#\n]{1,200})(?:[#|][^\[\]\n]*)?\]\]")


@dataclass(frozen=True)
class Relation:
    subject: str
    predicate: str
    object: str


def entity_key(name: str) -> str:
    return normalize(name).casefold()


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
    conn: apsw.Connection, memory_rowid: int, entities: list[str], relations: list[Relation]
) -> None:
    """Replace a memory's entity links and relations (inside the caller's transaction)."""
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
