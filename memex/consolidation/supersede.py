"""Supersede: replace a memory with a newer statement of the fact.

The new memory goes through the ordinary write path (``Vault.add``) with
``supersedes: OLD_ID`` in its frontmatter; the old file then gets
``superseded_by`` and so leaves search (it stays on disk: nothing is lost).
The pipeline never calls the new text a duplicate of the memory it
replaces, and the turn-echo guard does not apply, since superseding is what
that guard tells an agent to do.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from memex.dedup.pipeline import AddResult
from memex.errors import InvalidArgument
from memex.faults import point
from memex.meta_edit import edited_text, update_meta
from memex.text import body_hash

if TYPE_CHECKING:
    from memex.vault import Vault


@dataclass
class SupersedeResult:
    superseded: str  # the old memory's id
    result: AddResult  # the new memory, or the existing one that already says it

    def as_dict(self) -> dict[str, Any]:
        return {**self.result.as_dict(), "superseded": self.superseded}


def supersede(
    vault: Vault,
    old_id: str,
    text: str,
    source: str | None = "user",
    session: str | None = None,
    source_ref: str | None = None,
    category: str | None = None,
    confidence: float | None = None,
    entities: Sequence[str] | None = None,
) -> SupersedeResult:
    """Store ``text`` as the successor of ``old_id`` and retire the old memory.

    Scope and category default to the old memory's. If the new text is
    already stored as another memory, that memory becomes the successor
    (no second copy is written).
    """
    old = vault.get(old_id)  # raises MemoryNotFound
    if old.meta.get("superseded_by"):
        raise InvalidArgument(
            "OLD_ID", f"{old_id} is already superseded by {old.meta['superseded_by']}"
        )
    if body_hash(text) == body_hash(old.body):
        # Found from outside: it wrote a second, identical memory and hid the first.
        raise InvalidArgument("TEXT", f"says what {old_id} already says; a successor states the new fact")
    # The scope the index gave the old memory: a hand-written file's comes
    # from its folder, not its frontmatter. One in no valid scope (a folder
    # doctor reports) leaves the successor to the default scope.
    old_scope = str(old.record.get("scope") or old.meta.get("scope") or "")
    # The old file is marked last: it must be here and readable before the
    # successor is stored (a file moved by hand since the last index; on a
    # shared index, another clone's memory whose file this clone lacks).
    edited_text(vault, old_id, {})
    result = vault.add(
        text,
        scope=old_scope if vault.scope_rules.valid(old_scope) else None,
        source=source,
        session=session,
        source_ref=source_ref,
        category=category if category is not None else old.meta.get("category"),
        confidence=confidence,
        entities=entities,
        supersedes=old_id,
    )
    if result.status == "refused" or not result.id:
        # e.g. the text was erased before: nothing was stored, so nothing replaces old_id.
        raise InvalidArgument("TEXT", f"was refused ({result.method}); {old_id} is unchanged")
    point("supersede.added")
    update_meta(vault, old_id, {"superseded_by": result.id})
    return SupersedeResult(old_id, result)
