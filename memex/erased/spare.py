"""A spare copy of what forgetting needs, kept in git's own folder (docs/forgetting.md).

The erasure key and the journals of the erased list and the audit log are
git-ignored files under ``.memex/`` (memex/erased/mirror.py): git's restores
never touch them, but ``git clean -fdx`` deletes them, and a ``git worktree
add`` of an older commit has none of them. Without the key the erased list
cannot be checked at all (every command stops); without the journal an erased
file git brought back with an older list would be indexed again.

So when the vault is inside a git work tree, memex keeps a spare copy of the
three in the repository's common git folder, ``<.git>/memex/<vault>/``,
which no git command cleans, checks out or restores, and which every linked
work tree of the repository shares. ``<vault>`` is a digest of the vault's
path inside its work tree, the same in each linked work tree. The spare is
per clone: ``git clone`` does not copy it. A copy of the whole folder (a
backup) holds it, as it holds ``.memex/erase.key``.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from memex.files import permissions
from memex.layout import GIT_SPARE_DIR

_GIT = ".git"


def folder(memex_dir: Path) -> Path | None:
    """Where the vault's spare copies live; None when the vault is in no git work tree."""
    try:
        root = memex_dir.parent.resolve()
    except OSError:
        return None
    for top in (root, *root.parents):
        dot = top / _GIT
        try:
            if dot.is_dir():
                common = dot
            elif dot.is_file():
                common = _common_dir(dot)
            else:
                continue
        except (OSError, UnicodeDecodeError, ValueError):
            return None  # a .git we cannot read: no spare, the .memex/ copies still hold
        if not common.is_dir():
            return None  # a linked work tree whose repository is gone: nowhere to keep a spare
        where = root.relative_to(top).as_posix()
        return common / GIT_SPARE_DIR / hashlib.sha256(where.encode("utf-8")).hexdigest()[:16]
    return None


def _common_dir(dot: Path) -> Path:
    """The repository folder a ``.git`` file (a linked work tree, a submodule) points at."""
    text = dot.read_text(encoding="utf-8").strip()
    if not text.startswith("gitdir:"):
        raise ValueError(f"{dot}: not a gitdir file")
    gitdir = (dot.parent / text[len("gitdir:"):].strip()).resolve()
    common = gitdir / "commondir"  # linked work trees name the main repository's folder here
    if common.is_file():
        return (gitdir / common.read_text(encoding="utf-8").strip()).resolve()
    return gitdir


def read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None


def put(path: Path, text: str) -> None:
    """Write a spare file whole (write a temp file, rename), private; failures are not fatal."""
    try:
        temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        permissions.write_private(temp, text + "\n")
        os.replace(temp, path)
    except OSError:
        pass  # a read-only .git (say): the copies under .memex/ still hold
