"""One memory file: parse, serialize, write atomically.

The frontmatter is YAML between ``---`` lines, read with python-frontmatter's
YAML handler but with a loader that keeps timestamps as the strings the user
wrote, and a dumper that keeps key order, so that memex rewriting a file (to
set ``superseded_by``, say) keeps every other key and the body exactly.

Untrusted input is refused before YAML sees it: files over the size cap,
binary files, bytes that are not UTF-8, and YAML that uses anchors or aliases
(the "billion laughs" bomb needs them; memory frontmatter never does).
PyYAML itself is set up in :mod:`memex.files.frontmatter_yaml`, imported
when a file is first read or written.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from memex.files import permissions
from memex.files import writers
from memex.errors import InvalidArgument, MemoryFileError
from memex.faults import point
from memex.layout import MEMEX_DIR

_FRONTMATTER = re.compile(r"\A---[ \t]*\r?\n(.*?)^---[ \t]*(?:\r?\n|\Z)", re.DOTALL | re.MULTILINE)
_EMPTY_FRONTMATTER = re.compile(r"\A---[ \t]*\r?\n---[ \t]*(?:\r?\n|\Z)")

# Keys memex writes, in the order it writes them; unknown keys follow.
KNOWN_KEYS = (
    "id",
    "scope",
    "source",
    "session",
    "source_ref",
    "category",
    "confidence",
    "created",
    "supersedes",
    "superseded_by",
    "entities",
    "relations",
)


@dataclass
class MemoryFile:
    """A memory file's frontmatter (as an ordered dict) and its exact body."""

    meta: dict[str, Any] = field(default_factory=dict)
    body: str = ""
    has_frontmatter: bool = True


# PyYAML composes nested nodes recursively, so a few thousand "[" in a small
# file would raise RecursionError; frontmatter never needs this much depth.
MAX_YAML_DEPTH = 50

# Every token that opens a level comes from one of these characters ("[",
# "{", a "- " entry, a "key:" or "? key"): frontmatter with fewer of them
# than the depth limit cannot nest too deeply.
_LEVEL_CHARS = "[{-:?"


def _check_yaml_safe(fm: str, path: Path) -> None:
    """Refuse anchors/aliases (bombs) and deep nesting before YAML builds anything."""
    if "&" not in fm and "*" not in fm and sum(fm.count(c) for c in _LEVEL_CHARS) <= MAX_YAML_DEPTH:
        return  # no anchor, no alias, too few openers: the token scan cannot object
    _scan_yaml(fm, path)


def _scan_yaml(fm: str, path: Path) -> None:
    """The token scan behind :func:`_check_yaml_safe`."""
    from memex.files import frontmatter_yaml

    frontmatter_yaml.scan(fm, path, MAX_YAML_DEPTH)


def decode(data: bytes, path: Path) -> str:
    """Bytes of a memory file as text, or a clear refusal."""
    if b"\x00" in data[:8192]:
        raise MemoryFileError(path, "binary file (NUL bytes), not a Markdown memory")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MemoryFileError(path, f"not UTF-8 text (byte {exc.start})") from exc
    return text[1:] if text.startswith("\ufeff") else text


def parse(text: str, path: Path) -> MemoryFile:
    """Split and parse a memory file's text."""
    if _EMPTY_FRONTMATTER.match(text):
        return MemoryFile({}, text[_EMPTY_FRONTMATTER.match(text).end() :], True)  # type: ignore[union-attr]
    match = _FRONTMATTER.match(text)
    if match is None:
        if text.startswith("---") and text[3:4] in ("\n", "\r"):
            raise MemoryFileError(path, "frontmatter opened with --- but never closed")
        return MemoryFile({}, text, has_frontmatter=False)
    fm = match.group(1)
    _check_yaml_safe(fm, path)
    from memex.files import frontmatter_yaml  # PyYAML only where a file is read (start-up: docs/benchmarks.md)

    meta = frontmatter_yaml.load(fm, path)
    if meta is None:
        meta = {}
    if not isinstance(meta, dict):
        raise MemoryFileError(path, "frontmatter must be a YAML mapping")
    return MemoryFile({str(k): v for k, v in meta.items()}, text[match.end() :], True)


