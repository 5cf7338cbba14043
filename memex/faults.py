"""Crash points for the fault suite: ``kill -9`` at a named step of a write.

``MEMEX_CRASH_AT=NAME`` (and optionally ``MEMEX_CRASH_NTH=K``, default 1)
makes the K-th pass through :func:`point` ``NAME`` kill the process with
SIGKILL, exactly as ``kill -9`` would: no ``finally`` block, no atexit, no
flush. tests/test_fault_kill.py runs each write (add, reindex, erase,
supersede, consolidate) in a subprocess with each point set, then reopens the vault and
checks that the files and the index agree and that nothing erased is left.

Unset (always, outside that suite) a point costs one comparison.
"""

from __future__ import annotations

import os
import signal

_TARGET = os.environ.get("MEMEX_CRASH_AT") or None
_NTH = int(os.environ.get("MEMEX_CRASH_NTH") or 1)
_seen = 0

# Every point, for the suite to iterate over; see where each is called.
POINTS = (
    "write.temp",  # memory_file.atomic_write: temp file written and fsynced, not renamed yet
    "write.replaced",  # memory_file.atomic_write: renamed over the target, folder not fsynced
    "batch.synced",  # memory_file.atomic_write_many: every temp file written and fsynced, none renamed
    "batch.replaced",  # memory_file.atomic_write_many: one more temp renamed, folders not fsynced
    "index.commit",  # indexer: a batch's write transaction about to commit
    "index.committed",  # indexer: a batch committed
    "erase.listed",  # erase: bodies on the erased list, no file deleted yet
    "erase.deleted",  # erase: files deleted and audited, index not purged
    "erase.purged",  # erase: index purged, WAL not checkpointed
    "erase.shared",  # erase: about to reach the shared (PostgreSQL) index; its purge is journaled
    "erase.shared_txn",  # the PostgreSQL purge (store/postgres/erasure.py): rows deleted, not committed
    "erase.shared_purged",  # the PostgreSQL purge: committed, not vacuumed
    "erase.shared_done",  # erase: the shared index purged and vacuumed, the journal entry not closed
    "supersede.added",  # supersede: the new memory stored, the old one not yet marked
)


def point(name: str) -> None:
    """Die here with SIGKILL if the environment names this point (see module doc)."""
    global _seen
    if _TARGET is None or name != _TARGET:
        return
    _seen += 1
    if _seen == _NTH:
        os.kill(os.getpid(), signal.SIGKILL)
