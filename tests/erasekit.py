"""Helpers for the erasure tests: raw byte scans of every file under a vault,
a secret to erase, git vaults and the command line."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from memex.cli import app
from memex.vault import Vault, init_vault
from tests.fakes import HashEmbedder
from tests.hook_helpers import lexical_only

WORDS = ["Zqorblax", "Xjuimbrelk"]
SECRET = "Zqorblax keeps the Xjuimbrelk storage unit key under the mat"


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, check=True).stdout


@pytest.fixture
def git_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for var, value in (("GIT_AUTHOR_NAME", "t"), ("GIT_AUTHOR_EMAIL", "t@example.org"),
                       ("GIT_COMMITTER_NAME", "t"), ("GIT_COMMITTER_EMAIL", "t@example.org"),
                       ("GIT_CONFIG_GLOBAL", str(tmp_path / "no-gitconfig"))):
        monkeypatch.setenv(var, value)


@pytest.fixture
def git_vault(tmp_path: Path, git_env: None) -> Iterator[Vault]:
    root = init_vault(tmp_path / "gvault", git=True)
    with Vault(root, embedder=HashEmbedder()) as v:
        yield v


def commit_all(root: Path, message: str) -> None:
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", message)


def ids_found(vault: Vault, query: str) -> list[str]:
    return [h.id for h in vault.search(query, limit=50)]


def cli(root: Path, *args: str) -> tuple[int, str]:
    """The command line, lexical only: the test's vaults use the fake embedder."""
    if 'model = "none"' not in (root / ".memex" / "config.toml").read_text():
        lexical_only(root)
    main = app()  # the memex group with every command, as users run it
    out = CliRunner().invoke(main, ["--vault", str(root), *args])
    assert out.exception is None or isinstance(out.exception, SystemExit), out.output
    return out.exit_code, out.output



def vault_bytes(root: Path, skip_git: bool = True) -> dict[str, bytes]:
    """Every regular file under the vault (index, -wal, -shm, caches, logs), raw."""
    out: dict[str, bytes] = {}
    for folder, dirs, files in os.walk(root):
        if skip_git:
            dirs[:] = [d for d in dirs if d != ".git"]
        for name in files:
            full = Path(folder) / name
            if full.is_file() and not full.is_symlink():
                out[full.relative_to(root).as_posix()] = full.read_bytes()
    return out


def files_with_text(root: Path, words: list[str]) -> dict[str, list[str]]:
    """{file: [words found]} with case ignored (ASCII words; bytes lower-cased)."""
    found: dict[str, list[str]] = {}
    for rel, data in vault_bytes(root).items():
        low = data.lower()
        hits = [w for w in words if w.lower().encode("utf-8") in low]
        if hits:
            found[rel] = hits
    return found


def files_with_bytes(root: Path, blob: bytes, window: int = 8, stride: int = 16) -> dict[str, int]:
    """{file: windows found} for ``window``-byte slices of ``blob`` (two float32s each).

    A slice of two adjacent float32 components of a real embedding does not
    occur by chance; finding any means the vector (or part of it) survived.
    """
    slices = [blob[i : i + window] for i in range(0, len(blob) - window + 1, stride)]
    found: dict[str, int] = {}
    for rel, data in vault_bytes(root).items():
        hits = sum(1 for piece in slices if piece in data)
        if hits:
            found[rel] = hits
    return found


def settle(vault: Vault) -> None:
    """Copy the WAL into index.db so that a scan sees what a reader would."""
    vault.backend.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
