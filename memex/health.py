"""How far the index is from the files (doctor, status) and what it holds (stats).

:func:`drift` never trusts a flag: it walks the files and compares them to
the rows, so a report of "clean" means the two agree right now.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from memex.dedup.cjk import cosine_trusted
from memex.erased import erased_list, mirror, pending
from memex.distribution import install_hint
from memex.errors import MemexError, MemoryFileError
from memex.files import orphans
from memex.index import scan
from memex.index.scan import is_memory_name
from memex.layout import CONFIG_RELPATH, MEMORIES_DIR
from memex.scopes import normalize as normal_scope
from memex.store import SyncRow
from memex.index.guard import ERASED_REASON, erased_reason, erased_rows

if TYPE_CHECKING:
    from memex.vault import Vault


@dataclass
class Drift:
    missing: list[str] = field(default_factory=list)  # file on disk, no row
    stale: list[str] = field(default_factory=list)  # row older than its file
    orphaned: list[str] = field(default_factory=list)  # row or error row, no file
    unembedded: list[str] = field(default_factory=list)  # row without its vector
    orphan_vectors: int = 0  # vector rows of no memory
    errors: list[dict[str, str]] = field(default_factory=list)
    # Temp files of a killed write (they hold a memory's whole text): --fix removes them.
    temp_files: list[str] = field(default_factory=list)
    # Committed files that git restored older copies of (erased list, audit log):
    # "PATH: N line(s)" this clone wrote that they lack; --fix appends them again.
    behind: list[str] = field(default_factory=list)
    # Erasures a store (an index other clones share) has not taken yet, and what
    # it still holds of them (memex/erased/pending.py); --fix finishes them when it
    # reaches the store, as any command that reaches it does.
    unfinished_erasures: list[str] = field(default_factory=list)

    @property
    def erased_restored(self) -> list[str]:
        """Files whose body was erased (restored from git or a backup): not indexed."""
        return [e["path"] for e in self.errors if e["reason"].startswith(ERASED_REASON)]

    @property
    def differing(self) -> int:
        """Files whose content the index does not reflect right now."""
        return len(self.missing) + len(self.stale) + len(self.orphaned)

    @property
    def clean(self) -> bool:
        return not (
            self.differing or self.unembedded or self.orphan_vectors or self.errors or self.temp_files or self.behind
            or self.unfinished_erasures
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "clean": self.clean,
            "differing": self.differing,
            "missing": self.missing,
            "stale": self.stale,
            "orphaned": self.orphaned,
            "unembedded": self.unembedded,
            "orphan_vectors": self.orphan_vectors,
            "errors": self.errors,
            "temp_files": self.temp_files,
            "behind": self.behind,
            "unfinished_erasures": self.unfinished_erasures,
            "erased_restored": self.erased_restored,
        }


def drift(vault: Vault) -> Drift:
    report = Drift()
    try:
        vault.indexer  # vector tables must match this model before rows are compared
    except MemexError as exc:  # a shared index cannot be reached (the indexer reaches it)
        if not _unfinished(vault, report, str(exc)):
            raise
        return report  # nothing else can be compared; what waits for the server is what to say
    walked = scan.walk(vault.root)
    on_disk = walked.found
    report.errors.extend(walked.errors)
    store = vault.local_store  # this clone's files against this clone's index (docs/postgres.md)
    errors = store.index_errors()
    rows = store.sync_rows()
    want_vectors = vault.embedder is not None
    for rel, st in on_disk.items():
        err = errors.get(rel)
        if err is not None:
            if err.size is None or (err.size == st.st_size and err.mtime_ns == st.st_mtime_ns):
                report.errors.append({"path": rel, "reason": err.reason})
            else:
                report.stale.append(rel)
            continue
        row = rows.get(rel)
        if row is None:
            report.missing.append(rel)
        elif row.size != st.st_size or row.mtime_ns != st.st_mtime_ns:
            report.stale.append(rel)
        elif want_vectors and not row.embedded:
            report.unembedded.append(rel)
    # An error row names its file, and a file's name is its body's first words:
    # one whose file is gone is drift too (a sync drops it).
    walk_refused = {e["path"] for e in walked.errors}
    report.orphaned = sorted(
        {p for p in rows if p not in on_disk} | {p for p in errors if p not in on_disk and p not in walk_refused}
    )
    _name_erased(vault, report)
    for memory_id, rel in erased_rows(store, erased_list.Guard(vault.memex_dir)):  # an index.db from an old backup
        if rel in report.missing or rel in report.stale or any(e["path"] == rel for e in report.errors):
            continue
        report.errors.append({"path": rel, "reason": erased_reason(rel, memory_id)})
    if _shared_unfinished(vault, report):  # erased on another clone; git has not brought the erasure yet
        local = {row.id: rel for rel, row in rows.items() if rel in on_disk}
        for memory_id in sorted(vault.backend.erased_elsewhere(list(local))):
            report.errors.append({"path": local[memory_id], "reason": erased_reason(local[memory_id], memory_id)})
    report.temp_files = orphans.find_orphans(vault.root)
    for copy in _journaled(vault):
        lost = len(copy.lacking())
        if lost:
            report.behind.append(f"{copy.tracked.relative_to(vault.root).as_posix()}: {lost} line(s)")
    report.unembedded += _unembedded_elsewhere(vault, rows, on_disk, report.unembedded)
    report.orphan_vectors = sum(s.orphan_vectors() for s in vault.backend.stores if s.has_vectors())
    return report


def _unembedded_elsewhere(vault: Vault, rows: dict[str, SyncRow], on_disk: Collection[str],
                          known: list[str]) -> list[str]:
    """This clone's files whose rows in a shared index lack their vectors (a sync embeds them)."""
    if vault.embedder is None or len(vault.backend.stores) == 1:
        return []
    ids = {row.id: rel for rel, row in rows.items() if rel in on_disk and rel not in known}
    held = vault.store.embed_state(list(ids))
    return sorted(ids[i] for i, state in held.items() if not state.embedded)


