"""What one sync run carries between its stages: the report it returns, the
bookkeeping of ids and vanished paths, and a batch between reading and
writing.

A run is one pass of :meth:`memex.index.indexer.Indexer.sync` or
``index_paths`` over the paths that may have changed. Its batches go
through two stages (docs/design.md, "The one write path"):
:mod:`memex.index.batch_read` reads, checks and embeds them,
:mod:`memex.index.batch_write` writes each in one transaction. Both stages
consult the same :class:`Run`, so a file claimed, moved or refused in one
batch is known to the next.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from memex.embedding import embed
from memex.records import Record
from memex.store import SyncRow

if TYPE_CHECKING:
    import numpy as np

Progress = Callable[[int, int], None]
# A path refused while reading, why, and its stat (None: retry it every sync).
Refused = tuple[str, str, os.stat_result | None]


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

    def count(self, outcome: str) -> None:
        setattr(self, outcome, getattr(self, outcome) + 1)


@dataclass
class Run:
    """One run's view of the index rows it started from, and what it changed."""

    rows: dict[str, SyncRow]  # the rows of the paths this run looks at, by path
    full: bool  # `reindex --full`: every row rewritten
    by_id: dict[str, str] = field(default_factory=dict)  # memory id -> the path that holds it now
    vanished: set[str] = field(default_factory=set)  # rows whose file is gone, not (yet) moved
    vanished_by_hash: dict[str, str] = field(default_factory=dict)  # file hash of a vanished row -> its path
    claimed: dict[str, str] = field(default_factory=dict)  # memory id -> the path that claimed it in this run
    clashed: list[str] = field(default_factory=list)  # paths refused for an id clash
    real_dirs: dict[str, str] = field(default_factory=dict)  # resolved folders (see memory_file.read)

    @classmethod
    def start(cls, rows: dict[str, SyncRow], vanished: list[str], full: bool) -> Run:
        return cls(
            rows=rows,
            full=full,
            by_id={row.id: path for path, row in rows.items()},
            vanished=set(vanished),
            vanished_by_hash={rows[p].file_hash: p for p in vanished},
        )


@dataclass
class Batch:
    """A batch of files between reading and writing (see Indexer._apply)."""

    size: int
    records: list[Record]
    errors: list[Refused]
    plan: list[tuple[Record, list[str]]]  # records that need vectors, with their chunks
    lookup: embed.CacheLookup | None
    future: Future[np.ndarray] | None
