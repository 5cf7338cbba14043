"""Frontmatter edits of existing memories: one (:func:`update_meta`) or many at once.

Setting ``superseded_by`` (consolidation, supersede, dedup cleanup) or a
category rewrites a memory file with one frontmatter key changed and every
other key and the body kept exactly (memex/files/memory_file.py).

A session's consolidation supersedes dozens of memories. Edited one at a
time, each costs two fsyncs (file and folder) and a write transaction, which
made a 200-memory session take 0.6-1.3 s. :func:`update_meta_many` writes all
the edits with :func:`memory_file.atomic_write_many` (one fsync per file,
one per folder) and re-indexes them in one pass: each file is still either
its old or its new version at any moment, and a later sync agrees with the
files whatever was interrupted (tests/test_fault_kill.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from memex.files import memory_file
from memex.errors import InvalidArgument, MemoryFileError, MemoryNotFound

if TYPE_CHECKING:
    from memex.records import Memory
    from memex.vault import Vault


@dataclass
class MetaBatch:
    """What :func:`update_meta_many` did: ids edited, and ids refused with why."""

    done: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)


def edited_text(vault: Vault, memory_id: str, changes: Mapping[str, Any]) -> tuple[str, str]:
    """(path relative to the vault, new file text) of one memory with ``changes``
    applied: a key set to None is removed, every other key is set."""
    path = vault.row_by_id(memory_id).path
    full = vault.root / path
    mf, _ = memory_file.read_indexed(full, vault.config.max_file_bytes, vault.root)
    if "created" not in mf.meta:
        # A hand-written file is dated by its mtime, which this rewrite
        # changes: keep the date memex showed for it.
        mf.meta["created"] = vault.get(memory_id).record["created"]
    for key, value in changes.items():
        if value is None:
            mf.meta.pop(key, None)
        else:
            mf.meta[key] = value
    mf.has_frontmatter = True
    return str(path), memory_file.serialize(mf)


def update_meta(vault: Vault, memory_id: str, changes: Mapping[str, Any]) -> Memory:
    """Set (or, with None, remove) frontmatter keys of one memory, atomically."""
    path, text = edited_text(vault, memory_id, changes)
    memory_file.atomic_write(vault.root / path, text)
    vault.indexer.index_paths([path])
    return vault.get(memory_id)


def update_meta_many(vault: Vault, changes: Mapping[str, Mapping[str, Any]]) -> MetaBatch:
    """Apply ``{memory id: changes}`` to many memories with one write pass.

    A memory that cannot be edited (erased since the caller looked, its file
    broken or over the size cap, text that cannot be encoded) is left as it
    is and named in ``failed``; the others go through. The caller holds the
    vault's write lock (consolidation does), as for :func:`update_meta`.
    """
    out = MetaBatch()
    writes: dict[str, tuple[str, str]] = {}
    for memory_id, change in changes.items():
        try:
            path, text = edited_text(vault, memory_id, change)
            text.encode("utf-8")  # refused here, per memory, not for the whole batch
        except (MemoryNotFound, MemoryFileError) as exc:
            out.failed[memory_id] = str(exc)
            continue
        except UnicodeEncodeError as exc:
            out.failed[memory_id] = str(InvalidArgument("text", f"not valid Unicode at character {exc.start}"))
            continue
        writes[memory_id] = (path, text)
    if not writes:
        return out
    try:
        memory_file.atomic_write_many([(vault.root / path, text) for path, text in writes.values()])
    finally:
        # After an error some files may be new already: the index follows the
        # files either way (unchanged ones cost a stat).
        vault.indexer.index_paths([path for path, _ in writes.values()])
    out.done = list(writes)
    return out
