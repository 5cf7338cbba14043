"""Right to erasure: forget a memory, or a whole subject, with no trace on disk.

The order matters for crash safety (docs/forgetting.md, "Order and crash safety"):

1. choose what to erase (:mod:`memex.erase.choose`, :mod:`memex.erase.select`:
   the memory or subject, what derives from it, the session archives that quote it, every copy:
   files claiming an erased id, memories with the same text);
2. remember the erased bodies as keyed hashes (:mod:`memex.erased.erased_list`), so
   that even if we crash below, nothing re-adds them;
3. delete the files (and temp files killed writes left behind, which may
   hold the text), and write an audit line;
4. one index transaction purges every row (``RecordStore.purge_memory``,
   the same purge a sync does for a vanished file) and rewrites the FTS5
   segments; then the WAL is checkpointed and truncated. A crash between 3
   and 4 leaves rows of missing files, which the next reindex, ``doctor
   --fix`` or watcher start purges and scrubs (``scrub_pending``);
5. report what git history still holds, or rewrite it (``--purge-history``);
6. a final audit line with the counts: ``phase: complete``, or, when a step
   after the deletion fails, ``phase: partial`` naming what remains and how
   it is repaired (the error is raised after that line is written).

Commits serialize with a running reindex through the erased list: it is
written before any file is deleted, and the indexer checks it again inside
each write transaction, so a reindex that read the file before the erasure
cannot put it back; rows it committed before that are found by id and path
inside the purge transaction.

The audit log (``.memex/erasure.log``) is append-only JSON lines holding
time, reason, ids and counts, never text or file names (memory file names
are made from the body's first words).
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memex.erase import git_history
from memex.erased import erased_list, mirror, pending
from memex.files import orphans
from memex.store import IndexStore, PurgeCounts, store_error
from memex.errors import IndexStoreError, InvalidArgument, MemexError, MemoryFileError, MemoryNotFound
from memex.faults import point
from memex.layout import ERASURES_PENDING_NAME, INDEX_NAME, MEMEX_DIR, MEMORIES_DIR, VaultPaths
from memex.erase.restore import restore
from memex.erase.choose import check_args, select
from memex.erase.select import Selection
from memex.files.memory_file import fsync_dir, read
from memex.records import path_id

if TYPE_CHECKING:
    from memex.vault import Vault


@dataclass
class EraseResult:
    erased: list[str] = field(default_factory=list)
    derived: list[str] = field(default_factory=list)
    archives: list[str] = field(default_factory=list)
    superseded: list[str] = field(default_factory=list)  # erased as hidden behind another (with_superseded)
    restored: list[str] = field(default_factory=list)  # what erased ones hid: memex/erase/restore.py
    relinked: dict[str, str] = field(default_factory=dict)
    not_restored: dict[str, str] = field(default_factory=dict)
    files_deleted: int = 0
    counts: PurgeCounts = field(default_factory=PurgeCounts)
    wal_truncated: bool = False
    git: git_history.GitReport = field(default_factory=git_history.GitReport)
    # A shared index's purge and VACUUM, and what it still holds (docs/postgres.md),
    # reported under the name of its database (``shared_name``).
    shared_index: dict[str, Any] | None = None
    shared_name: str = ""

    def as_dict(self) -> dict[str, Any]:
        counts = self.counts.as_dict()
        shared = {} if self.shared_index is None else {self.shared_name: self.shared_index}
        return {
            "erased": self.erased,
            "files_deleted": self.files_deleted,
            **{k: counts[k] for k in ("memories", "fts_rows", "vectors", "chunks", "chunk_vectors")},
            **{k: counts[k] for k in ("cache_entries", "entities", "relations", "usage")},
            "derived": self.derived,
            "superseded": self.superseded,
            "archives": self.archives,
            "restored": self.restored,
            "relinked": self.relinked,
            **({"not_restored": self.not_restored} if self.not_restored else {}),
            "forensic": {"fts_segments_rewritten": True, "wal_truncated": self.wal_truncated},
            "git_history": self.git.status,
            "git": self.git.as_dict(),
            **shared,
        }


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def audit(memex_dir: Path, entry: dict[str, Any]) -> None:
    """Append one JSON line to the erasure log and its git-ignored journal (memex/erased/mirror.py)."""
    mirror.audit_log(memex_dir).append([json.dumps({"time": _now(), **entry}, ensure_ascii=False, sort_keys=True)])


def _bodies(vault: Vault, sel: Selection) -> list[str]:
    """Erased texts: as indexed, and as the file says now if it was edited since."""
    out = [t.body for t in sel.memories.values()] + list(sel.files.values())
    for t in sel.memories.values():
        try:
            mf, _ = read(vault.root / t.path, vault.config.max_file_bytes)
        except MemoryFileError:  # missing or unreadable: nothing more to remember
            continue
        if mf.body != t.body:
            out.append(mf.body)
    return out


def _delete_files(root: Path, rels: list[str]) -> int:
    deleted = 0
    folders: set[Path] = set()
    for rel in rels:
        full = root / rel
        try:
            full.unlink()
        except FileNotFoundError:
            continue
        deleted += 1
        folders.add(full.parent)
    for folder in folders:
        fsync_dir(folder)
    return deleted


def _remove_empty_session_dirs(root: Path, archives: list[str]) -> None:
    base = VaultPaths(root).sessions.resolve()
    for rel in archives:
        folder = (root / rel).parent
        while folder.resolve() != base and base in folder.resolve().parents:
            try:
                folder.rmdir()
            except OSError:
                break
            folder = folder.parent


def _purge_index(vault: Vault, sel: Selection, paths: list[str]) -> PurgeCounts:
    """One transaction: every row of every erased memory, then the FTS rewrite.

    Rows are looked up again by id and by path inside the transaction: a
    reindex that read a file before the erasure may have written its row
    (under the same id, or at the same path) since the selection.
    """
    counts = PurgeCounts()
    store = vault.local_store
    ids = sorted({*sel.memories, *(t.id for t in sel.memories.values())})
    with store.write_txn():
        rowids = {t.rowid for t in sel.memories.values()}
        for memory_id in ids:
            found = store.rowid_path_of(memory_id)
            if found is not None:
                rowids.add(found[0])
        for rel in paths:
            row = store.sync_row_at(rel)
            if row is not None:
                rowids.add(row.rowid)
        for rowid in sorted(rowids):
            counts.add(store.purge_memory(rowid))
        for rel in paths:
            store.drop_index_error(rel)
        _drop_errors_naming(store, paths)
        store.optimize_fts()
    return counts


def _drop_errors_naming(store: IndexStore, paths: list[str]) -> None:
    """Error rows whose path or reason holds an erased file's name (caller holds the txn).

    A memory file's name is made from its text's first words, and copies keep
    it (``note.sync-conflict-1.md``): a clash recorded for a copy since renamed
    away, say, would keep the erased words in the index until the next sync,
    and in the database file after that sync deleted it (only an erasure
    checkpoints at once). Dropping an error row costs a re-read at the next
    sync, which records it again if the file is still there.
    """
    stems = {Path(p).stem for p in paths if p.endswith(".md") and Path(p).stem}
    if not stems:
        return
    stale = [
        path for path, err in store.index_errors().items()
        if any(s in path or s in err.reason for s in stems)
    ]
    for path in stale:
        store.drop_index_error(path)


def _purge_history_only(vault: Vault, memory_id: str, reason: str) -> EraseResult:
    """``--purge-history`` for a memory erased earlier: only git still holds it.

    Its file is found in history by its ``id:`` line; raises MemoryNotFound
    when no commit holds it either.
    """
    try:
        try:
            report = git_history.purge(vault.root, [], [], [memory_id])
        finally:
            erased_list.mirror(vault.memex_dir).restore()  # what the rewrite's reset took (see _finish)
    except Exception as exc:
        audit(vault.memex_dir, {
            "phase": "partial", "reason": reason, "erased": [memory_id],
            "remains": [f"git history: the rewrite failed ({type(exc).__name__}); run the erase again"],
        })
        raise
    if report.status != "purged":
        raise MemoryNotFound(memory_id)
    result = EraseResult(git=report)
    audit(vault.memex_dir, {
        "phase": "history_purged", "reason": reason, "erased": [memory_id],
        "git_history": report.status, "git_commits": len(report.commits),
    })
    return result


def erase(
    vault: Vault,
    memory_id: str | None = None,
    reason: str = "",
    source: str | None = None,
    source_ref: str | None = None,
    session: str | None = None,
    purge_history: bool = False,
    with_superseded: bool = False,
) -> EraseResult:
    """Erase one memory (by id) or a subject; see the module doc for the steps. What an erased
    memory hid (``superseded_by`` it) is shown again, or erased too with ``with_superseded``."""
    check_args(memory_id, reason, source, source_ref, session)
    with vault.write_lock():
        try:
            sel = select(vault, memory_id, source, source_ref, session, with_superseded)
        except MemoryNotFound:
            if not (purge_history and memory_id):
                raise
            return _purge_history_only(vault, memory_id, reason)
        bodies = _bodies(vault, sel)
        mem_paths = [t.path for t in sel.memories.values()] + sorted(sel.files)
        paths = list(dict.fromkeys(mem_paths + sel.archives))
        if purge_history:
            git_history.check_clean(vault.root, paths)  # before anything is deleted
        ids = sorted({*sel.memories, *([memory_id] if memory_id else [])})
        erased_list.remember(vault.memex_dir, bodies, ids)
        # Before any file goes: what the shared store must purge, whether or not it answers now.
        shared = vault.backend.target
        key = None if shared is None else pending.begin(vault.memex_dir, shared, ids)
        point("erase.listed")
        result = EraseResult(erased=ids, derived=list(sel.derived), archives=list(sel.archives),
                             superseded=list(sel.superseded))
        result.files_deleted = _delete_files(vault.root, paths)
        # A write killed half way left its whole text in a temp file.
        found = orphans.orphans_among(vault.root, sel.temp_names)
        found += orphans.find_orphans(vault.root, tuple(f for f in orphans.FOLDERS if f != MEMORIES_DIR))
        temps = orphans.remove_orphans(vault.root, found)
        _remove_empty_session_dirs(vault.root, sel.archives)
        audit(vault.memex_dir, {
            "phase": "files_deleted", "reason": reason, "erased": result.erased,
            "derived": result.derived, "copies": list(sel.copies), "archives": len(sel.archives),
            "files_deleted": result.files_deleted, "temp_files_removed": len(temps),
        })
        point("erase.deleted")
        _finish(vault, result, sel, reason, paths + temps, bodies, ids, purge_history, key)
        # Last, once nothing can fail the erasure itself: an ordinary write (doctor names what it missed).
        shown = restore(vault, {**dict.fromkeys(ids), **{t.id: t.superseded_by for t in sel.memories.values()}})
        result.restored, result.relinked, result.not_restored = shown.restored, shown.relinked, shown.failed
    return result


def _purge_shared(vault: Vault, ids: list[str], key: str) -> dict[str, Any]:
    """The shared store's purge (its rows, then VACUUM), journaled by ``key``: if the
    store cannot be reached or fails half way, the entry stays open, and the next
    process that reaches it finishes it (memex/erased/pending.py)."""
    name = vault.backend.target or ""
    try:
        point("erase.shared")
        report: dict[str, Any] = vault.backend.purge(ids).as_dict()
        point("erase.shared_done")
    except Exception as exc:
        pending.release(key)
        cause = exc if isinstance(exc, MemexError) else store_error(exc)
        if cause is None:
            raise
        raise IndexStoreError(
            f"erased here (the files and this clone's index), but {pending.describe(name)} "
            f"did not take the purge ({cause}); it is journaled in {MEMEX_DIR}/{ERASURES_PENDING_NAME} and runs "
            "at the next command that reaches the server (`memex doctor` names what is left; reads hide it meanwhile)"
        ) from exc
    pending.finish(vault.memex_dir, [key])
    return report


def _finish(
    vault: Vault, result: EraseResult, sel: Selection, reason: str, paths: list[str],
    bodies: list[str], ids: list[str], purge_history: bool, key: str | None,
) -> None:
    """The steps after the files are gone; the audit log ends ``complete`` or ``partial``."""
    done: list[str] = []
    try:
        vault.backend.begin_scrub()  # a kill before the checkpoint: the next sync scrubs
        result.counts = _purge_index(vault, sel, paths)
        done.append("index")
        point("erase.purged")
        result.wal_truncated = vault.backend.end_scrub()
        done.append("wal")
        if key is not None:  # a shared index (docs/postgres.md)
            result.shared_index = _purge_shared(vault, ids, key)
            result.shared_name = vault.backend.name
        done.append("shared")
        if purge_history:
            try:
                result.git = git_history.purge(vault.root, paths, bodies, ids)
            finally:
                # The rewrite reset the work tree: this erasure's lines go back from the journals.
                erased_list.mirror(vault.memex_dir).restore()
                mirror.audit_log(vault.memex_dir).restore()
        else:
            result.git = git_history.history(vault.root, paths, bodies, ids)
        done.append("git")
    except BaseException as exc:
        audit(vault.memex_dir, {
            "phase": "partial", "reason": reason, "erased": result.erased,
            "error": type(exc).__name__, "remains": _remains(done, purge_history),
        })
        raise
    remains = [] if result.wal_truncated else _remains(["index", "git"], purge_history)
    audit(vault.memex_dir, {
        "phase": "complete" if not remains else "partial", "reason": reason, "erased": result.erased,
        "counts": {k: v for k, v in result.as_dict().items() if isinstance(v, int)},
        "wal_truncated": result.wal_truncated, "git_history": result.git.status,
        "git_commits": len(result.git.commits), **({"remains": remains} if remains else {}),
    })


def _remains(done: list[str], purge_history: bool) -> list[str]:
    """What still holds the erased text when the steps in ``done`` are all that finished."""
    out: list[str] = []
    if "index" not in done:
        out.append("index rows (the next reindex, doctor --fix or watcher start purges them)")
    if "wal" not in done:
        out.append(f"{INDEX_NAME}-wal page images (truncated at the next scrub: reindex or doctor --fix)")
    if "shared" not in done:
        out.append(
            "rows in the shared index, if one is configured (journaled: the next command that reaches the "
            f"server purges them; {ERASURES_PENDING_NAME})"
        )
    if "git" not in done:
        out.append(
            "git history: the rewrite did not finish; run the erase again with --purge-history"
            if purge_history else "git history: not checked; run `memex erase ID --purge-history`"
        )
    return out


def allow_files(vault: Vault, paths: list[str]) -> list[str]:
    """``memex reindex --allow-erased PATH``: index these files although their text was erased.

    The deliberate way back for a file (``memex add --allow-erased`` is the
    one for text): the bodies and ids are marked allowed on the erased list (a
    later erasure lists them again) and the files are indexed. Returns the
    vault-relative paths whose text or id had been erased. Paths may be given
    relative to the vault or to the current folder, or absolute.
    """
    rels: list[str] = []
    bodies: dict[str, str] = {}
    ids: dict[str, str] = {}
    root = vault.root.resolve()
    for given in paths:
        full = Path(given) if Path(given).is_absolute() else Path.cwd() / given
        if not full.exists() and (vault.root / given).exists():
            full = vault.root / given
        try:
            rel = full.resolve().relative_to(root).as_posix()
        except ValueError:
            raise InvalidArgument("--allow-erased", f"{given} is not inside the vault {vault.root}") from None
        mf, _ = read(vault.root / rel, vault.config.max_file_bytes, vault.root)
        rels.append(rel)
        bodies[rel] = mf.body
        ids[rel] = str(mf.meta.get("id") or path_id(rel))
    guard = erased_list.Guard(vault.memex_dir)
    guard.refresh()
    allowed = [r for r in rels if guard.holds(ids[r], bodies[r])]
    with vault.write_lock():
        erased_list.allow(vault.memex_dir, [bodies[r] for r in allowed], [ids[r] for r in allowed])
        vault.backend.allow_ids([ids[r] for r in rels])  # the ids every clone refuses (docs/postgres.md)
        audit(vault.memex_dir, {"phase": "allowed_back", "reason": "reindex --allow-erased", "files": len(allowed)})
        vault.indexer.index_paths(rels, verify=True)
    return allowed
