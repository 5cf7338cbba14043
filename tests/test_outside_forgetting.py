"""Forgetting, tried from outside with ordinary git commands (docs/forgetting.md).

Each test here failed on the code before its fix.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from memex import health
from memex.erase.steps import erase
from memex.vault import Vault, init_vault
from tests.fakes import HashEmbedder
from tests.test_erase_leaks import SECRET, commit_all, git, git_env  # noqa: F401 (a fixture)


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
