"""Erasure leaks found from outside (docs/forgetting.md, docs/reliability.md).

Each test here failed on the code before its fix: a copy survived, a
concurrent reindex put the memory back, a killed write's temp file kept the
text, a restored file was indexed again, a large body broke
``--purge-history``, a final period got past the erased list.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from memex import health
from memex.erase import git_history
from memex.errors import GitHistoryError
from memex.vault import Vault, init_vault
from memex.erase.steps import erase
from memex.watch.watcher import Watcher, settings_for
from tests.erasekit import SECRET, WORDS, cli, commit_all, files_with_text, git, git_env, git_vault, ids_found, settle  # noqa: F401 (fixtures)
from tests.fakes import HashEmbedder
from tests.watchkit import TIMEOUT, running_watcher, wait_for


def leaked(vault: Vault) -> dict[str, list[str]]:
    settle(vault)
    return files_with_text(vault.root, WORDS)


# -- copies of a memory's file ------------------------------------------------------------


def test_erase_removes_every_file_claiming_the_id(vault: Vault) -> None:
    secret = vault.add(SECRET)
    keep = vault.add("The bike lock combination changed in March")
    original = vault.root / vault.get(secret.id).path
    seen_copy = original.with_name(original.stem + ".sync-conflict-1.md")
    shutil.copy2(original, seen_copy)
    report = vault.reindex()  # the index knows the copy as an id clash
    assert [e["path"] for e in report.errors] == [seen_copy.relative_to(vault.root).as_posix()]
    unseen_copy = vault.root / "memories" / "elsewhere" / "copy of note.md"
    unseen_copy.parent.mkdir()
    shutil.copy2(original, unseen_copy)  # made after the last sync: not known to the index at all

    result = erase(vault, secret.id, reason="copies too")

    assert result.files_deleted == 3
    assert not original.exists() and not seen_copy.exists() and not unseen_copy.exists()
    vault.reindex(full=True)
    assert secret.id not in ids_found(vault, "zqorblax storage key")
    assert leaked(vault) == {}
    assert keep.id in ids_found(vault, "bike lock combination")


def test_erase_leaves_no_error_row_naming_a_copy_renamed_away(vault: Vault) -> None:
    """Found by the state machine: the clash row of a copy renamed away since the last sync
    kept the copy's name (the erased text's first words) in the index after the erase."""
    secret = vault.add(SECRET)
    original = vault.root / vault.get(secret.id).path
    copy = original.with_name(original.stem + ".sync-conflict-1.md")
    shutil.copy2(original, copy)
    vault.reindex()  # the copy is recorded as an id clash, under its name
    os.replace(copy, vault.root / "memories" / "renamed.md")  # no sync since
    erase(vault, secret.id, reason="r")
    assert not (vault.root / "memories" / "renamed.md").exists()
    # Raw bytes as they are on disk now, no checkpoint by the test.
    assert files_with_text(vault.root, WORDS) == {}
    vault.reindex()
    assert files_with_text(vault.root, WORDS) == {}


def test_erase_takes_memories_with_the_same_text(vault: Vault) -> None:
    """Same text under another id (hand-written, another scope): the erased list would
    refuse it at its next read, so it goes now rather than staying searchable."""
    secret = vault.add(SECRET, scope="user")
    other = vault.add(SECRET + ".", scope="project:ops")
    assert other.status == "created"
    result = erase(vault, secret.id, reason="all of it")
    assert set(result.erased) == {secret.id, other.id}
    assert ids_found(vault, "zqorblax storage") == []
    assert leaked(vault) == {}


def test_a_copy_seen_by_the_watcher_is_not_a_move(vault: Vault) -> None:
    secret = vault.add(SECRET)
    original = vault.get(secret.id).path
    copy = original.replace(".md", " (copy).md")
    shutil.copy2(vault.root / original, vault.root / copy)
    # What the watcher does with the created copy's event.
    report = vault.indexer.index_paths([copy], verify=True)
    assert report.moved == 0
    assert vault.get(secret.id).path == original  # the original still holds the id
    assert [e["path"] for e in report.errors] == [copy] and "also claimed by" in report.errors[0]["reason"]
    assert health.drift(vault).missing == []
    # A real move (both paths in one batch) is still a move.
    os.replace(vault.root / original, vault.root / "memories" / "moved.md")
    os.unlink(vault.root / copy)
    moved = vault.indexer.index_paths([original, "memories/moved.md", copy], verify=True)
    assert moved.moved == 1 and vault.get(secret.id).path == "memories/moved.md"


def test_a_live_watcher_takes_cp_for_a_copy(vault: Vault) -> None:
    secret = vault.add(SECRET)
    original = vault.get(secret.id).path
    copy = original.replace(".md", ".sync-conflict-1.md")
    with running_watcher(vault.root) as watcher:
        shutil.copy2(vault.root / original, vault.root / copy)
        wait_for(lambda: watcher.totals["errors"] >= 1, what="the copy reported as a clash")
        assert watcher.wait_idle(TIMEOUT)
        assert watcher.totals["moved"] == 0
    assert vault.get(secret.id).path == original
    assert health.drift(vault).missing == []
    erase(vault, secret.id, reason="both")
    assert not (vault.root / copy).exists() and leaked(vault) == {}


# -- erase during a running reindex -----------------------------------


class GatedEmbedder(HashEmbedder):
    """Embeds like HashEmbedder; the batch holding ``marker`` waits for ``release``."""

    def __init__(self, marker: str) -> None:
        super().__init__()
        self.marker = marker
        self.reached = threading.Event()
        self.release = threading.Event()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if any(self.marker in t for t in texts):
            self.reached.set()
            self.release.wait(60)
        return super().embed(texts)


def test_erase_during_a_running_reindex_never_puts_it_back(vault_root: Path) -> None:
    with Vault(vault_root, embedder=HashEmbedder()) as first:
        secret = first.add(SECRET)
        path = vault_root / first.get(secret.id).path
    # 1,200 changed files (new ones, and the secret edited): several batches.
    folder = vault_root / "memories" / "bulk"
    folder.mkdir()
    for i in range(1200):
        (folder / f"note-{i:04}.md").write_text(f"Bulk note {i} about harbour crane {i * 7} maintenance\n")
    path.write_text(path.read_text().replace("under the mat", "under the Xjuimbrelk mat"))

    gated = GatedEmbedder("Zqorblax")
    errors: list[BaseException] = []

    def run_reindex() -> None:
        try:
            with Vault(vault_root, embedder=gated) as busy:
                busy.reindex()
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            errors.append(exc)

    worker = threading.Thread(target=run_reindex)
    worker.start()
    try:
        assert gated.reached.wait(60), "the reindex never reached the secret's batch"
        # The reindex has read the edited secret and is embedding it: erase now.
        with Vault(vault_root, embedder=HashEmbedder()) as eraser:
            erase(eraser, secret.id, reason="mid-reindex")
    finally:
        gated.release.set()
        worker.join(120)
    assert not errors, errors
    with Vault(vault_root, embedder=HashEmbedder()) as after:
        assert after.backend.conn.execute("SELECT count(*) FROM memories WHERE body LIKE '%Zqorblax%'").fetchone()[0] == 0
        assert secret.id not in ids_found(after, "zqorblax storage unit key")
        assert after.backend.conn.execute("SELECT count(*) FROM memories").fetchone()[0] == 1200
        assert leaked(after) == {}
        after.reindex()
        assert leaked(after) == {}


# -- temp files of killed writes ----------------------------------------


def _dead_pid() -> int:
    proc = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    return int(proc.stdout)


def _orphan(vault: Vault, path: str) -> Path:
    """What kill -9 between atomic_write's write and rename leaves: the whole text."""
    target = vault.root / path
    tmp = target.parent / f".memex-{_dead_pid()}-k9x2ab.tmp"
    tmp.write_bytes(target.read_bytes())
    return tmp


