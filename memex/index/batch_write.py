"""The write stage of a sync batch: records, errors and purges, one
transaction per batch.

Inside the transaction the erased list is asked again
(:func:`memex.index.guard.recheck`), so an erasure that lands while a
reindex embeds is honoured; then refused files get their error row (and
lose a stale row: the index must agree with a rebuild), and each record is
written as an add, an update, a move (its id, or its bytes, seen under a
new path) or no change. Vanished files left over at the end of a run are
purged with the one purge (``RecordStore.purge_memory``; docs/design.md, "The
one purge path").
"""

from __future__ import annotations

import os
from pathlib import Path

from memex import text
from memex.embedding import embed
from memex.erased import erased_list
from memex.faults import point
from memex.index import guard, scan
from memex.index.batch_read import Vectors
from memex.index.sync_run import Batch, Run, SyncReport
from memex.records import Record
from memex.store import SCRUB_PENDING, IndexStore, Located, PurgeCounts


class BatchWriter:
    def __init__(self, root: Path, store: IndexStore, erased: erased_list.Guard) -> None:
        self.root = root
        self.store = store
        self.guard = erased
        # Paths with a recorded error (reset by the indexer for each run).
        self.error_paths: set[str] = set()

    def write_batch(
        self,
        item: Batch,
        vectors: dict[str, Vectors],
        cache_rows: list[embed.CacheRow],
        run: Run,
        report: SyncReport,
    ) -> None:
        """Write one batch in one transaction."""
        with self.store.write_txn():
            elsewhere = self.store.erased_ids([rec.id for rec in item.records])
            records, late_errors, cache_rows = guard.recheck(
                self.root, self.guard, item.records, item.plan, cache_rows, elsewhere
            )
            self.store.cache_put(cache_rows)
            late_paths = {rel for rel, _, _ in late_errors}
            for rel, reason, st in [*item.errors, *late_errors]:
                self.record_error(rel, reason, st)
                report.errors.append({"path": rel, "reason": reason})
                stale_row = self.store.sync_row_at(rel) if rel in run.rows or rel in late_paths else None
                if stale_row is not None:
                    # The file no longer reads as a memory: keeping its old row
                    # would make search disagree with a rebuilt index.
                    self.purge_row(stale_row.rowid)
                    report.removed += 1
            for rec in records:
                report.count(self.write(rec, vectors.get(rec.path), run))
            point("index.commit")
        point("index.committed")

    def write(self, rec: Record, vectors: Vectors | None, run: Run) -> str:
        """Upsert one record; returns the report field it counts toward."""
        store = self.store
        if rec.path in self.error_paths:
            self.drop_error(rec.path)
        at_path = store.sync_row_at(rec.path)
        by_own_id = store.rowid_path_of(rec.id)
        outcome = "updated"
        if at_path is not None and at_path.id != rec.id:
            # The file now carries another id: the old memory left this path.
            self.purge_row(at_path.rowid)
            at_path = None
        if by_own_id is not None and by_own_id[1] != rec.path:
            run.vanished.discard(by_own_id[1])
            outcome = "moved"
        elif by_own_id is None:
            outcome = "added"
            moved_from = run.vanished_by_hash.get(rec.file_hash)
            old = store.sync_row_at(moved_from) if moved_from in run.vanished else None
            if old is not None and moved_from is not None:
                # Same bytes under a new path (a hand-written file renamed):
                # the row moves, keeping its vectors and usage.
                store.move_row(old.rowid, old.id, rec.id, rec.path)
                by_own_id = Located(old.rowid, rec.path)
                run.vanished.discard(moved_from)
                outcome = "moved"
        elif at_path is not None and at_path.file_hash == rec.file_hash and vectors is None:
            # `created` too: a file without one is dated by its mtime, as a rebuild would.
            store.touch_row(at_path.rowid, rec)
            return "unchanged"
        store.write_memory(
            None if by_own_id is None else by_own_id[0], rec, text.fts_document(rec.embed_text), vectors
        )
        run.by_id[rec.id] = rec.path
        if run.full and outcome == "updated" and at_path is not None and at_path.file_hash == rec.file_hash:
            # `reindex --full` rewrites every row; a file whose bytes are what
            # the row was built from did not change (docs/cli.md: not "updated 24").
            return "unchanged"
        return outcome

    def purge_vanished(self, run: Run, report: SyncReport) -> None:
        """Purge the rows of files that vanished and did not turn up elsewhere."""
        leftover = sorted(run.vanished)
        if not leftover:
            return
        with self.store.write_txn():
            for rel in leftover:
                row = self.store.sync_row_at(rel)
                # A regular file there now was written after our walk (by
                # another process, which indexes it): not ours to purge.
                if row is not None and not scan.is_regular_file(self.root / rel):
                    self.purge_row(row.rowid)
                    report.removed += 1
                self.drop_error(rel)

    def drop_error(self, rel: str) -> None:
        """Forget a path's error (caller holds the txn). The error of a restored
        erased file names it, and its name is made from the erased text's first
        words: the index is scrubbed of it as of a purged row."""
        gone = self.store.drop_index_error(rel)
        if any(reason.startswith(guard.ERASED_REASON) for reason in gone):
            self.store.set_meta(SCRUB_PENDING, "1")

    def record_error(self, rel: str, reason: str, st: os.stat_result | None) -> None:
        # A path that fails now may be written later in the same run (an id
        # clash retried once the other file is gone): its error row must go then.
        self.error_paths.add(rel)
        self.store.record_index_error(rel, reason, st)

    def purge_row(self, rowid: int) -> PurgeCounts:
        """Purge one memory row and everything derived from it (caller holds the txn)."""
        return self.store.purge_memory(rowid)
