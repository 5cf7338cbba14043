"""Inter-process file locks under ``.memex/``.

``write.lock`` serializes the short commit of ``add`` (re-check the exact
duplicate, write the file, index it), so two processes adding the same body
produce one file; the slow work (loading the model, embedding, the dedup
pipeline) runs before the lock is taken (docs/write-path.md). Other features
take their own named lock (the watcher takes ``watch.lock`` and holds it
while it runs).

``Backend.commit`` (memex/store/backend.py) takes ``write.lock`` and then
SQLite's write transaction without holding the lock while waiting for SQLite.
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from memex.errors import LockTimeout

if sys.platform == "win32":  # pragma: no cover - exercised on Windows only
    import msvcrt

    def _try_lock(handle: IO[bytes]) -> bool:
        try:
            msvcrt.locking(handle.fileno(), msvcrt.LK_NBLCK, 1)
            return True
        except OSError:
            return False

    def _unlock(handle: IO[bytes]) -> None:
        handle.seek(0)
        msvcrt.locking(handle.fileno(), msvcrt.LK_UNLCK, 1)

else:
    import fcntl

    def _try_lock(handle: IO[bytes]) -> bool:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            return False

    def _unlock(handle: IO[bytes]) -> None:
        fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def _open_lock(path: Path) -> IO[bytes]:
    from memex.files.permissions import create_private

    create_private(path)  # made 0600, never readable by others even for a moment
    return open(path, "a+b")


@contextlib.contextmanager
def file_lock(path: Path, timeout: float | None = 30.0) -> Iterator[IO[bytes]]:
    """Hold an exclusive lock on ``path``; wait at most ``timeout`` seconds
    (None: as long as it takes; a lock dies with its holder, so a crashed
    process never leaves one behind)."""
    handle = _open_lock(path)
    try:
        deadline = None if timeout is None else time.monotonic() + timeout
        delay = 0.002
        while not _try_lock(handle):
            if deadline is not None and time.monotonic() >= deadline:
                raise LockTimeout(f"{path}: held by another process for over {timeout:.0f}s")
            time.sleep(delay)
            delay = min(delay * 2, 0.05)
        try:
            yield handle
        finally:
            _unlock(handle)
    finally:
        handle.close()


def try_file_lock(path: Path) -> IO[bytes] | None:
    """Take the lock without waiting; the caller keeps the handle open to hold it."""
    handle = _open_lock(path)
    if _try_lock(handle):
        return handle
    handle.close()
    return None