def test_orphan_temp_files_are_reported_removed_and_never_indexed(vault: Vault) -> None:
    secret = vault.add(SECRET)
    tmp = _orphan(vault, vault.get(secret.id).path)
    live = tmp.with_name(f".memex-{os.getpid()}-live01.tmp")  # a writer that still runs: left alone
    live.write_text("half written\n")
    found = health.drift(vault)
    assert found.temp_files == [tmp.relative_to(vault.root).as_posix()] and not found.clean
    code, out = cli(vault.root, "doctor")
    assert "temp_files: " + tmp.relative_to(vault.root).as_posix() in out
    fixed = health.repair(vault)
    assert fixed["temp_files_removed"] == [tmp.relative_to(vault.root).as_posix()]
    assert not tmp.exists() and live.exists()
    live.unlink()
    assert health.drift(vault).clean

    tmp = _orphan(vault, vault.get(secret.id).path)
    vault.reindex()
    assert not tmp.exists()
    tmp = _orphan(vault, vault.get(secret.id).path)
    watcher = Watcher(vault, settings_for(vault, reconcile_seconds=3600.0))
    watcher.start()
    watcher.close()
    assert not tmp.exists()
    assert vault.backend.conn.execute("SELECT count(*) FROM memories").fetchone()[0] == 1


def test_erase_removes_temp_files_holding_the_text(vault: Vault) -> None:
    secret = vault.add(SECRET)
    tmp = _orphan(vault, vault.get(secret.id).path)
    erase(vault, secret.id, reason="with its temp copy")
    assert not tmp.exists()
    assert leaked(vault) == {}


