"""Scrub purged rows from the SQLite index file (the purge itself is :mod:`memex.store.sqlite.purge`).

A purge is used when a file disappears (reindex, watcher, doctor) and by erasure, so a
crash between deleting a file and purging its rows is repaired by the next
sync with exactly the purge that erasure would have done.

Deleting rows is not enough to make text unreadable on disk. ``PRAGMA
secure_delete`` (set in :func:`memex.store.sqlite.schema.connect`) zeroes deleted cells and
freed pages, but a contentless FTS5 table keeps a deleted document's terms in
its segment b-tree (only a tombstone marks them dead) until the segments are
merged, and the WAL keeps old page images until a checkpoint. So every purge
marks the index ``scrub_pending``, and :func:`scrub` rewrites the FTS segments
('optimize') and truncates the WAL. Erasure scrubs at once; a sync that
removed rows (reindex, doctor --fix) scrubs through :func:`scrub_if_pending`.

A scrub is two steps (the FTS rewrite commits, then the checkpoint), and a
process killed between them would leave old page images in the WAL with the
flag already cleared. So a marker file beside the index (``index.db-scrub``)
is created before the first step and removed only once the WAL is truncated;
while it exists, the next sync scrubs again.
"""

from __future__ import annotations

import os
from pathlib import Path

import apsw

from memex.store.sqlite.meta import SCRUB_PENDING, get_meta
from memex.store.sqlite.purge import checkpoint, optimize_fts
from memex.store.sqlite.schema import write_txn

__all__ = ["mark_scrub", "scrub", "scrub_done", "scrub_if_pending"]


def _marker(conn: apsw.Connection) -> Path | None:
    name = conn.filename
    return Path(name + "-scrub") if name else None


def mark_scrub(conn: apsw.Connection) -> None:
    """Note, durably and outside the database, that a scrub has begun (see module doc)."""
    marker = _marker(conn)
    if marker is None:
        return
    fd = os.open(marker, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def scrub_done(conn: apsw.Connection) -> None:
    marker = _marker(conn)
    if marker is not None:
        marker.unlink(missing_ok=True)


def scrub(conn: apsw.Connection) -> bool:
    """Make purged rows unrecoverable from index.db and its -wal (see module doc).

    Returns whether the WAL checkpoint completed.
    """
    mark_scrub(conn)
    with write_txn(conn):
        optimize_fts(conn)
    done = checkpoint(conn)
    if done:
        scrub_done(conn)
    return done


def scrub_if_pending(conn: apsw.Connection) -> bool | None:
    """Scrub when a purge happened since the last scrub; None when none was needed."""
    marker = _marker(conn)
    if get_meta(conn, SCRUB_PENDING) is None and not (marker is not None and marker.exists()):
        return None
    return scrub(conn)
