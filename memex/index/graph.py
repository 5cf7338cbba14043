"""Entities and relations derived from memory files.

A memory names entities in frontmatter (``entities: [SQLite, FTS5]``) and as
``[[wikilinks]]`` in its body, and relations as ``relations: [[subject,
predicate, object], ...]``. Entities are matched case-insensitively after
Unicode (NFKC) normalization, so "SQLite" in two memories is one entity.

Their index rows are written and removed by :mod:`memex.store.entities`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Protocol

from memex.errors import InvalidArgument
from memex.fields import Relation as Relation  # re-exported: the shape lives in memex.fields
from memex.store.entities import Entity, EntityCount, EntityMemory, EntityRelation
from memex.store.entities import Neighbour as EntityNeighbour
from memex.text import entity_key as entity_key  # re-exported
from memex.text import normalize

_WIKILINK = re.compile(r"\[\[([^\[\]|#\n]{1,200})(?:[#|][^\[\]\n]*)?\]\]")


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


# -- reading the graph (``memex entities``, ``memex graph NAME``) ------------


@dataclass
class EntitySummary:
    name: str
    memories: int
    active: int
    relations: int

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "memories": self.memories, "active": self.active, "relations": self.relations}


class EntityReader(Protocol):
    """What the graph commands ask of the index: the entity operations of
    :class:`memex.store.protocol.IndexStore` (any backend's store). Named
    here, not imported: the store's package imports the records, which
    import this module (tests/test_architecture.py)."""

    def entity_counts(self) -> list[EntityCount]: ...
    def find_entity(self, key: str) -> Entity | None: ...
    def entity_memories(self, entity_rowid: int) -> list[EntityMemory]: ...
    def entity_relations(self, entity_rowid: int) -> list[EntityRelation]: ...
    def neighbours(self, entity_rowid: int) -> list[EntityNeighbour]: ...


def list_entities(store: EntityReader) -> list[EntitySummary]:
    """Every entity, most-mentioned first; one row per entity however many memories name it."""
    return [EntitySummary(*row) for row in store.entity_counts()]


def entity_graph(store: EntityReader, name: str) -> dict[str, Any]:
    """One entity: the memories naming it, its relations (both ways), its neighbours."""
    key = entity_key(name)
    if not key:
        raise InvalidArgument("NAME", "must not be empty")
    found = store.find_entity(key)
    if found is None:
        raise InvalidArgument("NAME", f"no entity named {name!r} (see `memex entities`)")
    rowid, display = found
    return {
        "name": display,
        "memories": [m._asdict() for m in store.entity_memories(rowid)],
        "relations": [r._asdict() for r in store.entity_relations(rowid)],
        "neighbours": [n._asdict() for n in store.neighbours(rowid)],
    }
