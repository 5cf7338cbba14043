"""How two versions of a memory file merge, and the git merge driver that applies it.

Rules (docs/team.md, "Merge rules"), three-way against the common version:

- a key (or the body) changed on one side only takes that change;
- ``entities`` and ``relations`` merge as sets: what either side added is
  kept, what one side removed is gone unless the other side added it;
- ``supersedes`` / ``superseded_by`` changed on both sides: a link set on
  either side is kept (a memory superseded on one clone stays superseded);
  two different links keep the smaller id (the other memory keeps its own
  ``supersedes`` line, so no link is lost);
- ``confidence`` changed on both sides: the newer side's value (the side
  whose last commit touching the file is later); with no time to go by,
  the higher value;
- any other key changed on both sides: the newer side's value, else the
  smaller one as YAML writes it (so the rule does not depend on which side
  git calls "ours");
- the body changed on both sides: both versions are kept. The file keeps
  the newer body under its id; the other body becomes a second memory in
  the same folder, with a new id derived from the original id and its text
  (the same conflict resolved twice gives the same file) and the key
  ``conflict_of: <original id>``; ``memex sync`` reports the pair with the
  suggestion to supersede one by the other. No conflict marker is ever
  written.

The erased list (``.memex/erased.txt``) merges as a union of lines; when one
side allowed a text back and the other erased it again, the erasure wins.

Git calls the driver as ``python -m memex.team.merge memory %O %A %B %P``
(``erased`` for the list) and reads the result from ``%A``; exit 0 means
merged. ``memex sync`` registers it (memex/team/wiring.py).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from memex.errors import MemoryFileError
from memex.layout import MEMORIES_DIR
from memex.files.memory_file import MemoryFile, parse, serialize

CONFLICT_KEY = "conflict_of"
SET_KEYS = ("entities", "relations")
LINK_KEYS = ("supersedes", "superseded_by")
# The local branch tip before a sync's rebase: lets the driver tell which side is newer.
LOCAL_ENV = "MEMEX_SYNC_LOCAL"
_MISSING = object()
CONFLICT_ID = re.compile(r"\Ac[0-9a-f]{25}\Z")  # what conflict_id() makes


@dataclass
class Merged:
    """The merged file, and a second memory when both sides changed the body."""

    text: str
    extra_name: str | None = None
    extra_text: str | None = None
    conflict_id: str | None = None  # the second memory's id
    kept_id: str | None = None  # the id that stays at the path


def _three_way(base: Any, ours: Any, theirs: Any) -> tuple[bool, Any]:
    """(clean, value): the value when at most one side changed it."""
    if ours == theirs:
        return True, ours
    if ours == base:
        return True, theirs
    if theirs == base:
        return True, ours
    return False, None


def _key(item: Any) -> str:
    return json.dumps(item, sort_keys=True, ensure_ascii=False, default=str)


def _merge_set(base: Any, ours: Any, theirs: Any) -> Any:
    """Set merge of two lists: additions from both sides, removals from either."""
    lists = [v if isinstance(v, list) else ([] if v is _MISSING or v is None else [v]) for v in (base, ours, theirs)]
    b, o, t = ({_key(x) for x in lst} for lst in lists)
    out: list[Any] = []
    seen: set[str] = set()
    for item in lists[1] + lists[2]:
        k = _key(item)
        if k in seen:
            continue
        if k in b and not (k in o and k in t):
            continue  # removed on one side
        seen.add(k)
        out.append(item)
    if not out and ours is _MISSING and theirs is _MISSING:
        return _MISSING
    return out


def _pick(key: str, ours: Any, theirs: Any, newer: str | None) -> Any:
    """The value of a key both sides changed (see the module doc)."""
    if key in LINK_KEYS:
        present = [v for v in (ours, theirs) if v is not _MISSING and v not in (None, "")]
        if not present:
            return ours if newer != "theirs" else theirs
        return min(present, key=str)
    if newer == "ours":
        return ours
    if newer == "theirs":
        return theirs
    if key == "confidence" and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (ours, theirs)):
        return max(ours, theirs)
    candidates = [v for v in (ours, theirs) if v is not _MISSING]
    return min(candidates, key=_key) if candidates else _MISSING


def merge_meta(base: dict[str, Any], ours: dict[str, Any], theirs: dict[str, Any], newer: str | None) -> dict[str, Any]:
    """Three-way merge of two frontmatters (key order: ours, then keys only theirs has)."""
    out: dict[str, Any] = {}
    for key in list(dict.fromkeys([*ours, *theirs, *base])):
        b, o, t = base.get(key, _MISSING), ours.get(key, _MISSING), theirs.get(key, _MISSING)
        if key in SET_KEYS:
            value = _merge_set(b, o, t)
        else:
            clean, value = _three_way(b, o, t)
            if not clean:
                value = _pick(key, o, t, newer)
        if value is not _MISSING:
            out[key] = value
    return out


def _parse(text: str, path: str) -> MemoryFile | None:
    try:
        return parse(text, Path(path))
    except MemoryFileError:
        return None


def conflict_id(memory_id: str, body: str) -> str:
    """The id of the second memory a body conflict makes: the same for the same conflict."""
    digest = hashlib.sha256(f"{memory_id}\0{body}".encode("utf-8")).hexdigest()
    return "c" + digest[:25]


def _own_id(mf: MemoryFile, path: str) -> str:
    from memex.records import path_id

    value = mf.meta.get("id")
    rel = PurePosixPath(path)
    # path_id is made from the vault-relative path (memories/...).
    parts = rel.parts[rel.parts.index(MEMORIES_DIR):] if MEMORIES_DIR in rel.parts else rel.parts
    return str(value) if value not in (None, "") else path_id(PurePosixPath(*parts).as_posix())


def _extra(path: str, memory_id: str, meta: dict[str, Any], body: str) -> tuple[str, str, str]:
    """(file name, text, id) of the memory that keeps the other body."""
    from memex.files.names import slug

    new_id = conflict_id(memory_id, body)
    extra_meta = {k: v for k, v in meta.items() if k not in ("supersedes", CONFLICT_KEY)}
    extra_meta["id"] = new_id
    extra_meta[CONFLICT_KEY] = memory_id
    name = f"{slug(body)}-{new_id[-6:]}.md"
    if name == PurePosixPath(path).name:
        name = f"{slug(body)}-{new_id}.md"
    return name, serialize(MemoryFile(extra_meta, body, True)), new_id


def merge_memory(base: str | None, ours: str, theirs: str, path: str, newer: str | None = None) -> Merged:
    """Merge two versions of the memory file at ``path`` (``newer``: "ours", "theirs" or None)."""
    if ours == theirs:
        return Merged(ours)
    o, t = _parse(ours, path), _parse(theirs, path)
    b = _parse(base, path) if base else MemoryFile({}, "", False)
    if o is None or t is None or b is None:
        # A side that is not a memory file memex can read: keep both texts whole.
        keep, other = (theirs, ours) if newer == "theirs" else (ours, theirs)
        stem = PurePosixPath(path).stem
        tag = hashlib.sha256(other.encode("utf-8")).hexdigest()[:6]
        return Merged(keep, f"{stem}-conflict-{tag}.md", other)
    base_body: str | None = b.body if base else None
    clean, body = _three_way(base_body, o.body, t.body)
    meta = merge_meta(b.meta, o.meta, t.meta, newer)
    has_fm = o.has_frontmatter or t.has_frontmatter or bool(meta)
    if clean:
        return Merged(serialize(MemoryFile(meta, body, has_fm)))
    keep, other = (t.body, o.body) if newer == "theirs" else (o.body, t.body)
    if newer is None and other < keep:
        keep, other = other, keep  # no time to go by: an order that does not depend on the side
    memory_id = _own_id(o, path)
    name, text, new_id = _extra(path, memory_id, meta, other)
    return Merged(serialize(MemoryFile(meta, keep, has_fm)), name, text, new_id, memory_id)


def split_markers(text: str) -> tuple[str, str] | None:
    """The two sides of a file holding git's conflict markers (a merge without memex's
    driver: plain git on a clone where ``memex sync`` never ran); None when it holds none
    or they are not well formed."""
    sides: tuple[list[str], list[str]] = ([], [])
    state = "both"
    found = False
    for line in text.splitlines(keepends=True):
        if line.startswith("<<<<<<<") and state == "both":
            state, found = "ours", True
        elif line.startswith("|||||||") and state == "ours":
            state = "base"
        elif line.startswith("=======") and state in ("ours", "base") and line.rstrip("\r\n") == "=======":
            state = "theirs"
        elif line.startswith(">>>>>>>") and state == "theirs":
            state = "both"
        elif state == "both":
            sides[0].append(line)
            sides[1].append(line)
        elif state == "ours":
            sides[0].append(line)
        elif state == "theirs":
            sides[1].append(line)
    if not found or state != "both":
        return None
    return "".join(sides[0]), "".join(sides[1])


def _lines(text: str) -> list[str]:
    return [ln.strip() for ln in text.splitlines() if ln.strip()]


def merge_erased(base: str, ours: str, theirs: str) -> str:
    """Union of two erased lists (append-only); an erasure beats a concurrent allow."""
    b, o, t = _lines(base), _lines(ours), _lines(theirs)
    start = len(b) if o[: len(b)] == b and t[: len(b)] == b else 0
    out = list(o)
    mine = set(o[start:])
    added = [ln for ln in t[start:] if ln not in mine] if start else [ln for ln in t if ln not in set(o)]
    out += added
    state: dict[str, bool] = {}
    for ln in out:
        parts = ln.split()
        if len(parts) == 1:
            state[parts[0]] = True
        elif len(parts) == 2:
            state[parts[1]] = False
    erased_new = {ln for ln in o[start:] + t[start:] if len(ln.split()) == 1}
    out += sorted(d for d in erased_new if state.get(d) is False)
    return "".join(ln + "\n" for ln in out)


def _author_time(rev: str, path: str) -> int | None:
    done = subprocess.run(
        ["git", "log", "-1", "--format=%at", rev, "--", path], capture_output=True, text=True, check=False
    )
    out = done.stdout.strip()
    return int(out) if done.returncode == 0 and out.isdigit() else None


def newer_side(path: str) -> str | None:
    """During a sync's rebase: which side changed ``path`` last (None when unknown or equal)."""
    local = os.environ.get(LOCAL_ENV)
    if not local:
        return None
    upstream, mine = _author_time("HEAD", path), _author_time(local, path)
    if upstream is None or mine is None or upstream == mine:
        return None
    # In a rebase git's "ours" is the upstream side and "theirs" the local commit.
    return "theirs" if mine > upstream else "ours"


def _read(path: str) -> str:
    return Path(path).read_bytes().decode("utf-8", errors="surrogateescape")


def _write(path: Path, text: str) -> None:
    path.write_bytes(text.encode("utf-8", errors="surrogateescape"))


def main(argv: list[str]) -> int:
    """The merge driver: ``memory|erased BASE OURS THEIRS PATH``; the result goes to OURS."""
    if len(argv) != 5 or argv[0] not in ("memory", "erased"):
        print("usage: python -m memex.team.merge memory|erased BASE OURS THEIRS PATH", file=sys.stderr)
        return 2
    kind, base_f, ours_f, theirs_f, path = argv
    try:
        base, ours, theirs = _read(base_f), _read(ours_f), _read(theirs_f)
        if kind == "erased":
            _write(Path(ours_f), merge_erased(base, ours, theirs))
            return 0
        merged = merge_memory(base or None, ours, theirs, path, newer_side(path))
        if merged.extra_name is not None and merged.extra_text is not None:
            _write(Path(path).parent / merged.extra_name, merged.extra_text)
        _write(Path(ours_f), merged.text)
    except Exception as exc:  # git reports a failed merge; memex sync aborts and names the file
        print(f"memex merge of {path} failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
