"""Crash safety: the file is gone but the index purge never ran.

The next reindex, ``doctor --fix`` or watcher start must purge the rows
completely (the same purge as erase) and scrub the index files.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from memex.erase import steps as erase_mod
from memex import health
from memex.vault import Vault
from memex.watch.watcher import Watcher, WatchSettings
from memex.erase.steps import erase
from memex.index.graph import list_entities
from tests.erasekit import files_with_text, settle
from tests.fakes import HashEmbedder

WORDS = ["Zqorblax", "Xjuimbrelk"]
SECRET = "Zqorblax holds the spare key to the Xjuimbrelk storage unit"


def _reindex(root: Path) -> None:
    with Vault(root, embedder=HashEmbedder()) as v:
        v.reindex()


def _doctor_fix(root: Path) -> None:
    with Vault(root, embedder=HashEmbedder()) as v:
        assert health.drift(v).orphaned  # doctor sees the row of the missing file
        health.repair(v)
        assert health.drift(v).clean


def _watcher_start(root: Path) -> None:
    with Vault(root, embedder=HashEmbedder()) as v:
        watcher = Watcher(v, WatchSettings(reconcile_seconds=3600.0, heartbeat_seconds=0.2))
        watcher.start()
        watcher.close()


class Crash(RuntimeError):
    pass


@pytest.mark.parametrize("repair", [_reindex, _doctor_fix, _watcher_start], ids=["reindex", "doctor", "watcher"])
def test_crash_between_file_delete_and_purge_is_repaired(
    vault: Vault, monkeypatch: pytest.MonkeyPatch, repair: Callable[[Path], None]
) -> None:
    keep = vault.add("The bike lock combination changed in March", entities=["Bike"])
    secret = vault.add(SECRET, entities=["Zqorblax Storage", "Bike"])
    path = vault.root / vault.get(secret.id).path

    def crash(*_args: object) -> None:
        raise Crash("power cut")

    monkeypatch.setattr(erase_mod, "_purge_index", crash)
    with pytest.raises(Crash):
        erase(vault, secret.id, reason="test crash")
    assert not path.exists()
    # The failure left the rows behind, on disk; search hides them already (the erased list).
    assert secret.id not in [h.id for h in vault.search("zqorblax spare key")]
    assert vault.backend.conn.execute("SELECT count(*) FROM memories WHERE id = ?", (secret.id,)).fetchone()[0] == 1
    settle(vault)
    assert ".memex/index.db" in files_with_text(vault.root, WORDS)
    log = (vault.memex_dir / "erasure.log").read_text()
    assert '"phase": "files_deleted"' in log and '"complete"' not in log
    vault.close()  # the crashed process is gone

    repair(vault.root)

    with Vault(vault.root, embedder=HashEmbedder()) as after:
        assert secret.id not in [h.id for h in after.search("zqorblax spare key")]
        counts = {
            t: after.backend.conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
            for t in ("memories", "memory_vec", "chunks", "usage", "memory_fts_docsize")
        }
        assert counts["memories"] == counts["memory_vec"] == counts["memory_fts_docsize"] == 1
        assert {e.name for e in list_entities(after.store)} == {"Bike"}
        assert [h.id for h in after.list()] == [keep.id]
        # Even the bytes: the sync purged and scrubbed, like erase would have.
        assert files_with_text(after.root, WORDS) == {}
        # ... and the erased list was written before the crash.
        assert after.add(SECRET).method == "erased"