def _unfinished(vault: Vault, report: Drift, why: str) -> bool:
    """Name each erasure the shared index has not taken yet (memex/erased/pending.py); True if any."""
    name = vault.backend.target
    waiting = [] if name is None else pending.outstanding(vault.memex_dir, name)
    for entry in waiting:
        report.unfinished_erasures.append(
            f"erasure of {entry.time}: {pending.describe(entry.target)} still holds id(s) {', '.join(entry.ids)} "
            f"({why}); the next command that reaches the server purges them, reads hide them meanwhile"
        )
    return bool(waiting)


def _shared_unfinished(vault: Vault, report: Drift) -> bool:
    """What a shared index (reaching it finished the erasures journaled for it:
    memex/erased/pending.py) still holds that was erased; False when there is none."""
    backend = vault.backend
    name = backend.target
    if name is None:
        return False
    backend.connect()
    _unfinished(vault, report, "the purge there failed again")
    if backend.local.get_meta(pending.swept_key(name)) != str(_erased_size(vault)):
        listed = pending.listed_rows(backend.store, erased_list.Guard(vault.memex_dir))
        if listed:
            report.unfinished_erasures.append(
                f"{pending.describe(name)} holds {len(listed)} erased memory row(s) ({', '.join(listed)}); "
                "`memex doctor --fix` or `memex reindex` purges them"
            )
    return True


def _erased_size(vault: Vault) -> int:
    guard = erased_list.Guard(vault.memex_dir)
    guard.refresh()
    return guard.size


def _name_erased(vault: Vault, report: Drift) -> None:
    """Move files whose body or id is on the erased list from missing/stale to
    errors: git restored them (docs/forgetting.md), and a sync will refuse
    them, so "missing, --fix repairs it" would be wrong until someone reindexed."""
    if not (report.missing or report.stale):
        return
    guard = erased_list.Guard(vault.memex_dir)
    guard.refresh()
    if not guard.size:
        return  # nothing was ever erased: no file to read
    real_dirs: dict[str, str] = {}
    for listed in (report.missing, report.stale):
        for rel in list(listed):
            try:
                rec = scan.read_record(vault.root, rel, vault.config, real_dirs)
            except (MemoryFileError, OSError):
                continue  # the sync reports what is wrong with it
            if guard.holds(rec.id, rec.body):
                listed.remove(rel)
                report.errors.append({"path": rel, "reason": erased_reason(rel, rec.id)})


def _journaled(vault: Vault) -> tuple[mirror.Mirror, ...]:
    return erased_list.mirror(vault.memex_dir), mirror.audit_log(vault.memex_dir)


def repair(vault: Vault) -> dict[str, Any]:
    """Fix what :func:`drift` found: a sync (which removes orphaned temp files), then stray vector
    rows; and the lines git cut from the erased list and the audit log go back."""
    restored = sum(copy.restore() for copy in _journaled(vault))
    sync = vault.reindex()
    removed_vectors = 0
    for store in vault.backend.stores:
        if store.has_vectors():
            with store.write_txn():
                removed_vectors += store.remove_orphan_vectors()
    return {
        "sync": sync.as_dict(), "orphan_vectors_removed": removed_vectors,
        "temp_files_removed": list(vault.indexer.orphans_removed), "lines_restored": restored,
    }


