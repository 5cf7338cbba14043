"""The entity graph as the commands read it (``memex entities``, ``memex
graph NAME``).

A memory names entities in frontmatter (``entities: [SQLite, FTS5]``) and as
``[[wikilinks]]`` in its body, and relations as ``relations: [[subject,
predicate, object], ...]``; :mod:`memex.records` reads them out of a file
(matched case-insensitively after Unicode NFKC normalization, so "SQLite" in
two memories is one entity) and :mod:`memex.store.sqlite.entities` writes and
removes their index rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from memex.errors import InvalidArgument
from memex.store import Entity, EntityCount, EntityMemory, EntityNeighbour, EntityRelation
from memex.text import entity_key

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
    :class:`memex.store.protocol.IndexStore`, so any backend's store fits."""

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
