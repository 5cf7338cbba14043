"""Indexing a batch the watcher took: hold back what is half written, then
index the rest under the vault's locks.

A path that vanished with nothing else in its batch waits
``vanish_grace_ms`` before it is purged, so an editor that renames the old
file away before it writes the new one does not drop the memory (and its
usage) in between. Likewise an indexed path that is an empty file right
now (truncate-then-write) is held for up to ``empty_grace_ms``, keeping
the old memory searchable until the real content arrives; a file still
empty after that is indexed as it is.

Indexing takes the vault's ``write.lock``, the lock ``add`` holds while it
checks, writes and indexes; so a memory memex just wrote is seen here as
unchanged, never indexed twice. The model runs before the lock is taken
(docs/write-path.md). One file that crashes the indexer is retried alone
and logged with its path; the others go on (docs/watching.md).
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from memex.adding import vectors_for_files
from memex.errors import LockTimeout
from memex.index import scan
from memex.index.sync_run import SyncReport
from memex.watch import state as watch_state
from memex.watch.pending import Pending
from memex.watch.state import WatchSettings

if TYPE_CHECKING:
    from memex.vault import Vault

log = logging.getLogger("memex.watch.watcher")
# How long one batch waits for write.lock and SQLite before it is requeued.
LOCK_WAIT = 30.0
OUTCOMES = ("added", "updated", "removed", "moved", "unchanged")


class BatchIndexer:
    """Indexes the batches of one watcher and keeps its counts."""

    def __init__(self, vault: Vault, settings: WatchSettings, pending: Pending, heartbeat: Callable[[], None]) -> None:
        self.vault = vault
        self.settings = settings
        self.pending = pending
        self.heartbeat = heartbeat
        self.totals: dict[str, int] = dict.fromkeys((*OUTCOMES, "errors", "failures"), 0)
        self.batches = 0
        self.last_error: dict[str, str] | None = None
        self.empty_since: dict[str, float] = {}  # indexed path seen empty -> since when
        self._warned: dict[str, str] = {}

    def note_error(self, path: str, error: str) -> None:
        self.last_error = {"path": path, "error": error, "at": watch_state.iso(time.time())}

    def flush(self, files: set[str], dirs: set[str], ripe: set[str]) -> None:
        paths = files | ripe
        if dirs:
            paths |= self._expand(dirs)
        fresh = files - ripe
        if fresh and not dirs and not any(os.path.lexists(self.vault.root / p) for p in paths):
            # Only vanished paths: hold them briefly in case an editor is
            # about to put the file back (rename-away-then-write saves).
            self.pending.defer(fresh, time.monotonic() + self.settings.vanish_grace_ms / 1000, keep_earlier=True)
            paths = set(ripe)
        paths -= self._hold_empty(paths)
        if paths:
            self.index(sorted(paths))
            self.batches += 1

    def _hold_empty(self, paths: set[str]) -> set[str]:
        """Indexed paths that are empty files right now and still within their
        grace: they are held (their old row stays) until content arrives."""
        now = time.monotonic()
        grace = self.settings.empty_grace_ms / 1000
        held: set[str] = set()
        for rel in paths:
            if not _is_blank(self.vault.root / rel):
                self.empty_since.pop(rel, None)
                continue
            if not self.vault.local_store.has_path(rel):
                continue  # nothing to protect: index it (the indexer records why it is skipped)
            since = self.empty_since.setdefault(rel, now)
            if now - since < grace:
                held.add(rel)
                self.pending.defer([rel], since + grace)
            else:
                del self.empty_since[rel]
        return held

    def _expand(self, dirs: set[str]) -> set[str]:
        """Every path a moved, created or deleted folder may have touched: files on
        disk below it now, and rows and recorded errors below it in the index."""
        on_disk = scan.walk(self.vault.root).found
        known = self.vault.local_store.known_paths()
        out: set[str] = set()
        for d in dirs:
            prefix = d + "/"
            out.update(p for p in on_disk if p.startswith(prefix))
            out.update(p for p in known if p.startswith(prefix))
        return out

    def _chunks(self, paths: list[str]) -> Iterator[list[str]]:
        size = self.settings.batch_size
        for i in range(0, len(paths), size):
            yield paths[i : i + size]

    def index(self, paths: list[str]) -> None:
        started = time.perf_counter()
        total = SyncReport()
        for chunk in self._chunks(paths):
            try:
                self._count(self._commit_paths(chunk), total)
            except LockTimeout as exc:
                log.warning("%s; will retry %d paths", exc, len(chunk))
                self.pending.requeue(chunk)
                continue
            except Exception:
                # One bad file must not stop the others: retry one by one.
                for rel in chunk:
                    self._index_one(rel, total)
            self.heartbeat()
        if total.removed or self.vault.backend.scrub_pending():
            self._scrub()
        changed = sum(getattr(total, k) for k in ("added", "updated", "removed", "moved"))
        level = logging.INFO if changed else logging.DEBUG
        log.log(level, "indexed %d path(s) in %.0f ms: %s", len(paths), (time.perf_counter() - started) * 1000,
                ", ".join(f"{getattr(total, k)} {k}" for k in OUTCOMES if getattr(total, k)) or "nothing")

    def _commit_paths(self, paths: list[str]) -> SyncReport:
        """Index these paths. The model runs first, with no lock held; then
        write.lock and SQLite are taken together for the short commit
        (docs/write-path.md: waiting for SQLite with write.lock held made
        every ``memex add`` wait too, until it timed out)."""
        rows = vectors_for_files(self.vault, paths)
        with self.vault.commit(timeout=LOCK_WAIT):
            self.vault.local_store.cache_put(rows)
            report: SyncReport = self.vault.indexer.index_paths(paths, verify=True)
            # Vectors of files gone or refused since they were read go again.
            self.vault.local_store.cache_drop_unused({r[1] for r in rows})
        return report

    def _scrub(self) -> None:
        """A deleted file's text must not linger in FTS segments or the WAL
        until the next reconcile: scrub now, as erase and reindex do."""
        try:
            with self.vault.write_lock():
                self.vault.backend.scrub_if_pending()
        except Exception as exc:
            log.error("scrub after removal failed: %s: %s", type(exc).__name__, exc)

    def _index_one(self, rel: str, total: SyncReport) -> None:
        try:
            self._count(self._commit_paths([rel]), total)
        except Exception as exc:
            self.totals["failures"] += 1
            self.note_error(rel, f"{type(exc).__name__}: {exc}")
            log.error("%s: could not be indexed: %s: %s", rel, type(exc).__name__, exc, exc_info=True)

    def _count(self, report: SyncReport, total: SyncReport) -> None:
        for key in OUTCOMES:
            setattr(total, key, getattr(total, key) + getattr(report, key))
            self.totals[key] += getattr(report, key)
        self.totals["errors"] += len(report.errors)
        for err in report.errors:
            path, reason = err["path"], err["reason"]
            if self._warned.get(path) != reason:
                self._warned[path] = reason
                log.warning("%s: not indexed: %s", path, reason)


def _is_blank(path: os.PathLike[str]) -> bool:
    """An empty (or whitespace-only) regular file: a save caught half way."""
    try:
        st = os.stat(path)
        if st.st_size > 4096 or not os.path.isfile(path):
            return False
        with open(path, "rb") as handle:
            return not handle.read(4097).strip()
    except OSError:
        return False