def read(
    path: Path, max_bytes: int, root: Path | None = None, real_dirs: dict[str, str] | None = None
) -> tuple[MemoryFile, bytes]:
    """Read and parse one file; returns the parsed file and its raw bytes.

    With ``root``, a file that resolves outside it (a link swapped in after
    it was indexed, say) is refused rather than read. ``real_dirs`` lets a
    caller reading many files keep resolved folders (and the root) between
    calls: resolving every path component of every file was a tenth of a
    cold reindex's parsing time.
    """
    if root is not None:
        cache = {} if real_dirs is None else real_dirs
        root_real = _real_dir(str(root), cache)
        if os.path.islink(path):
            real = os.path.realpath(path)
        else:
            real = os.path.join(_real_dir(os.path.dirname(path), cache), os.path.basename(path))
        if os.path.commonpath([root_real, real]) != root_real:
            raise MemoryFileError(path, "symbolic link points outside the vault; not followed")
        if hidden_target(root_real, real):
            raise MemoryFileError(path, HIDDEN_LINK)
    try:
        size = path.stat().st_size
        if size > max_bytes:
            raise MemoryFileError(path, f"file is {size} bytes, over the {max_bytes}-byte cap")
        data = path.read_bytes()
    except OSError as exc:
        raise MemoryFileError(path, f"cannot read: {exc.strerror or exc}") from exc
    if len(data) > max_bytes:
        raise MemoryFileError(path, f"file is over the {max_bytes}-byte cap")
    return parse(decode(data, path), path), data


GONE_SINCE_INDEX = (
    "the file is gone since the index last saw it (moved, renamed or deleted by hand?): "
    "run `memex reindex`, then try again"
)


def read_indexed(path: Path, max_bytes: int, root: Path) -> tuple[MemoryFile, bytes]:
    """:func:`read` for the file the index names for a memory: one that is gone
    since the last index (a file moved by hand, no watcher running) says so
    and what to do, rather than "No such file or directory"."""
    try:
        return read(path, max_bytes, root)
    except MemoryFileError:
        if not os.path.lexists(path):
            raise MemoryFileError(path, GONE_SINCE_INDEX) from None
        raise


# Found by the team fault suite: a teammate pushed `memories/user/x.md -> ../../.memex/erase.key`;
# each clone indexed its own erasure key as a memory (search showed it to agents), and a
# frontmatter rewrite (dedup of two such links) would have written it into a file sync pushes.
HIDDEN_LINK = f"symbolic link into a hidden folder of the vault ({MEMEX_DIR}/, .git/); not followed"


def hidden_target(root_real: str, real: str) -> bool:
    """Whether ``real`` (resolved, inside the vault ``root_real``) lies in one of its hidden
    folders: memex's own files (the erasure key, the index, settings) and git's."""
    rel = os.path.relpath(real, root_real)
    return any(part.startswith(".") for part in rel.split(os.sep))


def _real_dir(folder: str, cache: dict[str, str]) -> str:
    found = cache.get(folder)
    if found is None:
        found = cache[folder] = os.path.realpath(folder)
    return found


def serialize(mf: MemoryFile) -> str:
    """Text of a memory file: known keys first in a fixed order, then the rest."""
    if not mf.has_frontmatter and not mf.meta:
        return mf.body
    ordered = {k: mf.meta[k] for k in KNOWN_KEYS if k in mf.meta}
    ordered.update((k, v) for k, v in mf.meta.items() if k not in ordered)
    from memex.files import frontmatter_yaml

    fm = frontmatter_yaml.dump(ordered)
    body = mf.body
    return f"---\n{fm}\n---\n{body}"


