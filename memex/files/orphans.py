"""Temp files that a write killed half way left behind (docs/reliability.md).

:func:`memex.files.memory_file.atomic_write` writes ``.memex-<pid>-XXXX.tmp`` next
to its target, then renames it over the target. ``kill -9`` (or a power cut)
between the two leaves the temp file, holding the whole text, beside the
memory. Such a file is never indexed (hidden names are not memory names) and
never committed (the vault's ``.gitignore`` lists ``.memex-*.tmp``), and it
is removed by the next reindex, watcher start, ``doctor --fix`` and erase,
and at the latest by the next open of the vault (memex/files/writers.py);
``doctor`` reports it.

A temp file is an orphan when the process named in it is gone. One whose
writer still runs is left alone: removing it would make that write fail.
Names without a pid (written before the pid was part of the name) are
orphans once older than :data:`LEGACY_AGE_SECONDS`, far longer than any write.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

from memex.files.writers import PREFIX as PREFIX
from memex.files.writers import SUFFIX as SUFFIX
from memex.files.writers import pid_alive
from memex.layout import WRITE_FOLDERS

# Where memex writes files atomically: memory folders and session archives.
FOLDERS = WRITE_FOLDERS
LEGACY_AGE_SECONDS = 60.0
_NAME = re.compile(r"\A\.memex-(?:(\d+)-)?[A-Za-z0-9_]+\.tmp\Z")


def _is_orphan(full: str, name: str, now: float) -> bool:
    match = _NAME.match(name)
    if match is None:
        return False
    pid = match.group(1)
    if pid is not None:
        return int(pid) != os.getpid() and not pid_alive(int(pid))
    try:
        return now - os.lstat(full).st_mtime > LEGACY_AGE_SECONDS
    except OSError:
        return False


def orphans_among(root: Path, rels: list[str]) -> list[str]:
    """Those of ``rels`` (temp-file names a walk already saw) that are orphans."""
    now = time.time()
    return sorted(r for r in rels if _is_orphan(str(root / r), r.rsplit("/", 1)[-1], now))


def find_orphans(root: Path, folders: tuple[str, ...] = FOLDERS) -> list[str]:
    """Vault-relative paths of orphaned temp files, sorted."""
    found: list[str] = []
    now = time.time()
    for top in folders:
        base = root / top
        if not base.is_dir():
            continue
        for folder, dirs, files in os.walk(base):
            dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(folder, d))]
            for name in files:
                if name.startswith(PREFIX) and name.endswith(SUFFIX):
                    full = os.path.join(folder, name)
                    if _is_orphan(full, name, now) and not os.path.islink(full):
                        found.append(os.path.relpath(full, root).replace(os.sep, "/"))
    return sorted(found)


def remove_orphans(root: Path, found: list[str] | None = None) -> list[str]:
    """Delete the orphaned temp files (``found``, or all); returns the vault-relative paths removed."""
    removed: list[str] = []
    for rel in find_orphans(root) if found is None else found:
        try:
            os.unlink(root / rel)
        except FileNotFoundError:
            continue
        except OSError:
            continue  # doctor keeps reporting it
        removed.append(rel)
    return removed