def stats(vault: Vault) -> dict[str, Any]:
    """What the index the vault answers from holds (a shared one when configured);
    ``index_bytes`` is this clone's own SQLite file either way."""
    store = vault.store
    held = store.stats()
    by_status = held.by_status
    index_bytes = sum(os.path.getsize(p) for p in (vault.paths.index, vault.paths.index_wal) if p.exists())
    return {
        "vault": str(vault.root),
        "memories": sum(by_status.values()),
        "active": by_status.get("active", 0),
        "superseded": by_status.get("superseded", 0),
        "scopes": held.by_scope,
        "embedded": held.embedded,
        "chunks": held.chunks,
        "entities": held.entities,
        "cached_embeddings": held.cached_embeddings,
        "errors": held.errors,
        "model": vault.embedder_status(),
        "lexical_only": vault.embedder is None,
        "backend": vault.backend.name,
        "schema_version": vault.backend.schema_version(),
        "index_bytes": index_bytes,
    }


def unindexed_hint(vault: Vault) -> str | None:
    """What to tell someone whose search or list came back empty from an empty
    index over memory files (index.db deleted, a fresh clone), so that it does
    not pass as "nothing stored"; None when the index is not the reason.

    ``memex reindex`` is advised only when it would index something: a file
    the index has not refused as it is now. When every file was refused
    (broken front matter, a link out of the vault), a reindex would refuse
    them again: the advice is doctor, which says why."""
    if not vault.store.is_empty():
        return None
    found = scan.walk(vault.root)
    refused = vault.store.index_errors()
    for rel, st in found.found.items():
        was = refused.get(rel)
        if was is None or (was.size, was.mtime_ns) != (st.st_size, st.st_mtime_ns):
            return f"the index holds no memories but {MEMORIES_DIR}/ has files; run `memex reindex`"
    if found.errors or refused:
        return (f"the index holds no memories: every file under {MEMORIES_DIR}/ was refused; "
                "`memex doctor` says why")
    return None


def empty_scope_hint(vault: Vault, scopes: Sequence[str]) -> str | None:
    """What to tell someone whose search or list in ``scopes`` came back empty
    because no memory is in one of them (a typo such as project:shpo passes
    the scope check, being a well-formed scope); None otherwise."""
    held = vault.store.stats().by_scope
    empty = [s for s in dict.fromkeys(scopes) if not held.get(s) and not held.get(normal_scope(s))]
    if not empty:
        return None
    hints = []
    for scope in empty:
        close = difflib.get_close_matches(scope, list(held), n=1, cutoff=0.6)
        hints.append(f"no memory is in scope {scope!r}" + (f"; did you mean {close[0]!r}?" if close else ""))
    return "; ".join(hints) + f" (scopes with memories: {', '.join(sorted(held)) or 'none'})"


# The multilingual hint (docs/models.md, "Which model"): a vault on the
# bundled English model with at least this share, and this many, memories
# mostly in Chinese, Japanese or Korean. MiniLM turns most CJK characters
# into [UNK]: semantic search and dedup of those memories fall back to words.
CJK_HINT_SHARE = 0.05
CJK_HINT_MIN = 3


def model_hint(vault: Vault) -> str | None:
    """Advice to switch to the multilingual model when a vault on the bundled
    English model holds a sizeable share of CJK memories; None otherwise."""
    if vault.config.embedding_model != "auto":
        return None  # multilingual already, turned off, or a model of the user's own
    bodies = vault.local_store.bodies()  # this clone's memories (a shared index may be out of reach)
    cjk = sum(1 for row in bodies if not cosine_trusted(row.body))
    if cjk < CJK_HINT_MIN or cjk < CJK_HINT_SHARE * len(bodies):
        return None
    return (
        f"{cjk} of {len(bodies)} memories are mostly Chinese, Japanese or Korean, which the bundled English "
        f'model cannot read: set [embedding] model = "multilingual" in {CONFIG_RELPATH.as_posix()} '
        f"({install_hint('multilingual')}; then `memex reindex`) for semantic search and dedup in those languages"
    )


def hidden_behind_nothing(vault: Vault) -> list[dict[str, str]]:
    """Superseded memories whose ``superseded_by`` names no memory of the vault
    (the newer one erased or deleted by hand, a typo) or the memory itself:
    hidden from search and recall with nothing shown in their place.
    ``memex unsupersede ID`` shows one again. Sorted by path; none while a
    shared index cannot be reached (doctor says what waits for it instead)."""
    try:
        rows = vault.list(include_superseded=True)
    except MemexError:
        return []
    ids = {hit.id for hit in rows}
    return sorted(
        ({"id": hit.id, "path": hit.path, "superseded_by": hit.superseded_by} for hit in rows
         if hit.superseded_by and (hit.superseded_by == hit.id or hit.superseded_by not in ids)),
        key=lambda h: h["path"],
    )


def config_hints(vault: Vault) -> list[str]:
    """What the vault's settings files say that memex does not use: a
    setting only this machine may set, found in the shared file (ignored:
    memex/config_trust.py), and keys memex does not know (a typo is
    otherwise ignored without a word), named with the nearest known one."""
    return list(vault.config.notices)
