"""Forgetting, tried from outside with ordinary git commands (docs/forgetting.md).

Each test here failed on the code before its fix.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from memex import health
from memex.erase.steps import erase
from memex.errors import MemoryNotFound
from memex.vault import Vault, init_vault
from tests.erasekit import files_with_text, settle
from tests.fakes import HashEmbedder
from tests.test_erase_leaks import SECRET, WORDS, cli, commit_all, git, git_env  # noqa: F401 (a fixture)


@pytest.fixture
def git_vault(tmp_path: Path, git_env: None) -> Iterator[Vault]:
    root = init_vault(tmp_path / "gvault", git=True)
    with Vault(root, embedder=HashEmbedder()) as v:
        yield v


def test_doctor_names_an_erased_file_git_restored_before_any_reindex(git_vault: Vault) -> None:
    """Found from outside: after `git reset --hard` to before an erasure, `memex
    doctor` called the restored file merely "missing" (erased_restored 0) and
    said `--fix` repairs it; only after a reindex did it say what the file is."""
    vault, root = git_vault, git_vault.root
    secret = vault.add(SECRET)
    rel = vault.get(secret.id).path
    vault.add("We deploy the shop on Fridays")
    commit_all(root, "memories")
    erase(vault, secret.id, reason="privacy")
    commit_all(root, "erased")
    git(root, "reset", "-q", "--hard", "HEAD~1")  # the file and the list as they were before the erasure
    assert (root / rel).exists()

    report = health.drift(vault)
    assert report.erased_restored == [rel]
    assert rel not in report.missing
    assert not report.clean


def _erase_then_restore_a_backup(vault: Vault, memory_id: str, tmp_path: Path) -> None:
    """`cp -a vault vault.bak`, `memex erase ID`, `cp -a vault.bak/. vault/`:
    the backup predates the erasure, and brings back its files and index.db."""
    root = vault.root
    vault.close()
    backup = tmp_path / "vault.bak"
    shutil.copytree(root, backup, symlinks=True)
    with Vault(root, embedder=HashEmbedder()) as v:
        erase(v, memory_id, reason="privacy")
    shutil.copytree(backup, root, symlinks=True, dirs_exist_ok=True)


def test_a_whole_vault_backup_restored_after_an_erasure_does_not_bring_it_back(git_vault: Vault, tmp_path: Path) -> None:
    """Found from outside: `cp -a vault vault.bak`, erase, `cp -a vault.bak/. vault/`
    (the backup predates the erased list, so the list stays, but its index.db
    comes back): `memex search` and `memex list` showed the erased memory
    and `memex doctor` called the vault clean."""
    vault, root = git_vault, git_vault.root
    secret = vault.add(SECRET)
    vault.add("We deploy the shop on Fridays")
    _erase_then_restore_a_backup(vault, secret.id, tmp_path)

    with Vault(root, embedder=HashEmbedder()) as v:
        assert secret.id not in [h.id for h in v.search("Zqorblax storage unit key", limit=50)]
        assert secret.id not in [h.id for h in v.list()]
        report = health.drift(v)
        assert [p for p in report.erased_restored] == [v.row_by_id(secret.id).path] and not report.clean
        health.repair(v)
        assert secret.id not in [h.id for h in v.search("Zqorblax storage unit key", limit=50)]
        assert health.drift(v).erased_restored  # the file is still there: a person decides


def test_doctor_is_not_clean_while_the_index_names_a_deleted_restored_file(git_vault: Vault) -> None:
    """Found from outside (`git stash` after an erase, reindex, `git stash pop`):
    the restored file's error row, whose path is the body's first words, stayed
    in index.db after the file went again, and doctor called the vault clean."""
    vault, root = git_vault, git_vault.root
    secret = vault.add(SECRET)
    rel = vault.get(secret.id).path
    commit_all(root, "secret")
    erase(vault, secret.id, reason="privacy")
    git(root, "checkout", "HEAD", "--", rel)  # back from git: refused, reported
    vault.reindex()
    assert health.drift(vault).erased_restored == [rel]
    (root / rel).unlink()  # gone again (stash pop, or by hand)
    settle(vault)
    assert "zqorblax" in (root / ".memex" / "index.db").read_bytes().decode("latin-1").lower()

    report = health.drift(vault)
    assert rel in report.orphaned and not report.clean
    health.repair(vault)
    settle(vault)
    assert health.drift(vault).clean
    assert files_with_text(root, WORDS) == {}


def test_resolving_a_git_conflict_in_the_erased_list_stays_resolved(git_vault: Vault) -> None:
    """Found from outside: two clones of a plain git vault both erased, `git pull`
    left conflict markers in .memex/erased.txt; the journal copied them, and
    once the user deleted the marker lines the next command wrote them back."""
    vault, root = git_vault, git_vault.root
    erase(vault, vault.add(SECRET).id, reason="privacy")
    listed = root / ".memex" / "erased.txt"
    ours = listed.read_text()
    theirs = "ab" * 32 + "\n"  # the other clone's erasure: a digest like ours
    listed.write_text(f"<<<<<<< HEAD\n{ours}=======\n{theirs}>>>>>>> origin/main\n")
    vault.search("Zqorblax")  # any read of the list makes the two files agree
    markers = ("<<<<<<<", "=======", ">>>>>>>")
    assert not any(line.startswith(markers) for line in (root / ".memex" / "erased.local").read_text().splitlines())

    listed.write_text(ours + theirs)  # the conflict resolved by hand: both sides kept
    vault.search("Zqorblax")
    assert listed.read_text() == ours + theirs
    assert theirs.strip() in (root / ".memex" / "erased.local").read_text().split()


def test_show_does_not_read_back_a_memory_a_restored_backup_brought_back(git_vault: Vault, tmp_path: Path) -> None:
    """Found from outside: after a whole-vault backup was copied back over an
    erasure, `search` and `list` hid the memory but `memex show ID` printed it."""
    vault, root = git_vault, git_vault.root
    secret = vault.add(SECRET)
    _erase_then_restore_a_backup(vault, secret.id, tmp_path)

    with Vault(root, embedder=HashEmbedder()) as v:
        with pytest.raises(MemoryNotFound):
            v.get(secret.id)
    code, out = cli(root, "show", secret.id)
    assert code != 0 and WORDS[0] not in out


def test_the_entity_graph_does_not_name_what_a_restored_backup_brought_back(git_vault: Vault, tmp_path: Path) -> None:
    """Found from outside: after a whole-vault backup was copied back over an
    erasure, `memex entities` still listed the erased memory's entity and
    `memex graph NAME` printed its body."""
    vault, root = git_vault, git_vault.root
    secret = vault.add("[[Zqorblax]] keeps the Xjuimbrelk storage unit key under the mat")
    vault.add("[[Shop]] deploys happen on Fridays")
    _erase_then_restore_a_backup(vault, secret.id, tmp_path)

    code, out = cli(root, "entities", "--json")
    assert code == 0 and "Shop" in out and WORDS[0] not in out
    code, out = cli(root, "graph", WORDS[0], "--json")
    assert WORDS[1] not in out
    with Vault(root, embedder=HashEmbedder()) as v:
        assert health.drift(v).erased_restored  # the file is back: doctor names it
