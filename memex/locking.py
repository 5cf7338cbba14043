"""Inter-process file locks under ``.memex/``.

``write.lock`` serializes the check-then-write of ``add`` (so two processes
adding the same body produce one file); other features take their own named
lock (the watcher takes ``watch.lock`` and holds it while it runs).
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


@contextlib.contextmanager
def file_lock(path: Path, timeout: float = 30.0) -> Iterator[IO[bytes]]:
    """Hold an exclusive lock on ``path``; wait at most ``timeout`` seconds."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle = open(path, "a+b")
    try:
        deadline = time.monotonic() + timeout
        delay = 0.002
        while not _try_lock(handle):
            if time.monotonic() >= deadline:
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
    path.parent.mkdir(parents=True, exist_ok=True)
    handle = open(path, "a+b")
    if _try_lock(handle):
        return handle
    handle.close()
    return None
