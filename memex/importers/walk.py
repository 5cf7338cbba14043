"""The files of an imported folder, and reading one only when it is the
folder's own.

An import reads what it was given and nothing else, as the indexer does for
the vault (memex/index/scan.py): a symbolic link whose target lies outside
the imported folder is refused (``creds.md -> ~/.aws/credentials`` would
otherwise become a memory, and reach a team's remote at the next sync); the
vault is never walked (its memories are memories already) and nothing in its
``.memex/`` folder (the erase key, settings, the index) is ever read, even
through a link; a FIFO or device is not read (it could block forever); a
name that is not UTF-8 cannot be a source_ref and is reported, escaped, as
the indexer reports it.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

from memex.errors import InvalidArgument
from memex.layout import MEMEX_DIR
from memex.records import is_text_name, shown_name

# Folders never walked: version control, dependencies, caches, editors' state.
SKIP_DIRS = frozenset({".git", ".hg", ".svn", "node_modules", ".venv", "venv", "__pycache__", ".obsidian", ".trash"})
MAX_NOTE_BYTES = 4 * 1024 * 1024  # a Markdown "note" larger than this is not a note


def _inside(folder: str, real: str) -> bool:
    return os.path.commonpath([folder, real]) == folder


class Confinement:
    """Where an import may read: under ``root`` (None: only the file named),
    never in ``vault`` (its folder is not walked, its ``.memex/`` not read)."""

    def __init__(self, root: Path | None, vault: Path | None) -> None:
        self.root = os.path.realpath(root) if root is not None else None
        self.vault = os.path.realpath(vault) if vault is not None else None
        self.meta = os.path.join(self.vault, MEMEX_DIR) if self.vault is not None else None

    def walked(self, folder: str, name: str) -> bool:
        """Whether the walk goes into ``folder/name`` (not the vault itself)."""
        return self.vault is None or os.path.realpath(os.path.join(folder, name)) != self.vault

    def real(self, path: Path) -> str:
        """Where ``path`` really is, if it may be read; else why not."""
        if not is_text_name(str(path)):
            raise InvalidArgument(shown_name(str(path)), "name is not valid UTF-8; not imported (rename it to import it)")
        real = os.path.realpath(path)
        if self.meta is not None and _inside(self.meta, real):
            raise InvalidArgument(str(path), f"is in the vault's {MEMEX_DIR} folder; never imported")
        if self.root is not None and not _inside(self.root, real):
            raise InvalidArgument(str(path), "symbolic link points outside the imported folder; not followed")
        return real


def read_text(path: Path, where: Confinement) -> str:
    """A note's text, read from its real place once that place is checked."""
    real = where.real(path)
    try:
        info = os.stat(real)
        if not stat.S_ISREG(info.st_mode):
            raise InvalidArgument(str(path), "is not a regular file; not imported")
        if info.st_size > MAX_NOTE_BYTES:
            raise InvalidArgument(str(path), f"is larger than {MAX_NOTE_BYTES // (1024 * 1024)} MiB; not imported")
        # O_NONBLOCK: a FIFO swapped in after the stat must not block the import.
        fd = os.open(real, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(fd, "rb") as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                raise InvalidArgument(str(path), "is not a regular file; not imported")
            data = handle.read(MAX_NOTE_BYTES + 1)
    except OSError as exc:
        raise InvalidArgument(str(path), exc.strerror or str(exc)) from exc
    if len(data) > MAX_NOTE_BYTES:
        raise InvalidArgument(str(path), f"is larger than {MAX_NOTE_BYTES // (1024 * 1024)} MiB; not imported")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InvalidArgument(str(path), f"is not UTF-8 text (byte {exc.start})") from exc


def markdown_files(
    root: Path, where: Confinement, limit: int | None = None, hidden_ok: tuple[str, ...] = (),
    names: tuple[str, ...] = (), suffixes: tuple[str, ...] = (), markdown: bool = True,
) -> Iterator[Path]:
    """Markdown files under ``root`` (hidden files and folders skipped, but
    ``hidden_ok`` folders; with ``markdown`` False, no Markdown file for
    being one), and files with one of ``names`` or ``suffixes``.
    Links to folders are not followed (os.walk's default); links to files are
    yielded, for :func:`read_text` to check."""
    count = 0
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(
            d for d in dirs
            if d not in SKIP_DIRS and (not d.startswith(".") or d in hidden_ok) and where.walked(folder, d)
        )
        for name in sorted(files):
            markdown_file = markdown and name.lower().endswith((".md", ".markdown")) and not name.startswith(".")
            if markdown_file or name in names or (suffixes and name.lower().endswith(suffixes)):
                yield Path(folder) / name
                count += 1
                if limit is not None and count >= limit:
                    return