def atomic_write(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` so that readers see the old file or the new one.

    A temp file in the same folder is written, fsynced and renamed over the
    target; the folder is fsynced so the rename itself survives a crash.
    """
    [(tmp, _)] = _write_temps([(path, _encode(path, text))])
    try:
        point("write.temp")
        os.replace(tmp, path)
        point("write.replaced")
    except BaseException:
        _unlink_quietly(tmp)
        raise
    fsync_dir(path.parent)


def atomic_write_many(items: Sequence[tuple[Path, str]]) -> None:
    """Write several files, each as :func:`atomic_write` would, in less time.

    Every text is encoded first (a refusal writes nothing), then every temp
    file is written and fsynced, then all are renamed over their targets and
    each folder touched is fsynced once. A crash at any moment leaves each
    file whole, old or new; temp files it leaves are removed by the next sync
    (memex/files/orphans.py). On an error no temp file is left and the targets
    already renamed stay new (their folders are still fsynced): the caller
    re-indexes every path either way.
    """
    encoded = [(path, _encode(path, text)) for path, text in items]
    temps: list[tuple[str, Path]] = []
    renamed = 0
    try:
        for start in range(0, len(encoded), SYNC_CHUNK):
            temps += _write_temps(encoded[start : start + SYNC_CHUNK])
        point("batch.synced")
        for tmp, path in temps:
            os.replace(tmp, path)
            renamed += 1
            point("batch.replaced")
    except BaseException:
        for tmp, _ in temps[renamed:]:
            _unlink_quietly(tmp)
        raise
    finally:
        # One folder fsync makes all the renames in it durable.
        for folder in dict.fromkeys(path.parent for _, path in temps[:renamed]):
            fsync_dir(folder)


# Temp files fsynced together (and so open at once): fsyncs issued from
# several threads share the file system's journal commits, about five times
# faster than one after another on ext4; the chunk bounds open descriptors.
SYNC_CHUNK = 64
SYNC_THREADS = 8


def _write_temps(chunk: Sequence[tuple[Path, bytes]]) -> list[tuple[str, Path]]:
    """Temp files next to each target holding its bytes, all fsynced: (temp, target) pairs."""
    opened: list[tuple[int, str, Path]] = []
    try:
        for path, data in chunk:
            permissions.private_dir(path.parent)
            fd, tmp = writers.make_temp(path.parent)
            opened.append((fd, tmp, path))
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
        if len(opened) == 1:
            os.fsync(opened[0][0])
        else:
            with ThreadPoolExecutor(min(SYNC_THREADS, len(opened)), thread_name_prefix="memex-fsync") as pool:
                list(pool.map(os.fsync, [fd for fd, _, _ in opened]))
    except BaseException as exc:
        for fd, tmp, _ in opened:
            os.close(fd)  # closed before unlinking: Windows cannot delete an open file
            _unlink_quietly(tmp)
        if isinstance(exc, OSError) and exc.filename is None and opened:
            # os.write and fsync name no file: "No space left on device" alone
            # would not say which memory was not written.
            raise OSError(exc.errno, exc.strerror, str(opened[-1][2])) from exc
        raise
    for fd, _, _ in opened:
        os.close(fd)
    return [(tmp, path) for _, tmp, path in opened]


def _encode(path: Path, text: str) -> bytes:
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:  # lone surrogates, e.g. from undecodable bytes
        raise InvalidArgument("text", f"not valid Unicode at character {exc.start}; {path.name} not written") from exc


def _unlink_quietly(tmp: str) -> None:
    try:
        os.unlink(tmp)
    except FileNotFoundError:
        pass


def fsync_dir(folder: Path) -> None:
    """Make a folder's entries (a rename, an unlink) durable; a no-op where
    folders cannot be opened (not POSIX) or fsync'd."""
    if os.name != "posix":
        return
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
