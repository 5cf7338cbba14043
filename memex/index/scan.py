"""The file side of a sync: which files are memories, the walk, reading one.

:func:`walk` lists every memory file under ``memories/`` with one ``lstat``
each, so a no-change sync of a large vault costs little more than those
system calls; :func:`read_record` reads and parses one file into the
:class:`~memex.records.Record` the index stores (docs/design.md, "Who owns
what"). Both are used by the indexer (:mod:`memex.index.indexer`), and the
walk also by the watcher (a moved folder), doctor and erasure.

Symbolic links are followed only inside the vault, and a link to a file
or folder that is indexed itself is refused: indexing both would make one
memory two (docs/vault.md). A folder linked to elsewhere in the vault
(``memories/user`` -> ``notes/``) is walked as if it were there, each file
once, under the link's path; the writers (``Vault.add``,
``Indexer.index_paths``) ask :func:`refusal` so that they and the walk
agree on every path (found from outside: such a link made every search
report a file changed since the last index).
"""

from __future__ import annotations

import os
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path

from memex.config import Config
from memex.files import memory_file, orphans
from memex.layout import MEMORIES_DIR
from memex.records import BAD_NAME, Record, build_record, is_text_name, shown_name

# Timestamps are as coarse as the kernel's tick on Linux and 1-2 s on HFS+
# and FAT: a file read less than this after its mtime could be rewritten with
# the same size and mtime. Such a row is re-hashed by the next sync (git calls
# these entries "racily clean").
RACY_NS = 2_000_000_000


def is_memory_name(name: str) -> bool:
    """Markdown files only; hidden, temp, swap and backup files never."""
    return (
        name.endswith(".md")
        and not name.startswith((".", "#", "~"))
        and not name.endswith("~")
    )


def is_regular_file(path: Path) -> bool:
    return not os.path.islink(path) and os.path.isfile(path)


def is_inside(root: Path, full: Path) -> bool:
    """Whether ``full`` resolves to a place inside the vault ``root``."""
    root_real = os.path.realpath(root)
    return os.path.commonpath([root_real, os.path.realpath(full)]) == root_real


@dataclass
class Walk:
    """What one walk of ``memories/`` found."""

    found: dict[str, os.stat_result] = field(default_factory=dict)  # memory file -> its stat
    errors: list[dict[str, str]] = field(default_factory=list)  # links and names refused
    temp_names: list[str] = field(default_factory=list)  # temp files a killed write may have left


def walk(root: Path) -> Walk:
    """Every memory file under ``memories/`` with its stat, plus link errors."""
    out = Walk()
    base = root / MEMORIES_DIR
    root_real = os.path.realpath(root)
    base_real = os.path.realpath(base)
    if os.path.islink(base) and os.path.commonpath([root_real, base_real]) != root_real:
        out.errors.append({"path": MEMORIES_DIR, "reason": OUTSIDE})
        return out
    # followlinks: os.walk descends only into the linked folders kept below.
    for folder, dirs, files in os.walk(base, followlinks=True):
        rel_folder = os.path.relpath(folder, root).replace(os.sep, "/")
        keep = []
        for d in dirs:
            if d.startswith("."):
                continue
            if not is_text_name(d):  # its files could not be named in the index either
                out.errors.append({"path": shown_name(f"{rel_folder}/{d}"), "reason": f"folder {BAD_NAME}"})
                continue
            full = os.path.join(folder, d)
            if os.path.islink(full):
                why = _folder_link(root_real, base_real, os.path.realpath(folder), full)
                if why is not None:
                    out.errors.append({"path": f"{rel_folder}/{d}", "reason": why})
                    continue
            keep.append(d)
        dirs[:] = sorted(keep)
        for name in files:
            if not is_memory_name(name):
                if name.startswith(orphans.PREFIX) and name.endswith(orphans.SUFFIX):
                    out.temp_names.append(f"{rel_folder}/{name}")
                continue
            if not is_text_name(name):
                out.errors.append({"path": shown_name(f"{rel_folder}/{name}"), "reason": f"file {BAD_NAME}"})
                continue
            _visit(os.path.join(folder, name), f"{rel_folder}/{name}", root_real, base_real, out)
    return out


