"""git changes many files at once; afterwards the index matches the working tree exactly."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from memex.vault import Vault, init_vault
from tests.fakes import HashEmbedder
from tests.watchkit import found, index_matches_disk, running_watcher, wait_for

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def git(repo: Path, *args: str) -> str:
    out = subprocess.run(
        ["git", "-c", "commit.gpgsign=false", "-c", "core.hooksPath=/dev/null", *args],
        cwd=repo, check=True, capture_output=True, text=True,
    )
    return out.stdout.strip()


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Vault]:
    for key, value in (("GIT_AUTHOR_NAME", "t"), ("GIT_AUTHOR_EMAIL", "t@example.org"),
                       ("GIT_COMMITTER_NAME", "t"), ("GIT_COMMITTER_EMAIL", "t@example.org"),
                       ("GIT_CONFIG_GLOBAL", "/dev/null"), ("GIT_CONFIG_NOSYSTEM", "1")):
        monkeypatch.setenv(key, value)
    root = init_vault(tmp_path / "vault", git=True)
    assert (root / ".git").is_dir()
    with Vault(root, embedder=HashEmbedder()) as vault:
        for i in range(20):
            vault.add(f"Shared memory number {i} about topic{i} and the main branch")
        git(root, "add", "-A")
        git(root, "commit", "-qm", "base")
        yield vault


def _files(vault: Vault) -> list[Path]:
    return sorted((vault.root / "memories").rglob("*.md"))


def test_checkout_of_another_branch_and_back(repo: Vault) -> None:
    root = repo.root
    base = git(root, "rev-parse", "--abbrev-ref", "HEAD")
    git(root, "checkout", "-qb", "other")
    files = _files(repo)
    files[0].write_text(files[0].read_text().replace("main branch", "salamander branch"))
    files[1].unlink()
    files[2].rename(files[2].with_name("renamed-on-other.md"))
    (root / "memories" / "user" / "only-on-other.md").write_text("exists only on the other branch: axolotl\n")
    (root / "memories" / "elsewhere").mkdir()
    files[3].rename(root / "memories" / "elsewhere" / files[3].name)
    git(root, "add", "-A")
    git(root, "commit", "-qm", "other")
    git(root, "checkout", "-q", base)
    repo.reindex()
    assert index_matches_disk(repo)
    with running_watcher(root) as watcher:
        git(root, "checkout", "-q", "other")
        wait_for(lambda: found(repo, "axolotl"), what="checkout of the other branch")
        wait_for(lambda: index_matches_disk(repo), what="index == working tree after checkout")
        assert found(repo, "salamander") == [files[0].relative_to(root).as_posix()]

        git(root, "checkout", "-q", base)
        wait_for(lambda: not found(repo, "axolotl"), what="checkout back")
        wait_for(lambda: index_matches_disk(repo), what="index == working tree after checking out back")
        assert found(repo, "salamander") == []
        assert repo.backend.conn.execute("SELECT count(*) FROM memories").fetchone()[0] == 20
        assert watcher.totals["failures"] == 0


def test_stash_and_stash_pop(repo: Vault) -> None:
    root = repo.root
    files = _files(repo)
    with running_watcher(root):
        for f in files[:3]:
            f.write_text(f.read_text().replace("main branch", "stashed chameleon edit"))
        wait_for(lambda: len(found(repo, "chameleon")) == 3, what="the edits")
        git(root, "stash")
        wait_for(lambda: not found(repo, "chameleon"), what="git stash")
        wait_for(lambda: index_matches_disk(repo), what="index == working tree after stash")
        git(root, "stash", "pop")
        wait_for(lambda: len(found(repo, "chameleon")) == 3, what="git stash pop")
        wait_for(lambda: index_matches_disk(repo), what="index == working tree after pop")


def test_revert(repo: Vault) -> None:
    root = repo.root
    files = _files(repo)
    files[5].write_text(files[5].read_text().replace("main branch", "a mistaken iguana edit"))
    files[6].unlink()
    git(root, "commit", "-qam", "mistake")
    repo.reindex()
    with running_watcher(root):
        git(root, "revert", "--no-edit", "HEAD")
        wait_for(lambda: not found(repo, "iguana"), what="git revert")
        wait_for(lambda: index_matches_disk(repo), what="index == working tree after revert")
        assert repo.backend.conn.execute("SELECT count(*) FROM memories").fetchone()[0] == 20


def test_pull(repo: Vault, tmp_path: Path) -> None:
    root = repo.root
    branch = git(root, "rev-parse", "--abbrev-ref", "HEAD")
    upstream = tmp_path / "upstream"
    git(tmp_path, "clone", "-q", str(root), str(upstream))
    up_files = sorted((upstream / "memories").rglob("*.md"))
    for f in up_files[:4]:
        f.write_text(f.read_text().replace("main branch", "pulled toucan change"))
    up_files[4].unlink()
    (upstream / "memories" / "team").mkdir()
    for i in range(10):
        (upstream / "memories" / "team" / f"t{i}.md").write_text(f"team memory {i} from upstream: puffin{i}\n")
    git(upstream, "add", "-A")
    git(upstream, "commit", "-qm", "upstream work")
    with running_watcher(root):
        git(root, "pull", "-q", "--no-rebase", str(upstream), branch)
        wait_for(lambda: len(found(repo, "toucan")) == 4, what="git pull")
        wait_for(lambda: index_matches_disk(repo), what="index == working tree after pull")
        assert all(found(repo, f"puffin{i}") for i in range(10))
        assert repo.backend.conn.execute("SELECT count(*) FROM memories").fetchone()[0] == 29
