"""The write lock covers only a short commit (docs/write-path.md).

Eight concurrent ``memex add`` beside a watcher and a reindex loop lost adds
("write.lock held for over 30s"): model loading and embedding ran inside
the lock, and the watcher held it while waiting for SQLite. These tests pin
the two causes; scripts/bench_contention.py measures the whole load.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import apsw
import numpy as np
import pytest

from memex.embedding import embed
from memex.store.sqlite import schema
from memex.store.sqlite.schema import connect
from memex.errors import LockTimeout
from memex.files.locking import try_file_lock
from memex.vault import Vault
from memex.watch.watcher import Watcher
from memex.watch.state import WatchSettings
from tests.fakes import HashEmbedder
from tests.watchkit import wait_for


class LockProbe(HashEmbedder):
    """The fake model, noting whether the vault's write lock was free each time it ran."""

    def __init__(self, lock: Path) -> None:
        super().__init__()
        self.lock = lock
        self.held_during: list[bool] = []

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.held_during.append(lock_is_held(self.lock))
        return super().embed(texts)


def lock_is_held(lock: Path) -> bool:
    handle = try_file_lock(lock)  # flock: another open file conflicts, even in this process
    if handle is None:
        return True
    handle.close()
    return False


def test_add_loads_and_runs_the_model_outside_the_write_lock(
    vault_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lock = vault_root / ".memex" / "write.lock"
    probe = LockProbe(lock)
    loads: list[bool] = []

    def load(setting: str) -> LockProbe:
        loads.append(lock_is_held(lock))
        return probe

    monkeypatch.setattr(embed, "load_embedder", load)
    long_body = "Deploys go through the staging cluster first. " * 60  # chunked: several texts to embed
    with Vault(vault_root) as vault:
        first = vault.add("The billing service owns invoices and refunds.")
        second = vault.add(long_body)
    assert (first.status, second.status) == ("created", "created")
    assert loads == [False]
    assert probe.held_during and not any(probe.held_during)
    with Vault(vault_root, embedder=HashEmbedder()) as vault:
        assert [h.id for h in vault.search("billing invoices refunds", limit=1)] == [first.id]


@pytest.fixture
def refused(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """One entry per time a writer found SQLite busy and let go (memex.store.sqlite.schema.locked_txn's retry)."""
    seen: list[bool] = []
    real = schema.try_begin

    def counting(conn: apsw.Connection, wait_ms: int) -> bool:
        began = real(conn, wait_ms)
        if not began:
            seen.append(True)
        return began

    monkeypatch.setattr(schema, "try_begin", counting)
    return seen


@pytest.fixture
def busy_index(vault_root: Path) -> Iterator[apsw.Connection]:
    """Another process's write transaction (a reindex batch), until released."""
    other = connect(vault_root / ".memex" / "index.db")
    yield other
    if not other.get_autocommit():
        other.execute("ROLLBACK")
    other.close()


def _lock_free_share(lock: Path, seconds: float) -> float:
    """How often the write lock could be taken over ``seconds`` (0..1)."""
    free = tries = 0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        tries += 1
        free += not lock_is_held(lock)
        time.sleep(0.01)
    return free / tries


def test_an_add_waiting_for_sqlite_does_not_hold_the_write_lock(
    vault_root: Path, busy_index: apsw.Connection, refused: list[bool]
) -> None:
    lock = vault_root / ".memex" / "write.lock"
    results = []
    with Vault(vault_root, embedder=HashEmbedder()) as vault:
        vault.add("Warm-up memory so that vector tables exist.")
        busy_index.execute("BEGIN IMMEDIATE")
        worker = threading.Thread(target=lambda: results.append(vault.add("Adds wait for a busy index politely.")))
        worker.start()
        wait_for(lambda: len(refused) >= 2, 30, "the add to find SQLite busy and wait")
        share = _lock_free_share(lock, 1.5)
        busy_index.execute("ROLLBACK")
        worker.join(30)
        assert not worker.is_alive()
    # Others (every other add) could take the lock most of the time meanwhile.
    assert share > 0.5, share
    assert [r.status for r in results] == ["created"]


def test_the_watcher_embeds_outside_the_lock_and_never_holds_it_waiting_for_sqlite(
    vault_root: Path, busy_index: apsw.Connection, refused: list[bool]
) -> None:
    lock = vault_root / ".memex" / "write.lock"
    probe = LockProbe(lock)
    note = vault_root / "memories" / "hand-note.md"
    note.write_text("A note written in an editor about the release train.\n", encoding="utf-8")
    with Vault(vault_root, embedder=probe) as vault:
        vault.indexer  # vector tables for this model, before the index is busy
        watcher = Watcher(vault, WatchSettings(reconcile_seconds=3600.0, heartbeat_seconds=0.2))
        busy_index.execute("BEGIN IMMEDIATE")
        worker = threading.Thread(target=watcher.indexing.index, args=(["memories/hand-note.md"],))
        worker.start()
        wait_for(lambda: len(refused) >= 2, 30, "the watcher to find SQLite busy and wait")
        share = _lock_free_share(lock, 1.5)
        busy_index.execute("ROLLBACK")
        worker.join(30)
        assert not worker.is_alive()
        assert share > 0.5, share
        assert probe.held_during and not any(probe.held_during)
        assert [h.path for h in vault.search("release train", limit=1)] == ["memories/hand-note.md"]


def test_a_commit_that_cannot_get_sqlite_in_time_says_so(vault_root: Path, busy_index: apsw.Connection) -> None:
    with Vault(vault_root, embedder=None) as vault:
        vault.list()
        busy_index.execute("BEGIN IMMEDIATE")
        started = time.monotonic()
        with pytest.raises(LockTimeout, match="index stayed busy"):
            with vault.commit(timeout=0.5):
                pass
        assert time.monotonic() - started < 5
        assert not lock_is_held(vault_root / ".memex" / "write.lock")
        assert vault.backend.conn.get_autocommit()  # no transaction left open


def test_a_hook_capture_that_cannot_get_the_lock_in_time_is_skipped_not_raised(
    vault_root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from memex import context
    from memex.files.locking import file_lock

    with Vault(vault_root, embedder=HashEmbedder()) as vault:
        vault.lock_wait = 0.3  # as hook_io.hook_vault sets it (20 s there)
        with file_lock(vault_root / ".memex" / "write.lock"):  # a long erase, say
            answer = context.capture_keyword(vault, "sess-1", "Remember that the office closes at six.")
        assert answer is not None and answer["status"] == "skipped"
        assert "memex: not captured:" in capsys.readouterr().err
        assert vault.list() == []
    from memex.agents import hook_io

    with hook_io.hook_vault(str(vault_root)) as hooked:
        assert hooked.lock_wait == hook_io.HOOK_LOCK_WAIT
