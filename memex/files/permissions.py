"""A vault is private to its user: folders 0700, files 0600.

Memory files hold what a user told their agents; ``index.db`` holds every
body again in plain text, and ``sessions/*/turns.jsonl`` whole transcripts.
So every folder memex creates in a vault is made 0700 and every file 0600,
whatever the umask (docs/write-path.md, "A vault is private to its user"). Modes are set when memex creates a
path; an existing path is never changed behind the user's back, but
``memex doctor`` reports each one that is looser (:func:`loose_modes`) and
``memex doctor --fix`` tightens them (:func:`tighten`).

``.git`` is left to git (its objects are read-only 0444 by design); the
vault folder's own 0700 keeps other users out of it.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

DIR_MODE = 0o700
FILE_MODE = 0o600
# Bits that let another user read, write or enter.
_OTHERS = 0o077
_SKIP_DIRS = frozenset({".git"})


def private_dir(path: Path) -> None:
    """``mkdir -p`` where each folder created is 0700 (existing ones are left alone)."""
    missing: list[Path] = []
    folder = path
    while not folder.exists():
        missing.append(folder)
        if folder.parent == folder:
            break
        folder = folder.parent
    for created in reversed(missing):
        try:
            os.mkdir(created, DIR_MODE)
        except FileExistsError:  # another process made it meanwhile
            continue
        os.chmod(created, DIR_MODE)  # mkdir's mode is masked by the umask


def private_file(path: Path) -> None:
    """Make a file this process just created 0600."""
    try:
        if stat.S_IMODE(os.stat(path).st_mode) & _OTHERS:
            os.chmod(path, FILE_MODE)
    except OSError:
        pass  # not ours, or gone: doctor reports what stays loose


def create_private(path: Path) -> None:
    """Create ``path`` empty with mode 0600 if it does not exist yet, so that
    whatever opens it next (SQLite, an append) finds it private."""
    private_dir(path.parent)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
    except FileExistsError:
        return
    os.close(fd)
    os.chmod(path, FILE_MODE)


def write_private(path: Path, text: str) -> None:
    """Write (replace) a small file with mode 0600; for temp files that are
    then renamed into place."""
    private_dir(path.parent)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
    private_file(path)


def open_append(path: Path, binary: bool = False) -> IO[Any]:
    """Open for appending, creating the file (and its folders) private."""
    create_private(path)
    return open(path, "ab") if binary else open(path, "a", encoding="utf-8")


@dataclass(frozen=True)
class LooseMode:
    path: str  # relative to the vault, "." for the vault folder itself
    mode: int
    wanted: int

    @property
    def shown(self) -> str:
        """The path for people and JSON: a name that is not UTF-8 gets ``\\xNN`` escapes."""
        return os.fsencode(self.path).decode("utf-8", "backslashreplace")

    def as_dict(self) -> dict[str, str]:
        return {"path": self.shown, "mode": f"{self.mode:04o}", "wanted": f"{self.wanted:04o}"}

    def __str__(self) -> str:
        kind = "folder" if self.wanted == DIR_MODE else "file"
        return f"{self.shown}: {kind} mode {self.mode:04o}, other users can reach it (wanted {self.wanted:04o})"


def loose_modes(root: Path) -> list[LooseMode]:
    """Every folder and file of the vault (``.git`` aside) that other users
    may read, write or enter; symbolic links are not followed."""
    if os.name != "posix":
        return []
    out: list[LooseMode] = []
    base = str(root)

    def check(full: str, wanted: int) -> None:
        try:
            mode = stat.S_IMODE(os.lstat(full).st_mode)
        except OSError:
            return
        if mode & _OTHERS:
            rel = os.path.relpath(full, base).replace(os.sep, "/")
            out.append(LooseMode(rel, mode, wanted))

    check(base, DIR_MODE)
    for folder, dirs, files in os.walk(base):
        dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS and not os.path.islink(os.path.join(folder, d)))
        for d in dirs:
            check(os.path.join(folder, d), DIR_MODE)
        for name in sorted(files):
            full = os.path.join(folder, name)
            if not os.path.islink(full):
                check(full, FILE_MODE)
    return out


def tighten(root: Path) -> list[LooseMode]:
    """Set what :func:`loose_modes` finds to 0700 / 0600; returns what was changed."""
    changed = []
    for item in loose_modes(root):
        try:
            # Only the others' bits go: the owner's (an executable script) stay.
            os.chmod(root / item.path, item.mode & ~_OTHERS)
        except OSError:
            continue  # owned by someone else: it stays in the report
        changed.append(item)
    return changed
