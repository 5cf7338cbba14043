"""Which processes write where, so a killed writer's temp files go at the next open.

:func:`memex.files.memory_file.atomic_write` leaves ``.memex-<pid>-XXXX.tmp``, the
whole text of a memory, beside its target when it is killed between writing
and renaming (memex/files/orphans.py). A reindex, a watcher start, ``doctor
--fix`` and erase find such files by walking the vault (36 ms at 10k files);
a one-shot ``search`` or ``add`` must not pay that walk. So each process
notes, once per folder, the folders it writes temp files into, in
``.memex/writers/<pid>`` (an append, not fsynced: ``kill -9`` keeps the page
cache). Opening a vault lists that small folder; for each writer that is no
longer running it removes that writer's temp files in the folders it named,
then its note. A clean exit leaves a note too: the next open clears it
after one folder listing per folder it names.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from memex.layout import VaultPaths, is_vault

# Temp files are named PREFIX + pid + "-" + random + SUFFIX: the pid tells a
# later process whether the writer still runs.
PREFIX = ".memex-"
SUFFIX = ".tmp"
_noted: set[str] = set()  # folders this process has noted (absolute)
_vault_of: dict[str, Path | None] = {}  # folder -> its vault's root, cached


def _vault_root(folder: Path) -> Path | None:
    key = str(folder)
    if key not in _vault_of:
        found: Path | None = None
        for parent in (folder, *folder.parents):
            if is_vault(parent):
                found = parent
                break
        _vault_of[key] = found
    return _vault_of[key]


def note_folder(folder: Path) -> None:
    """Record that this process writes temp files in ``folder`` (once per folder)."""
    folder = folder.absolute()
    if str(folder) in _noted:
        return
    root = _vault_root(folder)
    if root is None:
        return  # not inside a vault: nothing to clean up after
    from memex.files import permissions  # lazily: memory_file imports this module

    note = VaultPaths(root).writers / str(os.getpid())
    try:
        with permissions.open_append(note) as handle:
            handle.write(os.path.relpath(folder, root) + "\n")
    except OSError as exc:  # a full disk fails at the flush, which names no file
        raise OSError(exc.errno, exc.strerror, exc.filename or str(note)) from exc
    _noted.add(str(folder))


def make_temp(folder: Path) -> tuple[int, str]:
    """``mkstemp`` in ``folder`` under this process's temp name, the folder
    noted first (so an open after a kill finds what it left)."""
    note_folder(folder)
    return tempfile.mkstemp(prefix=f"{PREFIX}{os.getpid()}-", suffix=SUFFIX, dir=folder)


def pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    except OSError:
        return False
    return True


def sweep(root: Path) -> list[str]:
    """Remove the temp files of writers that no longer run, and their notes.

    Returns the vault-relative paths of the temp files removed. Costs one
    listing of ``.memex/writers/`` when no writer died.
    """
    notes = VaultPaths(root).writers
    try:
        names = os.listdir(notes)
    except OSError:
        return []
    removed: list[str] = []
    for name in names:
        if not name.isdigit() or int(name) == os.getpid() or pid_alive(int(name)):
            continue
        note = notes / name
        try:
            folders = set(note.read_text(encoding="utf-8").splitlines())
        except OSError:
            continue
        prefix = f"{PREFIX}{name}-"
        for rel in sorted(folders):
            folder = (root / rel).resolve()
            if rel.startswith("..") or not folder.is_relative_to(root.resolve()):
                continue  # a note never points out of the vault; ignore one that does
            try:
                entries = os.listdir(folder)
            except OSError:
                continue
            for entry in entries:
                if entry.startswith(prefix) and entry.endswith(SUFFIX):
                    try:
                        os.unlink(folder / entry)
                    except OSError:
                        continue
                    removed.append(f"{rel}/{entry}".removeprefix("./"))
        try:
            os.unlink(note)
        except OSError:
            pass
    return removed
