"""Helpers for the erasure tests: raw byte scans of every file under a vault."""

from __future__ import annotations

import os
from pathlib import Path

from memex.vault import Vault


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
    vault.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
