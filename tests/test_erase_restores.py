"""An erasure holds when git or a backup brings files back (docs/forgetting.md):
a restored erased file is refused by the index and named by doctor, a
restored erased list does not undo the erasure, and the way back is
deliberate.

Each test here failed on the code before its fix.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from memex import health
from memex.erase.steps import erase
from memex.errors import MemoryNotFound
from memex.vault import Vault
from tests.erasekit import SECRET, WORDS, cli, commit_all, files_with_text, git, git_env, git_vault, ids_found, settle  # noqa: F401 (fixtures)
from tests.fakes import HashEmbedder


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


# -- a file restored from history ------------------------------------------------


def test_restored_erased_file_is_not_indexed_and_doctor_names_it(git_vault: Vault) -> None:
    vault, root = git_vault, git_vault.root
    secret = vault.add(SECRET)
    rel = vault.get(secret.id).path
    commit_all(root, "secret")
    erase(vault, secret.id, reason="privacy")
    git(root, "checkout", "HEAD", "--", rel)  # restored from history
    assert (root / rel).exists()

    report = vault.reindex()
    assert secret.id not in ids_found(vault, "zqorblax storage")
    assert [e["path"] for e in report.errors] == [rel]
    found = health.drift(vault)
    assert found.erased_restored == [rel] and not found.clean
    code, out = cli(root, "doctor")
    assert f"erased content restored in {rel}" in out
    assert f"memex erase {secret.id}" in out
    vault.reindex(full=True)
    assert secret.id not in ids_found(vault, "zqorblax storage")

    # The way out it names: one command.
    code, out = cli(root, "erase", secret.id, "--reason", "restored by mistake")
    assert code == 0, out
    assert not (root / rel).exists() and health.drift(vault).clean

    # The deliberate way back for a file.
    git(root, "checkout", "HEAD", "--", rel)
    code, out = cli(root, "reindex", "--allow-erased", str(root / rel))
    assert code == 0, out
    assert secret.id in ids_found(vault, "zqorblax storage")
    vault.reindex(full=True)
    assert secret.id in ids_found(vault, "zqorblax storage") and health.drift(vault).clean
    # A later erasure wins over the allowance.
    erase(vault, secret.id, reason="again")
    git(root, "checkout", "HEAD", "--", rel)
    vault.reindex()
    assert secret.id not in ids_found(vault, "zqorblax storage")


def test_an_older_version_of_an_erased_memory_stays_out(git_vault: Vault) -> None:
    """The text was edited before the erasure, so only the id says it is the erased memory."""
    vault, root = git_vault, git_vault.root
    first = "Quorvex earns one hundred thousand a year"
    secret = vault.add(first)
    rel = vault.get(secret.id).path
    commit_all(root, "v1")
    full = root / rel
    full.write_text(full.read_text().replace(first, "Quorvex earns one hundred and twenty thousand a year"))
    vault.reindex()
    commit_all(root, "v2")
    erase(vault, secret.id, reason="privacy")
    git(root, "checkout", "HEAD~1", "--", rel)  # version 1, never on the erased list as text
    vault.reindex()
    assert not [h for h in vault.search("quorvex earns", limit=20) if "Quorvex" in h.body]
    assert health.drift(vault).erased_restored == [rel]
    # A hand-written file without an id line takes its id from its path: erasing it must not
    # refuse the next file written at that path.
    hand = root / "memories" / "hand.md"
    hand.write_text("Plain note about the Zqorblax garage\n")
    vault.reindex()
    hand_id = vault.backend.conn.execute("SELECT id FROM memories WHERE path = 'memories/hand.md'").fetchone()[0]
    erase(vault, hand_id, reason="r")
    hand.write_text("Another note about the bicycle shed\n")
    vault.reindex()
    assert vault.backend.conn.execute("SELECT count(*) FROM memories WHERE path = 'memories/hand.md'").fetchone()[0] == 1


def test_add_allow_erased_writes_a_file_the_index_keeps(vault: Vault) -> None:
    secret = vault.add(SECRET)
    erase(vault, secret.id, reason="r")
    assert vault.add(SECRET).status == "refused"
    back = vault.add(SECRET, allow_erased=True)
    assert back.status == "created"
    vault.reindex(full=True)
    assert back.id in ids_found(vault, "zqorblax storage") and health.drift(vault).clean


# -- git restores the erased list itself ------------------------------------------


def test_restoring_the_whole_tree_with_git_does_not_undo_an_erasure(git_vault: Vault) -> None:
    """`git checkout -- .` / `git reset --hard` rewrite the committed erased list too:
    found from outside, the erased memory came back and doctor called the vault clean."""
    vault, root = git_vault, git_vault.root
    erase(vault, vault.add("An earlier note nobody needs").id, reason="tidy")  # the list exists and is committed
    secret = vault.add(SECRET)
    rel = vault.get(secret.id).path
    commit_all(root, "secret")
    erase(vault, secret.id, reason="privacy")
    git(root, "checkout", "--", ".")  # discard every change since the commit: file and list
    assert (root / rel).exists()

    vault.reindex()
    assert secret.id not in ids_found(vault, "zqorblax storage")
    assert health.drift(vault).erased_restored == [rel]
    # A read leaves the tracked list alone (git would refuse a stash pop over it); doctor says it is behind.
    assert git(root, "status", "--short") == ""
    assert [b.split(":")[0] for b in health.drift(vault).behind] == [".memex/erased.txt", ".memex/erasure.log"]
    health.repair(vault)  # doctor --fix
    assert ".memex/erased.txt" in git(root, "status", "--short")  # the list regained the erasure, for the next commit

    erase(vault, secret.id, reason="restored by mistake")
    commit_all(root, "erased")
    git(root, "reset", "--hard", "HEAD~1")  # the commit before the erasure
    vault.reindex(full=True)
    assert secret.id not in ids_found(vault, "zqorblax storage")
    assert health.drift(vault).erased_restored == [rel]


def test_a_deliberate_way_back_survives_the_same_restore(git_vault: Vault) -> None:
    vault, root = git_vault, git_vault.root
    erase(vault, vault.add("An earlier note nobody needs").id, reason="tidy")
    secret = vault.add(SECRET)
    rel = vault.get(secret.id).path
    commit_all(root, "secret")
    erase(vault, secret.id, reason="privacy")
    git(root, "checkout", "HEAD", "--", rel)
    code, out = cli(root, "reindex", "--allow-erased", str(root / rel))
    assert code == 0, out
    git(root, "checkout", "HEAD", "--", ".memex/erased.txt")  # the list before both the erasure and the allowance
    vault.reindex(full=True)
    assert secret.id in ids_found(vault, "zqorblax storage")
    assert health.drift(vault).behind == [".memex/erased.txt: 4 line(s)"]  # the erasure and the allowance
    health.repair(vault)
    assert secret.id in ids_found(vault, "zqorblax storage") and health.drift(vault).clean
