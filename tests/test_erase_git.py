"""Git history: report what commits still hold, and rewrite it with --purge-history."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from memex.cli import app
from memex.errors import InvalidArgument, MemoryNotFound
from memex.vault import Vault, init_vault
from memex.erase.steps import erase
from memex.meta_edit import update_meta
from tests.fakes import HashEmbedder

SECRET = "The Zqorblax vault combination is seven left, three right"


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, check=True).stdout


@pytest.fixture
def git_vault(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Vault]:
    for var, value in (("GIT_AUTHOR_NAME", "t"), ("GIT_AUTHOR_EMAIL", "t@example.org"),
                       ("GIT_COMMITTER_NAME", "t"), ("GIT_COMMITTER_EMAIL", "t@example.org"),
                       ("GIT_CONFIG_GLOBAL", str(tmp_path / "no-gitconfig"))):
        monkeypatch.setenv(var, value)
    root = init_vault(tmp_path / "vault", git=True)
    assert (root / ".git").is_dir()
    with Vault(root, embedder=HashEmbedder()) as v:
        yield v


def commit_all(root: Path, message: str) -> str:
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", message)
    return git(root, "rev-parse", "HEAD").strip()


def all_object_text(root: Path) -> str:
    """The content of every object in the repository, decompressed."""
    listing = git(root, "cat-file", "--batch-all-objects", "--batch-check=%(objectname)").split()
    out = subprocess.run(["git", "-C", str(root), "cat-file", "--batch"], input=("\n".join(listing) + "\n").encode(),
                         capture_output=True, check=True).stdout
    return out.decode("utf-8", errors="replace")


def test_retained_history_is_reported_then_purged_after_the_fact(git_vault: Vault) -> None:
    vault, root = git_vault, git_vault.root
    keep = vault.add("Lunch is at noon on Fridays")
    secret = vault.add(SECRET)
    first = commit_all(root, "two memories")
    update_meta(vault, secret.id, {"category": "secret"})
    second = commit_all(root, "categorize")
    git(root, "branch", "old-branch", first)
    git(root, "remote", "add", "origin", "https://example.org/vault.git")
    never = vault.add("Uncommitted thought about tomatoes")

    assert erase(vault, never.id, reason="r").git.status == "never_committed"
    result = erase(vault, secret.id, reason="privacy")
    data = result.as_dict()
    assert data["git_history"] == "retained"
    assert set(data["git"]["commits"]) == {first, second}
    assert f"memex erase {secret.id}" in data["git"]["next_step"] and "--purge-history" in data["git"]["next_step"]
    assert "remotes" in data["git"]["unreachable"] and data["git"]["remotes"] == ["origin"]
    assert git(root, "log", "--all", "-S", "Zqorblax", "--format=%H").split()

    # Dirty tracked files would be lost by the rewrite: refused, nothing changed.
    keep_file = root / vault.get(keep.id).path
    keep_file.write_text(keep_file.read_text() + "edited\n")
    with pytest.raises(InvalidArgument, match="uncommitted changes"):
        erase(vault, secret.id, reason="privacy", purge_history=True)
    git(root, "checkout", "--", keep_file.relative_to(root).as_posix())
    (root / "untracked-note.txt").write_text("mine\n")

    purged = erase(vault, secret.id, reason="privacy", purge_history=True)
    assert purged.git.status == "purged" and purged.erased == []
    assert git(root, "log", "--all", "--reflog", "-S", "Zqorblax", "--format=%H").strip() == ""
    assert "zqorblax" not in all_object_text(root).lower()
    assert "Lunch is at noon" in all_object_text(root)  # the rest of the history is intact
    assert set(git(root, "branch", "--format=%(refname:short)").split()) >= {"old-branch"}
    assert git(root, "remote").split() == ["origin"] and purged.git.remotes == ["origin"]
    assert (root / "untracked-note.txt").exists() and keep_file.exists()
    assert "force-push" in (purged.git.next_step or "")
    log = [json.loads(line) for line in (vault.memex_dir / "erasure.log").read_text().splitlines()]
    assert log[-1]["phase"] == "history_purged" and log[-1]["erased"] == [secret.id]
    # Nothing left anywhere: a second purge has nothing to find.
    with pytest.raises(MemoryNotFound):
        erase(vault, secret.id, reason="again", purge_history=True)


def test_purge_history_in_the_same_erase(git_vault: Vault) -> None:
    vault, root = git_vault, git_vault.root
    secret = vault.add(SECRET, session="s1")
    archive = root / "sessions" / "s1" / "turns.jsonl"
    archive.parent.mkdir(parents=True)
    archive.write_text(json.dumps({"role": "user", "content": SECRET}) + "\n")
    commit_all(root, "memory and archive")
    main = app()  # the memex group with every command, as users run it
    out = CliRunner().invoke(
        main, ["--vault", str(root), "erase", secret.id, "--reason", "r", "--purge-history", "--json"]
    )
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert data["git_history"] == "purged" and data["archives"] == ["sessions/s1/turns.jsonl"]
    assert data["files_deleted"] == 2
    assert git(root, "log", "--all", "--reflog", "-S", "Zqorblax", "--format=%H").strip() == ""
    assert "zqorblax" not in all_object_text(root).lower()
    assert git(root, "status", "--porcelain", "--untracked-files=no").strip() == ""


def test_writer_notes_stay_out_of_git(git_vault: Vault) -> None:
    """A clean `memex add` leaves `.memex/writers/<pid>` until the next open
    removes it. Committed with `git add -A`, that removal left the tree dirty
    and `erase --purge-history` refused: "uncommitted changes to tracked files
    would be lost by the rewrite (.memex/writers/25277)"."""
    vault, root = git_vault, git_vault.root
    vault.add("Lunch is at noon on Fridays")
    assert list((root / ".memex" / "writers").iterdir())
    commit_all(root, "a memory")
    assert git(root, "ls-files", ".memex/writers") == ""


def test_purge_history_is_not_blocked_by_a_writer_note_an_older_vault_committed(git_vault: Vault) -> None:
    """A vault made before `.memex/writers/` was ignored may hold a committed
    note; the next command removes it, which must not stop a purge."""
    from memex.erase import git_history

    vault, root = git_vault, git_vault.root
    note = root / ".memex" / "writers" / "999999"
    note.parent.mkdir(exist_ok=True)
    note.write_text("memories/user\n")
    git(root, "add", "-f", ".memex/writers/999999")
    commit_all(root, "an old vault's commit")
    note.unlink()
    git_history.check_clean(root, [])
