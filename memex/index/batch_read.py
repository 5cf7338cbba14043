"""The read stage of a sync batch: files into checked records, and the
vectors they need.

Each file is read (:func:`memex.index.scan.read_record`) and refused when
it cannot be parsed, when its body or id is on the erased list
(docs/forgetting.md), or when another file on disk holds its id (a ``cp``
or a sync tool's conflict copy: never taken for a move). For the records
left, only texts whose embedding key changed are embedded, and only those
the embedding cache does not hold; the model call itself runs in a worker
thread while the indexer writes the previous batch (:mod:`memex.index.indexer`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from memex.config import Config
from memex.embedding import embed
from memex.erased import erased_list
from memex.errors import MemoryFileError
from memex.index import chunking, guard, scan
from memex.index.sync_run import Batch, Refused, Run
from memex.records import Record
from memex.store import EmbedState, IndexStore, RecordStore

if TYPE_CHECKING:
    import numpy as np

# Body and chunk vectors of one record: (body blob, [(chunk key, chunk blob)]).
Vectors = tuple[bytes, list[tuple[str, bytes]]]


class BatchReader:
    def __init__(
        self,
        root: Path,
        config: Config,
        store: IndexStore,
        erased: erased_list.Guard,
        embedder: embed.Embedder | None,
        chunker: chunking.TokenChunker | chunking.CharChunker,
        borrow: RecordStore | None = None,
    ) -> None:
        self.root = root
        self.config = config
        self.store = store
        self.guard = erased
        self.embedder = embedder
        self.chunker = chunker
        self.borrow = borrow  # a store whose embedding cache is asked before the model

    def parse(self, batch: list[str], on_disk: dict[str, os.stat_result], run: Run) -> tuple[list[Record], list[Refused]]:
        """Read and check a batch of files: the records, and the files that failed."""
        records: list[Record] = []
        errors: list[Refused] = []
        for rel in batch:
            try:
                rec = scan.read_record(self.root, rel, self.config, run.real_dirs)
            except MemoryFileError as exc:
                errors.append((rel, exc.reason, on_disk.get(rel)))
                continue
            except OSError as exc:
                errors.append((rel, f"cannot read: {exc}", on_disk.get(rel)))
                continue
            if self.guard.holds(rec.id, rec.body):
                errors.append((rel, guard.erased_reason(rel, rec.id), on_disk.get(rel)))
                continue
            owner = run.claimed.get(rec.id) or run.by_id.get(rec.id) or self._owner_on_disk(rec.id, rel, run.vanished)
            if owner is not None and owner != rel and owner not in run.vanished:
                # No stat: the clash depends on another file, so retry it every sync.
                run.clashed.append(rel)
                errors.append((
                    rel,
                    f"id {rec.id} is also claimed by {owner} (a copy? delete its id line to give it its own)",
                    None,
                ))
                continue
            run.claimed[rec.id] = rel
            records.append(rec)
        return records, errors

    def _owner_on_disk(self, memory_id: str, rel: str, vanished: set[str]) -> str | None:
        """The indexed path holding ``memory_id`` when its file is still there.

        ``index_paths`` sees only the touched paths' rows: without this, a
        copy (``cp a.md b.md``) would take the id over from a file that
        still holds it, as if it were a move.
        """
        row = self.store.rowid_path_of(memory_id)
        if row is None:
            return None
        path = row[1]
        if path == rel or path in vanished or not scan.is_regular_file(self.root / path):
            return None
        return path

    def vector_plan(
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
        lookup = embed.lookup_cached(self.store, self.embedder, texts)
        if self.borrow is not None and lookup.missing:
            lookup.borrow(self.borrow.cache_get(self.embedder.model_id, list(lookup.missing)))
        return plan, lookup

    def embed_missing(self, lookup: embed.CacheLookup) -> np.ndarray:
        """Runs in the worker thread: the model only, no database."""
        import numpy as np

        assert self.embedder is not None
        if not lookup.missing:
            return np.zeros((0, self.embedder.dim), dtype=np.float32)
        return self.embedder.embed(list(lookup.missing.values()))

    def vectors(self, item: Batch) -> tuple[dict[str, Vectors], list[embed.CacheRow]]:
        """Body and chunk vectors per record path, and the new cache rows."""
        if item.lookup is None:
            return {}, []
        vectors = item.future.result() if item.future is not None else self.embed_missing(item.lookup)
        blobs, cache_rows = item.lookup.complete(vectors)
        out: dict[str, Vectors] = {}
        i = 0
        for rec, pieces in item.plan:
            body_blob = blobs[i]
            chunk_pairs = [(embed.text_key(p), blobs[i + 1 + k]) for k, p in enumerate(pieces)]
            out[rec.path] = (body_blob, chunk_pairs)
            i += 1 + len(pieces)
        return out, cache_rows
