"""What an erasure takes: its arguments checked, then the memories, files
and archives it selects (:mod:`memex.erase.select`), with every copy.

Step 1 of :mod:`memex.erase.steps`; the vault is reindexed first where a
file written by hand since the last sync could be missed.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from memex.erase.select import Selection, by_id, by_subject, claiming_files, expand, files_to_read, hidden_behind, same_text
from memex.errors import InvalidArgument, MemoryNotFound
from memex.index import scan

if TYPE_CHECKING:
    from memex.vault import Vault


def check_args(
    memory_id: str | None, reason: str, source: str | None, source_ref: str | None, session: str | None
) -> None:
    if not reason or not reason.strip():
        raise InvalidArgument("reason", "say why the memory is erased (the audit log keeps the reason, never the text)")
    for name, value in (("--source", source), ("--source-ref", source_ref), ("--session", session)):
        if value is not None and not value.strip():
            raise InvalidArgument(name, "must not be empty")
    subject = source is not None or source_ref is not None or session is not None
    if memory_id and subject:
        raise InvalidArgument("ID", "give either a memory id or a subject (--source/--source-ref/--session), not both")
    if not memory_id and not subject:
        raise InvalidArgument("ID", "give a memory id, or a subject with --source-ref or --session")
    if not memory_id and source_ref is None and session is None:
        raise InvalidArgument("--source", "needs --source-ref or --session to name the subject")


def select(
    vault: Vault, memory_id: str | None, source: str | None, source_ref: str | None, session: str | None,
    with_superseded: bool = False,
) -> Selection:
    store = vault.local_store
    if memory_id:
        try:
            start = by_id(store, memory_id)
        except MemoryNotFound:
            vault.reindex()  # a file written by hand since the last sync
            try:
                start = by_id(store, memory_id)
            except MemoryNotFound:
                start = []  # not indexed: maybe a restored file the index refused
        sel = expand(store, vault.root, start, follow_derived=False)
        if not start:
            _only_shared(vault, sel, memory_id)
    else:
        # Files edited or added while nothing was watching must be seen too.
        vault.reindex()
        start = by_subject(store, source, source_ref, session)
        if not start and source_ref:
            for ref in _import_refs(source_ref):
                start = by_subject(store, source, ref, session)
                if start:
                    source_ref = ref
                    break
        sel = expand(store, vault.root, start, follow_derived=True, session=session)
    if with_superseded:
        hidden_behind(store, sel)
    _add_copies(vault, sel, [memory_id] if memory_id else [])
    if memory_id and not sel.memories and not sel.files:
        raise MemoryNotFound(memory_id)
    if not memory_id and not sel.memories and not sel.archives:
        what = ", ".join(
            f"{k} {v!r}" for k, v in (("source", source), ("source_ref", source_ref), ("session", session)) if v
        )
        raise InvalidArgument("subject", f"nothing to erase: no memory or archive matches {what}")
    return sel


def _import_refs(source_ref: str) -> list[str]:
    """The source_refs `memex import` may have recorded for a file path given
    as it is on disk (docs/import.md): ``memex import CLAUDE.md`` records the
    absolute path, and ``memex import /repo`` records ``/repo#CLAUDE.md#N``
    for the repository's CLAUDE.md (found from outside: `--source-ref
    CLAUDE.md` and `--source-ref /repo/CLAUDE.md` both answered "nothing to
    erase" after a folder import). Nearest folder first."""
    head, sep, anchor = source_ref.partition("#")
    local = Path(head).expanduser() if head else None
    if local is None or not local.exists():
        return []
    path = local.resolve()
    refs = [str(path) + sep + anchor] if str(path) != head else []
    for folder in path.parents:
        refs.append(f"{folder}#{path.relative_to(folder).as_posix()}{sep}{anchor}")
    return refs


def _only_shared(vault: Vault, sel: Selection, memory_id: str) -> None:
    """A memory only a shared index holds (another clone added it; git has
    not brought its file here): erased by id there, its body remembered
    here. Its rowid is the shared index's, which names nothing in this
    clone's index: 0, which SQLite never assigns, so the local purge finds
    nothing by it (docs/postgres.md)."""
    if not vault.backend.shared:
        return
    for t in vault.store.targets_by_id(memory_id):
        sel.memories[t.id] = t._replace(rowid=0)


def _add_copies(vault: Vault, sel: Selection, ids: list[str]) -> None:
    """Every copy of what is erased (docs/forgetting.md; see memex.erase.select)."""
    walked = scan.walk(vault.root)  # the indexer's walk, without loading the model
    on_disk = walked.found
    sel.temp_names = walked.temp_names
    indexed = {t.path for t in sel.memories.values()}
    wanted = list(dict.fromkeys([*ids, *sel.memories]))
    unknown = files_to_read(vault.local_store, on_disk, wanted)
    for rel, (memory_id, body) in claiming_files(vault.root, unknown, wanted).items():
        if rel not in indexed:
            sel.files[rel] = body
    bodies = [t.body for t in sel.memories.values()] + list(sel.files.values())
    for t in same_text(vault.local_store, bodies, set(sel.memories)):
        sel.memories[t.id] = t
        sel.copies.append(t.id)