def test_gitignore_covers_temp_files_in_new_and_existing_folders(tmp_path: Path, git_env: None) -> None:
    root = init_vault(tmp_path / "fresh", git=True)
    (root / "memories" / ".memex-123-abc.tmp").write_text("x")
    assert git(root, "check-ignore", "memories/.memex-123-abc.tmp").strip()
    existing = tmp_path / "notes"
    existing.mkdir()
    # A folder that already ignores the index (an older vault's lines) still gains the temp line.
    (existing / ".gitignore").write_text("*.log\n.memex/*.db\n")
    init_vault(existing, git=True)
    text = (existing / ".gitignore").read_text()
    assert text.startswith("*.log\n.memex/*.db\n") and ".memex-*.tmp" in text.splitlines()
    assert text.count(".memex/*.db\n") == 1


def test_purge_history_reaches_a_committed_temp_file(git_vault: Vault) -> None:
    vault, root = git_vault, git_vault.root
    secret = vault.add(SECRET)
    tmp = _orphan(vault, vault.get(secret.id).path)
    git(root, "add", "-f", tmp.relative_to(root).as_posix())  # committed before the ignore line existed
    commit_all(root, "with a stray temp file")
    erase(vault, secret.id, reason="all of it", purge_history=True)
    assert not tmp.exists()
    assert "zqorblax" not in _all_objects(root).lower()


def _all_objects(root: Path) -> str:
    out = subprocess.run(["git", "-C", str(root), "cat-file", "--batch-all-objects", "--batch"],
                         capture_output=True, check=True).stdout
    return out.decode("utf-8", errors="replace")


# -- --purge-history for any body size, and the audit's last word ---------


def test_purge_history_of_a_body_over_the_argument_limit(git_vault: Vault) -> None:
    vault, root = git_vault, git_vault.root
    big = SECRET + "\n\n" + "\n".join(f"Line {i} of the Xjuimbrelk ledger, entry {i * 31}." for i in range(5000))
    assert len(big.encode()) > 200_000
    keep = vault.add("Lunch is at noon on Fridays")
    secret = vault.add(big)
    assert secret.status == "created"
    commit_all(root, "big memory")
    result = erase(vault, secret.id, reason="too much", purge_history=True)
    assert result.git.status == "purged"
    objects = _all_objects(root).lower()
    assert "zqorblax" not in objects and "xjuimbrelk" not in objects
    assert "lunch is at noon" in objects
    log = [json.loads(line) for line in (vault.memex_dir / "erasure.log").read_text().splitlines()]
    assert log[-1]["phase"] == "complete" and log[-1]["git_history"] == "purged"
    assert keep.id in ids_found(vault, "lunch noon")


def test_audit_log_says_partial_when_a_step_after_deletion_fails(
    git_vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    vault, root = git_vault, git_vault.root
    secret = vault.add(SECRET)
    commit_all(root, "secret")

    def broken(*_args: object) -> git_history.GitReport:
        raise GitHistoryError("git-filter-repo failed: disk full")

    monkeypatch.setattr(git_history, "purge", broken)
    with pytest.raises(GitHistoryError):
        erase(vault, secret.id, reason="r", purge_history=True)
    log = [json.loads(line) for line in (vault.memex_dir / "erasure.log").read_text().splitlines()]
    assert [e["phase"] for e in log] == ["files_deleted", "partial"]
    assert any("git history" in r for r in log[-1]["remains"]) and log[-1]["error"] == "GitHistoryError"
    assert secret.id not in ids_found(vault, "zqorblax storage")  # the index part did finish
    assert "zqorblax" not in json.dumps(log).lower()


# -- punctuation at the ends (docs/forgetting.md) ------------------------------------


@pytest.mark.parametrize("variant", [
    SECRET + ".", SECRET + "!", f'"{SECRET}."', f"({SECRET})", f"- {SECRET.upper()} ...", f"{SECRET} :)",
])
def test_erased_text_with_other_end_punctuation_is_refused(vault: Vault, variant: str) -> None:
    secret = vault.add(SECRET)
    erase(vault, secret.id, reason="r")
    assert vault.add(variant).status == "refused"


def test_inner_punctuation_still_makes_another_text(vault: Vault) -> None:
    secret = vault.add("Ship on Friday, not Monday")
    erase(vault, secret.id, reason="r")
    assert vault.add("Ship on Friday not Monday").status == "created"
    assert vault.add("Ship on Friday, not Monday.").status == "refused"


# -- the journal ------------------------------------------------------------------------


def test_the_journal_stays_out_of_git_in_new_and_old_vaults(git_vault: Vault) -> None:
    vault, root = git_vault, git_vault.root
    ignore = root / ".gitignore"
    ignore.write_text(ignore.read_text().replace(".memex/erased.local\n", ""))  # a vault from before the journal
    erase(vault, vault.add(SECRET).id, reason="privacy")
    assert (root / ".memex" / "erased.local").is_file()
    assert git(root, "check-ignore", ".memex/erased.local").strip() == ".memex/erased.local"
    tracked = subprocess.run(["git", "-C", str(root), "check-ignore", "-q", ".memex/erased.txt"], check=False)
    assert tracked.returncode == 1  # the list itself is still shared
