"""Keep the derived index in step with the files: one file, some files, all.

:meth:`Indexer.sync` is ``memex reindex``; :meth:`Indexer.index_paths` is what
``add`` (write-through) and the watcher call for the paths they touched. Both
go through :meth:`Indexer._apply`, so a file is indexed the same way whoever
noticed it changed.

A sync compares size and mtime first and reads only files that differ, then
compares the file hash, so a no-change sync reads no file at all (except
files it last read within two seconds of their mtime, whose same-size
rewrite in the same timestamp tick stat could not see: see RACY_NS). Files that
vanished are purged completely (``RecordStore.purge_memory``); a file that shows up
under a new path with the id or the bytes of a vanished one is a move.
Unreadable files are recorded in ``index_errors`` with their reason and are
not read again until their size or mtime changes.

Two kinds of file are never indexed (docs/forgetting.md, docs/reliability.md):

* a file whose body is on the erased list (:class:`memex.erased.erased_list.Guard`):
  restored from git or a backup, or a sync tool's copy. It is recorded as an
  error naming the way out, and the list is asked again inside the write
  transaction, so an erasure that lands while a reindex embeds is honoured;
* a second file claiming an id another file on disk holds (``cp``, a sync
  conflict copy): an id clash, also when only the copy's path is indexed
  (the watcher), so a copy is never taken for a move.

A sync also removes the temp files that a write killed half way left behind
(:mod:`memex.files.orphans`).

The same indexer writes every backend's store (docs/design.md, "One seam").
An index that other clones write too (PostgreSQL) follows this clone's own:
the vault gives it an indexer of its own over that store, which
:meth:`Indexer.follow` runs after each sync or ``index_paths`` of the
clone's index, for the same paths; it takes the vectors this clone just
computed from its own cache (``borrow``), purges only the rows of files
this clone lost, and refuses the ids the store says another clone erased
(``RecordStore.erased_ids``).

This module plans a run (which paths may have changed) and drives its
batches; the stages live beside it: the walk and reading one file in
:mod:`memex.index.scan`, reading and embedding a batch in
:mod:`memex.index.batch_read`, writing it in :mod:`memex.index.batch_write`,
and what a run carries between them in :mod:`memex.index.sync_run`.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Collection, Iterable
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from pathlib import Path

from memex.config import Config
from memex.embedding import embed, profiles
from memex.erased import erased_list
from memex.files import orphans
from memex.index import chunking, guard, scan
from memex.index.batch_read import BatchReader
from memex.index.batch_write import BatchWriter
from memex.index.sync_run import Batch, Progress, Run, SyncReport
from memex.layout import MEMEX_DIR, MEMORIES_DIR
from memex.records import BAD_NAME, is_text_name, shown_name
from memex.store import IndexStore, PurgeCounts, RecordStore, SyncRow

BATCH = 256


class Indexer:
    def __init__(
        self, root: Path, store: IndexStore, config: Config, embedder: embed.Embedder | None,
        borrow: RecordStore | None = None,
    ) -> None:
        self.root = root
        # Everything the indexer reads and writes goes through the store, any
        # backend's (docs/store.md).
        self.store = store
        self.config = config
        self.embedder = embedder
        self.chunker = chunking.for_config(config)
        self.guard = erased_list.Guard(root / MEMEX_DIR)
        # ``borrow``: a store whose embedding cache is asked before the model (this
        # clone's own index, which a shared index follows: it just embedded the same texts).
        self.reader = BatchReader(root, config, self.store, self.guard, embedder, self.chunker, borrow)
        self.writer = BatchWriter(root, self.store, self.guard)
        self.orphans_removed: list[str] = []  # temp files the last sync removed
        # Called after index_paths (with the paths) and sync (with None and
        # the paths whose rows lost their file): the ``follow`` of the indexer
        # of an index other clones write too (docs/postgres.md).
        self.followers: list[Callable[[list[str] | None, list[str]], None]] = []
        if embedder is not None:
            self.store.ensure_vectors(embedder.model_id, embedder.dim)
            self.store.ensure_model_profile(profiles.for_model(embedder.model_id).as_meta())
            self.store.ensure_chunk_rule(self.chunker.rule, self.chunker.shortest)

    def sync(
        self, full: bool = False, progress: Progress | None = None, lost: Collection[str] | None = None
    ) -> SyncReport:
        """Bring the whole index in line with the files (``memex reindex``).

        ``lost``: for an index other clones write too, the paths whose files
        this clone lost (its own index had rows for them); of the rows whose
        file is not here only those are purged, since another clone's memory
        whose file git has not brought here yet is not gone. Such a sync
        leaves the clone's own chores (the temp files a killed write left,
        rows kept past an erasure: memex/erased/pending.py ``sweep`` checks
        a shared index against this clone's erased list) to the sync of its
        own index."""
        started = time.perf_counter()
        report = SyncReport()
        # Rows before files: a memory another process adds meanwhile is then
        # either in both or in neither, never a row without a file to purge.
        rows = self.store.sync_rows()
        known_errors = self.store.index_errors()
        walked = scan.walk(self.root)
        on_disk = walked.found
        report.errors.extend(walked.errors)
        need_vectors = self.embedder is not None
        candidates: list[str] = []
        for rel, st in on_disk.items():
            row = rows.get(rel)
            if (
                not full
                and row is not None
                and row.same_stat(st)
                and (row.embedded or not need_vectors)
                and rel not in known_errors
            ):
                report.unchanged += 1
                continue
            err = known_errors.get(rel)
            if not full and err is not None and err.size == st.st_size and err.mtime_ns == st.st_mtime_ns:
                report.errors.append({"path": rel, "reason": err.reason})
                continue
            candidates.append(rel)
        vanished = [p for p in rows if p not in on_disk and (lost is None or p in lost)]
        self._apply(sorted(candidates), on_disk, rows, vanished, report, full, progress)
        stale = [p for p in known_errors if p not in on_disk]
        if stale:  # no write transaction (and no write lock) when nothing changed
            with self.store.write_txn():
                for rel in stale:
                    self.writer.drop_error(rel)
        if lost is None:  # this clone's own index
            removed, erased_errors = guard.drop_erased_rows(self.store, self.root, self.guard, self.writer.record_error)
            report.removed += removed
            report.errors.extend(erased_errors)
            # Temp files in memories/ were seen by the walk above; sessions/ is walked for them.
            found = orphans.orphans_among(self.root, walked.temp_names)
            found += orphans.find_orphans(self.root, tuple(f for f in orphans.FOLDERS if f != MEMORIES_DIR))
            self.orphans_removed = orphans.remove_orphans(self.root, found)
        for follow in self.followers:
            follow(None, vanished)
        report.seconds = time.perf_counter() - started
        return report

    def follow(self, relpaths: list[str] | None, lost: list[str]) -> None:
        """This index (one other clones write too) follows what the clone's own
        indexer just indexed: these paths, or (None) every file, purging of the
        rows whose file is not here only those whose files the clone ``lost``
        (docs/postgres.md, "What is shared and what stays local")."""
        if relpaths is None:
            self.sync(lost=lost)
        elif relpaths:
            self.index_paths(relpaths)

    def drop_erased(self) -> None:
        """Drop the rows an index.db restored from an old backup holds past an
        erasure, before a reader that cannot filter row by row as search does
        (the entity graph's counts and names); free once a sync has checked
        every row against the erased list as it is now."""
        guard.drop_erased_rows(self.store, self.root, self.guard, self.writer.record_error)

    def index_paths(self, relpaths: Iterable[str], verify: bool = False) -> SyncReport:
        """Index (or purge) just these paths, e.g. after a write or a file event.

        ``verify`` reads files whose size and mtime match their row anyway (the
        file hash decides): the watcher uses it because two same-size writes
        within one mtime tick look unchanged by stat alone.
        """
        started = time.perf_counter()
        report = SyncReport()
        on_disk: dict[str, os.stat_result] = {}
        vanished: list[str] = []
        rows = {}
        relpaths = list(dict.fromkeys(relpaths))
        for rel in relpaths:
            if not is_text_name(rel):  # a watcher event for such a file: as a sync reports it
                report.errors.append({"path": shown_name(rel), "reason": f"file {BAD_NAME}"})
                continue
            full = self.root / rel
            row = self.store.sync_row_at(rel)
            if row is not None:
                rows[rel] = row
            refused = scan.refusal(self.root, rel)  # the walk's rule for links: both agree on every path
            if refused is not None:
                report.errors.append({"path": rel, "reason": refused})
            if refused is None and full.is_file() and scan.is_memory_name(full.name) and scan.is_inside(self.root, full):
                on_disk[rel] = full.stat()
            elif row is not None:
                vanished.append(rel)
            else:
                with self.store.write_txn():
                    self.writer.drop_error(rel)
        candidates = []
        for rel, st in on_disk.items():
            row = rows.get(rel)
            if not verify and row is not None and row.same_stat(st) and (row.embedded or self.embedder is None):
                report.unchanged += 1
            else:
                candidates.append(rel)
        if vanished or any(rel in rows for rel in candidates):
            # A file that held an id is gone or changed: the copies refused for
            # clashing with it (error rows without a stat) may take the id now,
            # as the next sync would let them.
            for rel, err in self.store.index_errors().items():
                full = self.root / rel
                if err.size is None and rel not in on_disk and rel not in vanished and scan.is_regular_file(full):
                    on_disk[rel] = full.stat()
                    candidates.append(rel)
        self._apply(candidates, on_disk, rows, vanished, report, False, None)
        for follow in self.followers:
            follow(relpaths, [])
        report.seconds = time.perf_counter() - started
        return report

    def _apply(
        self,
        candidates: list[str],
        on_disk: dict[str, os.stat_result],
        rows: dict[str, SyncRow],
        vanished: list[str],
        report: SyncReport,
        full: bool,
        progress: Progress | None,
        retry_clashes: bool = True,
    ) -> None:
        """Read, embed and write these paths in batches, then purge what vanished."""
        run = Run.start(rows, vanished, full)
        self.writer.error_paths = set(self.store.index_errors())
        self.guard.refresh()
        reader, writer = self.reader, self.writer
        total = len(candidates)
        done = 0
        # A pipeline of one: while the model embeds batch N in a worker thread
        # (onnxruntime releases the GIL), this thread writes batch N-1 and
        # reads and parses batch N+1, so file parsing costs little wall time.
        pending: Batch | None = None
        pipelined = self.embedder is not None and total > BATCH  # one batch (an add) has nothing to overlap
        pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="memex-embed") if pipelined else None

        def finish(item: Batch) -> None:
            nonlocal done
            vectors, cache_rows = reader.vectors(item)
            report.embedded += len(item.lookup.missing) if item.lookup is not None else 0  # texts the model embedded
            writer.write_batch(item, vectors, cache_rows, run, report)
            done += item.size
            if progress is not None:
                progress(done, total)

        # Many files (a cold reindex, a checkout): derived values once, at the end.
        with self.store.bulk_writes() if total > BATCH else nullcontext():
            try:
                for start in range(0, total, BATCH):
                    batch = candidates[start : start + BATCH]
                    records, errors = reader.parse(batch, on_disk, run)
                    plan, lookup = reader.vector_plan(records, full)
                    future = pool.submit(reader.embed_missing, lookup) if pool is not None and lookup else None
                    if pending is not None:
                        finish(pending)
                    pending = Batch(len(batch), records, errors, plan, lookup, future)
                if pending is not None:
                    finish(pending)
            finally:
                if pool is not None:
                    pool.shutdown(wait=True)
            writer.purge_vanished(run, report)
        if retry_clashes and run.clashed:
            self._retry_clashes(run.clashed, on_disk, report, full)

    def _retry_clashes(
        self, clashed: list[str], on_disk: dict[str, os.stat_result], report: SyncReport, full: bool
    ) -> None:
        """Once more for files refused for an id clash: the file that held the id
        may itself have been re-read later in this run and given it up (a file
        renamed onto another's path), and a rebuild would index them."""
        retry = SyncReport()
        self._apply(clashed, on_disk, self.store.sync_rows(), [], retry, full, None, retry_clashes=False)
        still = {e["path"] for e in retry.errors}
        report.errors[:] = [e for e in report.errors if e["path"] not in clashed or e["path"] in still]
        for key in ("added", "updated", "moved", "unchanged", "embedded"):
            setattr(report, key, getattr(report, key) + getattr(retry, key))

    def purge_row(self, rowid: int) -> PurgeCounts:
        """Purge one memory row and everything derived from it (caller holds the txn)."""
        return self.writer.purge_row(rowid)
