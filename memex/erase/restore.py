"""After an erasure: what the erased memories had replaced is shown again.

A memory hidden behind a newer one (its ``superseded_by`` names it: `memex
supersede`, consolidation, `memex dedup`) stays on disk for the day the
newer one goes. When an erasure takes the newer one, the older is the
newest statement left, so it must not stay hidden behind an id that names
nothing (found from outside: `memex supersede A ...` then `memex erase B`
hid A from search and recall for good). Each such memory is pointed at the
newest surviving memory down its chain (erasing the middle of A -> B -> C
leaves A behind C), or, when the chain ends in what was erased, made active
again. Either is an ordinary frontmatter edit (memex/meta_edit.py): the file
first, then the index, and on PostgreSQL the shared index through the
indexer's followers.

``--with-superseded`` erases those memories instead (memex.erase.select.hidden_behind).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from memex.meta_edit import update_meta_many
from memex.store import IndexStore

if TYPE_CHECKING:
    from memex.vault import Vault


@dataclass
class Restored:
    restored: list[str] = field(default_factory=list)  # active again
    relinked: dict[str, str] = field(default_factory=dict)  # still hidden, behind this newer memory
    failed: dict[str, str] = field(default_factory=dict)  # could not be edited: why (doctor names them)


def plan(store: IndexStore, successors: Mapping[str, str | None]) -> dict[str, str | None]:
    """{id: its new ``superseded_by``, None for active again} for every memory
    the index holds behind one of the erased ids (``successors``: erased id ->
    its own ``superseded_by``). Read this clone's index after the purge: the
    erased rows are gone, the ones behind them are not."""
    out: dict[str, str | None] = {}
    for gone in sorted(successors):
        for older in sorted(store.superseded_by(gone)):
            if older not in successors:
                out[older] = _newest(store, older, gone, successors)
    return out


def _newest(store: IndexStore, older: str, gone: str, successors: Mapping[str, str | None]) -> str | None:
    """The first memory down ``older``'s chain that survived and is there; None if none."""
    seen = {older}
    current: str | None = gone
    while current is not None and current in successors:
        if current in seen:  # a hand-made cycle: nothing newer to stand behind
            return None
        seen.add(current)
        current = successors[current]
    if current is None or current in seen or not store.has_id(current):
        return None
    return current


def restore(vault: Vault, successors: Mapping[str, str | None]) -> Restored:
    """Apply :func:`plan` (the caller holds the vault's write lock, as erase does)."""
    changes = plan(vault.local_store, successors)
    out = Restored()
    if not changes:
        return out
    batch = update_meta_many(vault, {i: {"superseded_by": new} for i, new in changes.items()})
    out.failed = batch.failed
    for memory_id in sorted(batch.done):
        new = changes[memory_id]
        if new is None:
            out.restored.append(memory_id)
        else:
            out.relinked[memory_id] = new
    return out
