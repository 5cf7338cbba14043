"""A vault's files indexed in PostgreSQL: sync, search, erase, decay reads.

:class:`PgVaultIndex` is what the SQLite side's ``Indexer`` + ``search`` +
erasure's purge do, on the PostgreSQL store: it walks ``memories/``, reads
each changed file into the same :class:`memex.records.Record`, embeds
through the shared embedding cache, writes under the write lock, purges
what vanished, and never indexes a body or id on the erased list. Several
vault clones (one per machine) can sync into one database: rows are keyed
by the memory id and the path relative to the vault, which agree across
clones of one vault.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from memex.config import Config
from memex.embedding import embed
from memex.erased import erased_list
from memex.files import memory_file
from memex.index import chunking
from memex.errors import MemoryFileError
from memex.index.scan import RACY_NS, is_memory_name
from memex.index.sync_run import SyncReport
from memex.layout import MEMEX_DIR, MEMORIES_DIR
from memex.records import Record, build_record
from memex.store.postgres import erasure, query, rows, schema
from memex.store.postgres.erasure import PgErasure, erase_vacuum
from memex.store.postgres.connection import PgConnection
from memex.store.postgres.schema import connect

BATCH = 256


class PgVaultIndex:
    def __init__(
        self,
        root: Path,
        config: Config,
        embedder: embed.Embedder | None,
        url: str,
        local_cache: Callable[[str, Sequence[str]], dict[str, bytes]] | None = None,
    ) -> None:
        self.root = root
        self.local_cache = local_cache
        # Checked before anything is written: an erasure must not fail half way on a typo.
        self.erase_full = erase_vacuum(config) == "full"
        self.config = config
        self.embedder = embedder
        self.conn: PgConnection = connect(url)
        self.chunker = chunking.for_config(config)
        self.guard = erased_list.Guard(root / MEMEX_DIR)
        if embedder is not None:
            schema.ensure_vectors(self.conn, embedder.model_id, embedder.dim)

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> PgVaultIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- writing -------------------------------------------------------------

    def _walk(self) -> dict[str, os.stat_result]:
        found: dict[str, os.stat_result] = {}
        base = self.root / MEMORIES_DIR
        for folder, dirs, files in os.walk(base):
            dirs[:] = sorted(d for d in dirs if not d.startswith(".") and not os.path.islink(os.path.join(folder, d)))
            rel_folder = os.path.relpath(folder, self.root).replace(os.sep, "/")
            for name in files:
                full = os.path.join(folder, name)
                if is_memory_name(name) and not os.path.islink(full):
                    found[f"{rel_folder}/{name}"] = os.lstat(full)
        return found

    def sync(self, vanished: Iterable[str] | None = None) -> SyncReport:
        """Bring the index in step with all the files (``memex reindex``).

        ``vanished``: the paths whose files this clone lost (its own index had
        a row for them); only their rows are purged of those whose file is
        not here. Another clone's memory whose file git has not brought here
        yet is not "gone". None: purge every row whose file is not here (an
        index this vault has alone)."""
        return self._sync(self._walk(), None, None if vanished is None else set(vanished))

    def sync_paths(self, relpaths: list[str]) -> SyncReport:
        """Index (or purge) just these paths: what a write or the watcher touched."""
        on_disk: dict[str, os.stat_result] = {}
        for rel in dict.fromkeys(relpaths):
            full = self.root / rel
            if is_memory_name(full.name) and full.is_file() and not full.is_symlink():
                on_disk[rel] = full.stat()
        return self._sync(on_disk, list(dict.fromkeys(relpaths)))

    def follow(self, relpaths: list[str] | None, vanished: list[str]) -> None:
        """What the SQLite indexer calls after it indexed these paths (None: a
        whole sync, which found the files of ``vanished`` gone)."""
        if relpaths is None:
            self.sync(vanished)
        elif relpaths:
            self.sync_paths(relpaths)

    def _sync(
        self, on_disk: dict[str, os.stat_result], only: list[str] | None, vanished: set[str] | None = None
    ) -> SyncReport:
        """Stat first, then the file hash, as the SQLite indexer does (a
        no-change sync reads no file); a file read within RACY_NS of its
        mtime is re-read next time (see memex/index/scan.py)."""
        report = SyncReport()
        self.guard.refresh()
        cols = "rowid, path, file_hash, embedded, size, mtime_ns, racy, id"
        if only is None:
            found = self.conn.execute(f"SELECT {cols} FROM memories")
        else:
            found = self.conn.execute(f"SELECT {cols} FROM memories WHERE path = ANY(%s)", (only,))
        indexed = {str(r[1]): r for r in found}
        records: list[Record] = []
        restat: list[tuple[int, int, int, int]] = []
        stale: list[int] = []
        for rel, st in sorted(on_disk.items()):
            have = indexed.get(rel)
            if have is not None and self.guard.erased_id(str(have[7])):
                # Erased (by id) while its file stayed or came back unchanged: never trust the stat.
                report.errors.append({"path": rel, "reason": "on the erased list; not indexed"})
                stale.append(int(have[0]))
                continue
            vectors_ok = have is not None and (have[3] or self.embedder is None)
            if have is not None and vectors_ok and (have[4], have[5], have[6]) == (st.st_size, st.st_mtime_ns, 0):
                report.unchanged += 1
                continue
            try:
                mf, raw = memory_file.read(self.root / rel, self.config.max_file_bytes, self.root)
                st = os.stat(self.root / rel)
                rec = build_record(rel, mf, raw, st, self.config.default_scope)
            except (MemoryFileError, OSError) as exc:
                report.errors.append({"path": rel, "reason": getattr(exc, "reason", str(exc))})
                continue
            rec.racy = time.time_ns() - st.st_mtime_ns < RACY_NS
            if self.guard.holds(rec.id, rec.body):
                report.errors.append({"path": rel, "reason": "on the erased list; not indexed"})
                if have is not None:  # a row left by an erasure whose PostgreSQL step failed
                    stale.append(int(have[0]))
                continue
            if have is not None and vectors_ok and have[2] == rec.file_hash:
                restat.append((rec.size, rec.mtime_ns, int(rec.racy), int(have[0])))
                report.unchanged += 1
                continue
            records.append(rec)
        records = self._moves(records, indexed, on_disk, vanished, report)
        if restat:
            with self.conn.write_txn(), self.conn.raw.cursor() as cur:
                cur.executemany("UPDATE memories SET size = %s, mtime_ns = %s, racy = %s WHERE rowid = %s", restat)
        for start in range(0, len(records), BATCH):
            self._write(records[start : start + BATCH], report)
        if stale:
            with self.conn.write_txn():
                for rowid in stale:
                    report.removed += rows.purge_memory(self.conn, rowid).memories
        gone = [rel for rel in indexed if rel not in on_disk and (vanished is None or rel in vanished)]
        if gone:
            with self.conn.write_txn():
                # Asked again: a row whose file moved was re-pointed by the writes above.
                for (rowid,) in self.conn.execute(
                    "SELECT rowid FROM memories WHERE path = ANY(%s)", (gone,)
                ).fetchall():
                    if rows.purge_memory(self.conn, int(rowid)).memories:
                        report.removed += 1
        return report

    def _moves(
        self, records: list[Record], indexed: dict[str, Any], on_disk: dict[str, os.stat_result],
        vanished: set[str] | None, report: SyncReport,
    ) -> list[Record]:
        """Files whose bytes are a gone row's under a new path (a hand-written
        file renamed, its id following the path): the row moves, keeping its
        vectors and its recall counts, and takes the record's other columns,
        as the SQLite indexer's ``move_row`` + ``write_memory``."""
        gone = {
            str(row[2]): row for rel, row in indexed.items()
            if rel not in on_disk and (vanished is None or rel in vanished)
        }
        if not gone:
            return records
        rest: list[Record] = []
        with self.conn.write_txn():
            for rec in records:
                old = gone.pop(rec.file_hash, None) if rec.path not in indexed else None
                if old is None or self.conn.execute("SELECT 1 FROM memories WHERE id = %s AND rowid <> %s",
                                                    (rec.id, int(old[0]))).fetchone() is not None:
                    rest.append(rec)
                    continue
                self.conn.execute("UPDATE usage SET memory_id = %s WHERE memory_id = %s", (rec.id, str(old[7])))
                self.conn.execute("UPDATE memories SET id = %s, path = %s WHERE rowid = %s", (rec.id, rec.path, int(old[0])))
                rows.upsert(self.conn, rec, None)  # the rest of the row (a scope read off the new folder)
                report.moved += 1
        return rest

    def _write(self, batch: list[Record], report: SyncReport) -> None:
        vectors: dict[str, rows.Vectors] = {}
        cache_rows: list[embed.CacheRow] = []
        if self.embedder is not None:
            plan = [(rec, self.chunker(rec.embed_text)) for rec in batch]
            texts = [t for rec, pieces in plan for t in (rec.embed_text, *pieces)]
            keys = [embed.text_key(t) for t in texts]
            found = rows.cached(self.conn, self.embedder.model_id, keys)
            local: dict[str, bytes] = {}
            if self.local_cache is not None:
                local = self.local_cache(self.embedder.model_id, [k for k in keys if k not in found])
                found.update(local)
            missing = {k: t for k, t in zip(keys, texts) if k not in found}
            lookup = embed.CacheLookup(self.embedder.model_id, keys, found, missing)
            fresh = self.embedder.embed(list(missing.values())) if missing else None
            blobs, cache_rows = lookup.complete(fresh if fresh is not None else [])  # type: ignore[arg-type]
            report.embedded += len(cache_rows)  # texts the model had to embed
            cache_rows += [(self.embedder.model_id, k, b) for k, b in local.items()]
            i = 0
            for rec, pieces in plan:
                vectors[rec.path] = (blobs[i], [(embed.text_key(p), blobs[i + 1 + k]) for k, p in enumerate(pieces)])
                i += 1 + len(pieces)
        with self.conn.write_txn():
            self.guard.refresh()  # an erasure that landed while we embedded is honoured
            shared = self.erased_ids([rec.id for rec in batch])  # erased by a clone whose erasure git has not brought
            keep = [rec for rec in batch if not self.guard.holds(rec.id, rec.body)
                    and rec.id not in shared]
            for rec in batch:
                if rec.id in shared and not self.guard.holds(rec.id, rec.body):
                    report.errors.append({"path": rec.path, "reason": "erased on another clone; not indexed"})
            dropped: set[str] = set()
            for rec in batch:
                if rec not in keep and rec.path in vectors:
                    dropped.add(embed.text_key(rec.embed_text))
                    dropped.update(k for k, _ in vectors[rec.path][1])
            rows.store_cache(self.conn, [r for r in cache_rows if r[1] not in dropped])
            for rec in keep:
                _, outcome = rows.upsert(self.conn, rec, vectors.get(rec.path))
                setattr(report, outcome, getattr(report, outcome) + 1)

    def erased_ids(self, ids: Sequence[str]) -> set[str]:
        """Which of these ids some clone erased (the shared list, :func:`schema._step_erased_ids`)."""
        return erasure.erased_ids(self.conn, ids)

    def allow_ids(self, ids: Sequence[str]) -> None:
        """``memex reindex --allow-erased``: these ids may be indexed again, from every clone."""
        erasure.allow_ids(self.conn, ids)

    # -- reading -------------------------------------------------------------

    def last_accesses(self, ids: Iterable[str]) -> dict[str, str | None]:
        """The shared ``usage.last_access`` of these memories (what decay reads)."""
        return query.last_accesses(self.conn, ids)

    def record_access(self, ids: list[str], stamp: str) -> None:
        query.record_use(self.conn, ids, stamp)

    def usage(self, memory_id: str) -> tuple[int, str | None]:
        row = self.conn.execute(
            "SELECT access_count, last_access FROM usage WHERE memory_id = %s", (memory_id,)
        ).fetchone()
        return (0, None) if row is None else (int(row[0]), None if row[1] is None else str(row[1]))

    def count(self) -> int:
        return int(self.conn.execute("SELECT count(*) FROM memories").fetchone()[0])

    def get(self, memory_id: str) -> dict[str, Any] | None:
        cur = self.conn.execute(
            "SELECT id, path, scope, source, session, category, confidence, created, status, superseded_by, body "
            "FROM memories WHERE id = %s",
            (memory_id,),
        )
        row = cur.fetchone()
        return None if row is None else dict(zip([d.name for d in cur.description], row))

    # -- erasure -------------------------------------------------------------

    def purge(self, memory_id: str | list[str], vacuum: bool = True, full: bool | None = None) -> PgErasure:
        """Every trace of these memories out of the index, then VACUUM (``full``: VACUUM FULL,
        see :mod:`.forensic`; None: as ``[index] erase_vacuum`` says); the files are the caller's."""
        ids = [memory_id] if isinstance(memory_id, str) else memory_id
        return erasure.purge(self.conn, ids, vacuum=vacuum, full=self.erase_full if full is None else full)
