"""Helpers for the watcher tests: a real observer in a thread, waiting, checking."""

from __future__ import annotations

import hashlib
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from memex.vault import Vault
from memex.watch.watcher import Watcher, WatchSettings
from tests.fakes import HashEmbedder

# Generous: the machine is shared; the conditions are asserted, not slept on.
TIMEOUT = 10.0


def wait_for(condition: Callable[[], Any], timeout: float = TIMEOUT, what: str = "condition") -> Any:
    """Poll ``condition`` until it is truthy; fail the test if it never is."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(0.02)


@contextmanager
def running_watcher(root: Path, embedder: Any = "fake", **settings: Any) -> Iterator[Watcher]:
    """A real watchdog observer on ``root``, run by a Watcher in a thread.

    The watcher has its own Vault (own connection, own embedder: a fresh fake
    one by default, None for lexical only), as a separate ``memex watch``
    process would.
    """
    opts: dict[str, Any] = {"reconcile_seconds": 3600.0, "heartbeat_seconds": 0.2}
    opts.update(settings)
    vault = Vault(root, embedder=HashEmbedder() if embedder == "fake" else embedder)
    watcher = Watcher(vault, WatchSettings(**opts))
    watcher.start()
    thread = threading.Thread(target=watcher.run, kwargs={"install_signals": False}, daemon=True)
    thread.start()
    try:
        yield watcher
    finally:
        watcher.stop()
        thread.join(TIMEOUT)
        vault.close()
        assert not thread.is_alive(), "the watcher did not stop"


def disk_hashes(root: Path) -> dict[str, str]:
    """sha256 of every memory file on disk, the way the indexer names paths."""
    out: dict[str, str] = {}
    base = root / "memories"
    for folder, dirs, files in os.walk(base):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        for name in files:
            if name.endswith(".md") and not name.startswith((".", "#", "~")) and not name.endswith("~"):
                full = Path(folder) / name
                out[full.relative_to(root).as_posix()] = hashlib.sha256(full.read_bytes()).hexdigest()
    return out


def index_hashes(vault: Vault) -> dict[str, str]:
    return {str(p): str(h) for p, h in vault.backend.conn.execute("SELECT path, file_hash FROM memories")}


def index_matches_disk(vault: Vault) -> bool:
    """Every file on disk has a row with its exact bytes, and no row is left over."""
    return disk_hashes(vault.root) == index_hashes(vault)


def body_at(vault: Vault, rel: str) -> str | None:
    row = vault.backend.conn.execute("SELECT body FROM memories WHERE path = ?", (rel,)).fetchone()
    return None if row is None else str(row[0])


def found(vault: Vault, query: str) -> list[str]:
    """Paths whose text matches ``query`` (lexically: the fake embedder's
    vector neighbours are no evidence that a word reached the index)."""
    return [h.path for h in vault.search(query, limit=20) if h.lexical > 0]