def _folder_link(root_real: str, base_real: str, parent_real: str, full: str) -> str | None:
    """Why the walk does not follow the folder link ``full`` (in the folder
    whose real path is ``parent_real``), or None: it is followed."""
    target = os.path.realpath(full)
    if os.path.commonpath([root_real, target]) != root_real:
        return OUTSIDE
    if memory_file.hidden_target(root_real, target):
        return memory_file.HIDDEN_LINK
    if os.path.commonpath([base_real, target]) == base_real:
        # Its target is walked too; indexing both would make one memory two.
        where = os.path.relpath(target, root_real).replace(os.sep, "/")
        return f"symbolic link to {where}, which is indexed itself"
    if os.path.commonpath([target, parent_real]) == target or os.path.commonpath([target, base_real]) == target:
        return "symbolic link to a folder that holds it (a loop); not followed"
    return None


def refusal(root: Path, rel: str) -> str | None:
    """Why the walk would not find the memory file at ``rel`` (vault-relative,
    under ``memories/``; it need not exist yet) through the symbolic links on
    its way, or None. A few lstat calls: a write asks it for each file."""
    root_real = os.path.realpath(root)
    base = os.path.join(root, MEMORIES_DIR)
    base_real = os.path.realpath(base)
    if os.path.commonpath([root_real, base_real]) != root_real:
        return OUTSIDE
    parts = rel.split("/")
    if parts[0] != MEMORIES_DIR:
        return None
    folder = base
    for part in parts[1:-1]:
        full = os.path.join(folder, part)
        if os.path.islink(full):
            why = _folder_link(root_real, base_real, os.path.realpath(folder), full)
            if why is not None:
                return why
        folder = full
    out = Walk()
    full = os.path.join(folder, parts[-1])
    if os.path.lexists(full):
        _visit(full, rel, root_real, base_real, out)
    return out.errors[0]["reason"] if out.errors else None


OUTSIDE = "symbolic link points outside the vault; not followed"


def _visit(full: str, rel: str, root_real: str, base_real: str, out: Walk) -> None:
    try:
        # One lstat per file: a no-change sync of 10k files is mostly these
        # system calls (islink + stat was two).
        lst = os.lstat(full)
        if not stat.S_ISLNK(lst.st_mode):
            out.found[rel] = lst
            return
        target = os.path.realpath(full)
        if os.path.commonpath([root_real, target]) != root_real:
            out.errors.append({"path": rel, "reason": OUTSIDE})
            return
        if memory_file.hidden_target(root_real, target):
            out.errors.append({"path": rel, "reason": memory_file.HIDDEN_LINK})
            return
        if os.path.commonpath([base_real, target]) == base_real:
            # Its target is walked too; indexing both would make one memory two.
            where = os.path.relpath(target, root_real).replace(os.sep, "/")
            out.errors.append({"path": rel, "reason": f"symbolic link to {where}, which is indexed itself"})
            return
        out.found[rel] = os.stat(full)
    except (OSError, ValueError) as exc:
        out.errors.append({"path": rel, "reason": f"cannot stat: {exc}"})


def read_record(root: Path, rel: str, config: Config, real_dirs: dict[str, str]) -> Record:
    """Read and parse one memory file (``real_dirs``: resolved folders, reused
    within one run; see :func:`memex.files.memory_file.read`)."""
    mf, raw = memory_file.read(root / rel, config.max_file_bytes, root, real_dirs)
    # Re-stat after reading: the bytes we hold belong to this size/mtime.
    st = os.stat(root / rel)
    rec = build_record(rel, mf, raw, st, config.default_scope)
    rec.racy = time.time_ns() - st.st_mtime_ns < RACY_NS
    return rec
