"""Keep the derived index in step with the files: one file, some files, all.

:meth:`Indexer.sync` is ``memex reindex``; :meth:`Indexer.index_paths` is what
``add`` (write-through) and the watcher call for the paths they touched. Both
go through :meth:`Indexer._apply`, so a file is indexed the same way whoever
noticed it changed.

A sync compares size and mtime first and reads only files that differ, then
compares the file hash, so a no-change sync reads no file at all (except
files it last read within two seconds of their mtime, whose same-size
rewrite in the same timestamp tick stat could not see: see RACY_NS). Files that
vanished are purged completely (see :mod:`memex.index.purge`); a file that shows up
under a new path with the id or the bytes of a vanished one is a move.
Unreadable files are recorded in ``index_errors`` with their reason and are
not read again until their size or mtime changes.

Two kinds of file are never indexed (docs/forgetting.md, docs/reliability.md):

* a file whose body is on the erased list (:class:`memex.erase.erased_list.Guard`):
  restored from git or a backup, or a sync tool's copy. It is recorded as an
  error naming the way out, and the list is asked again inside the write
  transaction, so an erasure that lands while a reindex embeds is honoured;
* a second file claiming an id another file on disk holds (``cp``, a sync
  conflict copy): an id clash, also when only the copy's path is indexed
  (the watcher), so a copy is never taken for a move.

A sync also removes the temp files that a write killed half way left behind
(:mod:`memex.files.orphans`).
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import apsw
import numpy as np

from memex import text
from memex.index import chunking
from memex.embedding import embed
from memex.erase import erased_list
from memex.index import guard
from memex.files import memory_file
from memex.files import orphans
from memex.embedding import profiles
from memex.index import purge
from memex.config import Config
from memex.store import IndexStore, SqliteStore
from memex.store.memories import EmbedState, ErrorRow, Located
from memex.store.memories import SyncRow as _Row
from memex.errors import MemoryFileError
from memex.faults import point
from memex.layout import MEMEX_DIR, MEMORIES_DIR
from memex.records import BAD_NAME, Record, build_record, is_text_name, shown_name

BATCH = 256
Progress = Callable[[int, int], None]


@dataclass
class SyncReport:
    added: int = 0
    updated: int = 0
    removed: int = 0
    moved: int = 0
    unchanged: int = 0
    embedded: int = 0
    errors: list[dict[str, str]] = field(default_factory=list)
    seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "added": self.added,
            "updated": self.updated,
            "removed": self.removed,
            "moved": self.moved,
            "unchanged": self.unchanged,
            "embedded": self.embedded,
            "errors": self.errors,
            "seconds": round(self.seconds, 3),
        }


def is_memory_name(name: str) -> bool:
    """Markdown files only; hidden, temp, swap and backup files never."""
    return (
        name.endswith(".md")
        and not name.startswith((".", "#", "~"))
        and not name.endswith("~")
    )


def _is_regular_file(path: Path) -> bool:
    return not os.path.islink(path) and os.path.isfile(path)


@dataclass
class _Batch:
    """A batch of files between parsing and writing (see Indexer._apply)."""

    size: int
    records: list[Record]
    errors: list[tuple[str, str, os.stat_result | None]]
    plan: list[tuple[Record, list[str]]]
    lookup: embed.CacheLookup | None
    future: Future[np.ndarray] | None


# Timestamps are as coarse as the kernel's tick on Linux and 1-2 s on HFS+
# and FAT: a file read less than this after its mtime could be rewritten with
# the same size and mtime. Such a row is re-hashed by the next sync (git calls
# these entries "racily clean").
RACY_NS = 2_000_000_000


class Indexer:
    def __init__(
        self, root: Path, conn: apsw.Connection, config: Config, embedder: embed.Embedder | None
    ) -> None:
        self.root = root
        self.conn = conn
        self.store: IndexStore = SqliteStore(conn)
        self.config = config
        self.embedder = embedder
        self._error_paths: set[str] = set()  # paths with a recorded error, per _apply
        self._clashed: list[str] = []  # paths refused for an id clash, per _apply
        self._real_dirs: dict[str, str] = {}  # resolved folders, per _apply (see memory_file.read)
        self.chunker = chunking.for_config(config)
        self.guard = erased_list.Guard(root / MEMEX_DIR)
        self.orphans_removed: list[str] = []  # temp files the last sync removed
        # Called after index_paths (with the paths) and sync (with None): the
        # shared PostgreSQL index follows the files too (docs/postgres.md).
        self.followers: list[Callable[[list[str] | None], None]] = []
        self.temp_names: list[str] = []  # temp-file names the last walk passed
        if embedder is not None:
            self.store.ensure_vectors(embedder.model_id, embedder.dim)
            self.store.ensure_model_profile(profiles.for_model(embedder.model_id).as_meta())
            self.store.ensure_chunk_rule(self.chunker.rule, self.chunker.shortest)

    # -- the file side -------------------------------------------------------

    def walk(self) -> tuple[dict[str, os.stat_result], list[dict[str, str]]]:
        """Every memory file under ``memories/`` with its stat, plus link errors."""
        found: dict[str, os.stat_result] = {}
        errors: list[dict[str, str]] = []
        self.temp_names = []
        base = self.root / MEMORIES_DIR
        root_real = os.path.realpath(self.root)
        base_real = os.path.realpath(base)
        if os.path.islink(base) and os.path.commonpath([root_real, base_real]) != root_real:
            errors.append({"path": MEMORIES_DIR, "reason": "symbolic link points outside the vault; not followed"})
            return found, errors
        for folder, dirs, files in os.walk(base):
            rel_folder = os.path.relpath(folder, self.root).replace(os.sep, "/")
            keep = []
            for d in dirs:
                if d.startswith("."):
                    continue
                if not is_text_name(d):  # its files could not be named in the index either
                    errors.append({"path": shown_name(f"{rel_folder}/{d}"), "reason": f"folder {BAD_NAME}"})
                    continue
                full = os.path.join(folder, d)
                if os.path.islink(full):
                    errors.append({"path": f"{rel_folder}/{d}", "reason": "symbolic link to a folder is not followed"})
                    continue
                keep.append(d)
            dirs[:] = sorted(keep)
            for name in files:
                if not is_memory_name(name):
                    if name.startswith(orphans.PREFIX) and name.endswith(orphans.SUFFIX):
                        self.temp_names.append(f"{rel_folder}/{name}")
                    continue
                if not is_text_name(name):
                    errors.append({"path": shown_name(f"{rel_folder}/{name}"), "reason": f"file {BAD_NAME}"})
                    continue
                full = os.path.join(folder, name)
                rel = f"{rel_folder}/{name}"
                try:
                    # One lstat per file: a no-change sync of 10k files is
                    # mostly these system calls (islink + stat was two).
                    lst = os.lstat(full)
                    if not stat.S_ISLNK(lst.st_mode):
                        found[rel] = lst
                        continue
                    target = os.path.realpath(full)
                    if os.path.commonpath([root_real, target]) != root_real:
                        errors.append({"path": rel, "reason": "symbolic link points outside the vault; not followed"})
                        continue
                    if os.path.commonpath([base_real, target]) == base_real:
                        # Its target is walked too; indexing both would make one memory two.
                        where = os.path.relpath(target, root_real).replace(os.sep, "/")
                        errors.append({"path": rel, "reason": f"symbolic link to {where}, which is indexed itself"})
                        continue
                    found[rel] = os.stat(full)
                except (OSError, ValueError) as exc:
                    errors.append({"path": rel, "reason": f"cannot stat: {exc}"})
        return found, errors

    # -- the index side ------------------------------------------------------

    def _rows(self) -> dict[str, _Row]:
        return self.store.sync_rows()

    def _known_errors(self) -> dict[str, ErrorRow]:
        return self.store.index_errors()

    def sync(self, full: bool = False, progress: Progress | None = None) -> SyncReport:
        """Bring the whole index in line with the files (``memex reindex``)."""
        started = time.perf_counter()
        report = SyncReport()
        # Rows before files: a memory another process adds meanwhile is then
        # either in both or in neither, never a row without a file to purge.
        rows = self._rows()
        known_errors = self._known_errors()
        on_disk, link_errors = self.walk()
        report.errors.extend(link_errors)
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
        vanished = [p for p in rows if p not in on_disk]
        self._apply(sorted(candidates), on_disk, rows, vanished, report, full, progress)
        stale = [p for p in known_errors if p not in on_disk]
        if stale:  # no write transaction (and no write lock) when nothing changed
            with self.store.write_txn():
                for rel in stale:
                    self._drop_error(rel)
        removed, erased_errors = guard.drop_erased_rows(self.store, self.root, self.guard, self._record_error)
        report.removed += removed
        report.errors.extend(erased_errors)
        # Temp files in memories/ were seen by the walk above; sessions/ is walked for them.
        found = orphans.orphans_among(self.root, self.temp_names)
        found += orphans.find_orphans(self.root, tuple(f for f in orphans.FOLDERS if f != MEMORIES_DIR))
        self.orphans_removed = orphans.remove_orphans(self.root, found)
        for follow in self.followers:
            follow(None)
        report.seconds = time.perf_counter() - started
        return report

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
            row = self._row_at(rel)
            if row is not None:
                rows[rel] = row
            if full.is_file() and is_memory_name(full.name) and self._inside(full):
                on_disk[rel] = full.stat()
            elif row is not None:
                vanished.append(rel)
            else:
                with self.store.write_txn():
                    self._drop_error(rel)
        candidates = []
        for rel, st in on_disk.items():
            row = rows.get(rel)
            if not verify and row is not None and row.same_stat(st) and (row.embedded or self.embedder is None):
                report.unchanged += 1
            else:
                candidates.append(rel)
        self._apply(candidates, on_disk, rows, vanished, report, False, None)
        for follow in self.followers:
            follow(relpaths)
        report.seconds = time.perf_counter() - started
        return report

    def _inside(self, full: Path) -> bool:
        root_real = os.path.realpath(self.root)
        return os.path.commonpath([root_real, os.path.realpath(full)]) == root_real

    def _row_at(self, rel: str) -> _Row | None:
        return self.store.sync_row_at(rel)

    # -- the shared path -----------------------------------------------------

    def _read(self, rel: str, st: os.stat_result) -> Record:
        mf, raw = memory_file.read(self.root / rel, self.config.max_file_bytes, self.root, self._real_dirs)
        # Re-stat after reading: the bytes we hold belong to this size/mtime.
        st2 = os.stat(self.root / rel)
        rec = build_record(rel, mf, raw, st2, self.config.default_scope)
        rec.racy = time.time_ns() - st2.st_mtime_ns < RACY_NS
        return rec

    def _apply(
        self,
        candidates: list[str],
        on_disk: dict[str, os.stat_result],
        rows: dict[str, _Row],
        vanished: list[str],
        report: SyncReport,
        full: bool,
        progress: Progress | None,
        retry_clashes: bool = True,
    ) -> None:
        by_id = {row.id: path for path, row in rows.items()}
        self._error_paths = set(self.store.index_errors())
        self.guard.refresh()
        self._clashed = []
        self._real_dirs = {}
        vanished_set = set(vanished)
        vanished_by_hash = {rows[p].file_hash: p for p in vanished}
        claimed: dict[str, str] = {}
        total = len(candidates)
        done = 0
        # A pipeline of one: while the model embeds batch N in a worker thread
        # (onnxruntime releases the GIL), this thread writes batch N-1 and
        # reads and parses batch N+1, so file parsing costs little wall time.
        pending: _Batch | None = None
        pipelined = self.embedder is not None and total > BATCH  # one batch (an add) has nothing to overlap
        pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="memex-embed") if pipelined else None
        try:
            for start in range(0, total, BATCH):
                batch = candidates[start : start + BATCH]
                records, errors = self._parse_batch(batch, on_disk, by_id, vanished_set, claimed)
                plan, lookup = self._vector_plan(records, full)
                future = pool.submit(self._embed_missing, lookup) if pool is not None and lookup else None
                if pending is not None:
                    done += self._finish_batch(pending, rows, report, by_id, vanished_set, vanished_by_hash, full)
                    if progress is not None:
                        progress(done, total)
                pending = _Batch(len(batch), records, errors, plan, lookup, future)
            if pending is not None:
                done += self._finish_batch(pending, rows, report, by_id, vanished_set, vanished_by_hash, full)
                if progress is not None:
                    progress(done, total)
        finally:
            if pool is not None:
                pool.shutdown(wait=True)
        leftover = [p for p in vanished if p in vanished_set]
        if leftover:
            with self.store.write_txn():
                for rel in leftover:
                    row = self._row_at(rel)
                    # A regular file there now was written after our walk (by
                    # another process, which indexes it): not ours to purge.
                    if row is not None and not _is_regular_file(self.root / rel):
                        self.purge_row(row.rowid)
                        report.removed += 1
                    self._drop_error(rel)
        if retry_clashes and self._clashed:
            self._retry_clashes(self._clashed, on_disk, report, full)

    def _retry_clashes(
        self, clashed: list[str], on_disk: dict[str, os.stat_result], report: SyncReport, full: bool
    ) -> None:
        """Once more for files refused for an id clash: the file that held the id
        may itself have been re-read later in this run and given it up (a file
        renamed onto another's path), and a rebuild would index them."""
        retry = SyncReport()
        self._apply(clashed, on_disk, self._rows(), [], retry, full, None, retry_clashes=False)
        still = {e["path"] for e in retry.errors}
        report.errors[:] = [e for e in report.errors if e["path"] not in clashed or e["path"] in still]
        for key in ("added", "updated", "moved", "unchanged", "embedded"):
            setattr(report, key, getattr(report, key) + getattr(retry, key))

    def _parse_batch(
        self,
        batch: list[str],
        on_disk: dict[str, os.stat_result],
        by_id: dict[str, str],
        vanished_set: set[str],
        claimed: dict[str, str],
    ) -> tuple[list[Record], list[tuple[str, str, os.stat_result | None]]]:
        """Read and check a batch of files: the records, and the files that failed."""
        records: list[Record] = []
        errors: list[tuple[str, str, os.stat_result | None]] = []
        for rel in batch:
            try:
                rec = self._read(rel, on_disk[rel])
            except MemoryFileError as exc:
                errors.append((rel, exc.reason, on_disk.get(rel)))
                continue
            except OSError as exc:
                errors.append((rel, f"cannot read: {exc}", on_disk.get(rel)))
                continue
            if self.guard.erased(rec.body) or self.guard.erased_id(rec.id):
                errors.append((rel, guard.erased_reason(rel, rec.id), on_disk.get(rel)))
                continue
            owner = claimed.get(rec.id) or by_id.get(rec.id) or self._owner_on_disk(rec.id, rel, vanished_set)
            if owner is not None and owner != rel and owner not in vanished_set:
                # No stat: the clash depends on another file, so retry it every sync.
                self._clashed.append(rel)
                errors.append((
                    rel,
                    f"id {rec.id} is also claimed by {owner} (a copy? delete its id line to give it its own)",
                    None,
                ))
                continue
            claimed[rec.id] = rel
            records.append(rec)
        return records, errors

    def _owner_on_disk(self, memory_id: str, rel: str, vanished_set: set[str]) -> str | None:
        """The indexed path holding ``memory_id`` when its file is still there.

        ``index_paths`` sees only the touched paths' rows: without this, a
        copy (``cp a.md b.md``) would take the id over from a file that
        still holds it, as if it were a move.
        """
        row = self.store.rowid_path_of(memory_id)
        if row is None:
            return None
        path = row[1]
        if path == rel or path in vanished_set or not _is_regular_file(self.root / path):
            return None
        return path

    def _finish_batch(
        self,
        item: _Batch,
        rows: dict[str, _Row],
        report: SyncReport,
        by_id: dict[str, str],
        vanished_set: set[str],
        vanished_by_hash: dict[str, str],
        full: bool = False,
    ) -> int:
        """Wait for a batch's vectors, then write it in one transaction; returns its size."""
        vectors, cache_rows = self._vector_finish(item)
        report.embedded += len(cache_rows)  # texts the model had to embed
        with self.store.write_txn():
            records, late_errors, cache_rows = guard.recheck(self.root, self.guard, item.records, item.plan, cache_rows)
            self.store.cache_put(cache_rows)
            late_paths = {rel for rel, _, _ in late_errors}
            for rel, reason, st in [*item.errors, *late_errors]:
                self._record_error(rel, reason, st)
                report.errors.append({"path": rel, "reason": reason})
                stale_row = self._row_at(rel) if rel in rows or rel in late_paths else None
                if stale_row is not None:
                    # The file no longer reads as a memory: keeping its old row
                    # would make search disagree with a rebuilt index.
                    self.purge_row(stale_row.rowid)
                    report.removed += 1
            for rec in records:
                outcome = self._write(rec, vectors.get(rec.path), by_id, vanished_set, vanished_by_hash, full)
                setattr(report, outcome, getattr(report, outcome) + 1)
            point("index.commit")
        point("index.committed")
        return item.size

    def _vector_plan(
        self, records: list[Record], full: bool
    ) -> tuple[list[tuple[Record, list[str]]], embed.CacheLookup | None]:
        """Which records need vectors (their embedded text is new), their
        chunks, and what the cache already holds."""
        if self.embedder is None or not records:
            return [], None
        current: dict[str, EmbedState] = {}
        if not full:  # one query per batch, not one per file
            current = self.store.embed_state([rec.id for rec in records])
        wanted: list[Record] = []
        for rec in records:
            have = current.get(rec.id)
            if full or have is None or not have.embedded or have.key != embed.text_key(rec.embed_text):
                wanted.append(rec)
        texts: list[str] = []
        plan: list[tuple[Record, list[str]]] = []
        for rec in wanted:
            pieces = self.chunker(rec.embed_text)
            plan.append((rec, pieces))
            texts.append(rec.embed_text)
            texts.extend(pieces)
        return plan, embed.lookup_cached(self.store, self.embedder, texts)

    def _embed_missing(self, lookup: embed.CacheLookup) -> np.ndarray:
        """Runs in the worker thread: the model only, no database."""
        assert self.embedder is not None
        if not lookup.missing:
            return np.zeros((0, self.embedder.dim), dtype=np.float32)
        return self.embedder.embed(list(lookup.missing.values()))

    def _vector_finish(
        self, item: _Batch
    ) -> tuple[dict[str, tuple[bytes, list[tuple[str, bytes]]]], list[embed.CacheRow]]:
        """Body and chunk vectors per record path, and the new cache rows."""
        if item.lookup is None:
            return {}, []
        vectors = item.future.result() if item.future is not None else self._embed_missing(item.lookup)
        blobs, cache_rows = item.lookup.complete(vectors)
        out: dict[str, tuple[bytes, list[tuple[str, bytes]]]] = {}
        i = 0
        for rec, pieces in item.plan:
            body_blob = blobs[i]
            chunk_pairs = [(embed.text_key(p), blobs[i + 1 + k]) for k, p in enumerate(pieces)]
            out[rec.path] = (body_blob, chunk_pairs)
            i += 1 + len(pieces)
        return out, cache_rows

    def _drop_error(self, rel: str) -> None:
        """Forget a path's error (caller holds the txn). The error of a restored
        erased file names it, and its name is made from the erased text's first
        words: the index is scrubbed of it as of a purged row."""
        gone = self.store.drop_index_error(rel)
        if any(reason.startswith(guard.ERASED_REASON) for reason in gone):
            self.store.set_meta(purge.SCRUB_KEY, "1")

    def _record_error(self, rel: str, reason: str, st: os.stat_result | None) -> None:
        # A path that fails now may be written later in the same run (an id
        # clash retried once the other file is gone): its error row must go then.
        self._error_paths.add(rel)
        self.store.record_index_error(rel, reason, st)

    def _write(
        self,
        rec: Record,
        vectors: tuple[bytes, list[tuple[str, bytes]]] | None,
        by_id: dict[str, str],
        vanished: set[str],
        vanished_by_hash: dict[str, str],
        full: bool = False,
    ) -> str:
        """Upsert one record; returns the report field it counts toward."""
        store = self.store
        if rec.path in self._error_paths:
            self._drop_error(rec.path)
        at_path = self._row_at(rec.path)
        by_own_id = store.rowid_path_of(rec.id)
        outcome = "updated"
        if at_path is not None and at_path.id != rec.id:
            # The file now carries another id: the old memory left this path.
            self.purge_row(at_path.rowid)
            at_path = None
        if by_own_id is not None and by_own_id[1] != rec.path:
            old_path = by_own_id[1]
            vanished.discard(old_path)
            outcome = "moved"
        elif by_own_id is None:
            outcome = "added"
            moved_from = vanished_by_hash.get(rec.file_hash)
            old = self._row_at(moved_from) if moved_from in vanished else None
            if old is not None and moved_from is not None:
                # Same bytes under a new path (a hand-written file renamed):
                # the row moves, keeping its vectors and usage.
                store.move_row(old.rowid, old.id, rec.id, rec.path)
                by_own_id = Located(old.rowid, rec.path)
                vanished.discard(moved_from)
                outcome = "moved"
        elif (
            at_path is not None
            and at_path.file_hash == rec.file_hash
            and vectors is None
        ):
            # `created` too: a file without one is dated by its mtime, as a rebuild would.
            store.touch_row(at_path.rowid, rec)
            return "unchanged"
        store.write_memory(
            None if by_own_id is None else by_own_id[0], rec, text.fts_document(rec.embed_text), vectors
        )
        by_id[rec.id] = rec.path
        if full and outcome == "updated" and at_path is not None and at_path.file_hash == rec.file_hash:
            # `reindex --full` rewrites every row; a file whose bytes are what
            # the row was built from did not change (docs/cli.md: not "updated 24").
            return "unchanged"
        return outcome

    def purge_row(self, rowid: int) -> purge.PurgeCounts:
        """Purge one memory row and everything derived from it (caller holds the txn)."""
        return self.store.purge_memory(rowid)
