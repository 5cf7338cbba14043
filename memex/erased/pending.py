"""Erasures a store has not taken yet: journaled, and finished by the next process that reaches it.

An erasure deletes the files, purges this clone's index, then purges every
other store the vault keeps rows in (a shared index: ``Backend.target``,
memex/store/backend.py). That store may be out of reach when the erasure
runs (the server is down, the network is gone, the process is killed half
way). So before any file is deleted, the erasure writes what each such
store must purge, by memory id, to ``.memex/erasures.pending``; when that
store's purge has committed, it writes that the entry is done. Any later
process that opens the store (a search, an add, ``reindex``, ``doctor
--fix``, ``sync``) replays what is still open for it first
(:func:`replay`), ``doctor`` names what is left (:func:`outstanding`), and
reads hide the ids meanwhile (:func:`open_ids`).

The journal is keyed by store (``Backend.target``), not by backend: a store is
anything that can purge a list of ids, so whichever store a vault uses
replays the same journal. It holds ids only, as the audit log does, never
text or file names. Lines are JSON::

    {"op": "open", "key": K, "target": T, "ids": [...], "time": ...}
    {"op": "done", "key": K}

It is git-ignored (it is this clone's unfinished work) and, like the erased
list's journal, has a spare copy in git's own folder (memex/erased/spare.py),
which ``git clean -fdx`` spares. When every entry is done, both are emptied.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import secrets
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, TypeVar

from memex.config_trust import tracked_by_git
from memex.erased import spare
from memex.erased.erased_list import Guard
from memex.erased.mirror import ignore_in_git
from memex.errors import MemexError
from memex.files import permissions
from memex.files.locking import file_lock
from memex.layout import ERASURES_PENDING_NAME
from memex.store import IndexStore, describe_target, store_error

# Keys this process is purging right now (an erasure between its journal line and
# its own purge): a replay in the same process leaves them to it.
_claimed: set[str] = set()


@dataclass(frozen=True)
class Entry:
    key: str
    target: str
    ids: tuple[str, ...]
    time: str


def describe(name: str) -> str:
    """How a message names a target."""
    return describe_target(name)


def _files(memex_dir: Path) -> tuple[Path, ...]:
    where = spare.folder(memex_dir)
    main = memex_dir / ERASURES_PENDING_NAME
    return (main,) if where is None else (main, where / ERASURES_PENDING_NAME)


def _readable(memex_dir: Path) -> tuple[Path, ...]:
    """The copies a replay may act on: not the journal under .memex/ if git tracks
    it (a teammate's commit could then name ids to purge from the shared index and
    keep out of it); the spare, in git's own folder, no push can write."""
    files = _files(memex_dir)
    main = files[0]
    try:
        if not main.stat().st_size:
            return files
    except OSError:
        return files
    if tracked_by_git(memex_dir.parent, f"{memex_dir.name}/{main.name}") is not None:
        return files[1:]
    return files


def _lines(path: Path) -> list[dict[str, object]]:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    out: list[dict[str, object]] = []
    for line in text.splitlines():
        try:
            item = json.loads(line)
        except ValueError:
            continue  # a line torn by a crash: its entry is written again or was never begun
        if isinstance(item, dict) and isinstance(item.get("key"), str):
            out.append(item)
    return out


def _entries(memex_dir: Path) -> tuple[dict[str, Entry], set[str]]:
    """(every entry ever opened, by key; the keys done), from the journal and its spare."""
    opened: dict[str, Entry] = {}
    done: set[str] = set()
    for path in _readable(memex_dir):
        for item in _lines(path):
            key = str(item["key"])
            if item.get("op") == "done":
                done.add(key)
            elif item.get("op") == "open" and isinstance(listed := item.get("ids"), list):
                ids = tuple(str(i) for i in listed)
                opened.setdefault(key, Entry(key, str(item.get("target", "")), ids, str(item.get("time", ""))))
    return opened, done


def outstanding(memex_dir: Path, name: str | None = None) -> list[Entry]:
    """Entries not done yet (of one target, or of all), oldest first."""
    if not any(path.exists() for path in _files(memex_dir)):
        return []
    opened, done = _entries(memex_dir)
    return sorted((e for k, e in opened.items() if k not in done and (name is None or e.target == name)),
                  key=lambda e: e.time)


def open_ids(memex_dir: Path) -> set[str]:
    """Every id an unfinished erasure still has to purge somewhere (reads hide them)."""
    return {i for entry in outstanding(memex_dir) for i in entry.ids}


@contextmanager
def _locked(memex_dir: Path) -> Iterator[None]:
    main = _files(memex_dir)[0]
    if not main.exists():
        ignore_in_git(main)  # a vault made before this journal existed
        permissions.write_private(main, "")
    with file_lock(main):
        yield


def _append(memex_dir: Path, items: Iterable[dict[str, object]]) -> None:
    data = "".join(json.dumps(item, sort_keys=True) + "\n" for item in items).encode("utf-8")
    for path in _files(memex_dir):
        try:
            with permissions.open_append(path, binary=True) as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
        except OSError:
            if path == _files(memex_dir)[0]:
                raise  # the spare is a help; the journal itself must hold
            continue


def begin(memex_dir: Path, name: str, ids: Iterable[str]) -> str:
    """Journal that store ``name`` must purge ``ids``; returns the entry's key, which
    this process holds until :func:`finish` (a replay here leaves it alone)."""
    key = secrets.token_hex(8)
    stamp = dt.datetime.now(dt.timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    with _locked(memex_dir):
        _append(memex_dir, [{"op": "open", "key": key, "target": name, "ids": sorted(set(ids)), "time": stamp}])
    _claimed.add(key)
    return key


def release(key: str) -> None:
    """This process no longer works on ``key`` (its purge failed): a replay may take it."""
    _claimed.discard(key)


def finish(memex_dir: Path, keys: Iterable[str]) -> None:
    """The store purged these entries: mark them done; empty the journal when nothing is left."""
    keys = list(keys)
    for key in keys:
        _claimed.discard(key)
    if not keys:
        return
    with _locked(memex_dir):
        _append(memex_dir, [{"op": "done", "key": key} for key in keys])
        opened, done = _entries(memex_dir)
        if set(opened) <= done:
            for path in _files(memex_dir):
                try:
                    os.truncate(path, 0)
                except OSError:
                    pass


def replay(memex_dir: Path, name: str, purge: Callable[[list[str]], object]) -> list[str]:
    """Purge, with ``purge`` (the store's own, which must take a list of ids and be
    idempotent), every id still open for store ``name``; returns those ids.
    An error from the store leaves the entries open for the next process."""
    todo = [e for e in outstanding(memex_dir, name) if e.key not in _claimed]
    if not todo:
        return []
    ids = sorted({i for e in todo for i in e.ids})
    purge(ids)
    finish(memex_dir, [e.key for e in todo])
    return ids


def swept_key(name: str) -> str:
    """The local index's meta key: the erased list's size when ``name`` was last swept."""
    return f"erased_swept:{name}"


def sweep(local: IndexStore, shared: IndexStore, guard: Guard, name: str,
          purge: Callable[[list[str]], object]) -> list[str]:
    """Purge from ``shared`` every row whose text or id is on this clone's erased
    list, when the list changed since this clone last looked (``local``'s meta).

    The journal covers an erasure this clone ran while a store was configured;
    this covers the rest: an erasure run while the vault was on another
    backend (or its settings were ignored), a teammate's erasure whose clone
    never reached the server again, a journal lost with ``.memex/``. A row
    here may belong to a memory this clone has no file of: the list, not the
    files, decides."""
    guard.refresh()
    key = swept_key(name)
    if local.get_meta(key) == str(guard.size):
        return []
    hits = sorted({row.id for row in shared.bodies() if guard.holds(row.id, row.body)}) if guard.size else []
    if hits:
        purge(hits)
    with local.write_txn():
        local.set_meta(key, str(guard.size))
    return hits


def listed_rows(shared: IndexStore, guard: Guard) -> list[str]:
    """Ids of ``shared``'s rows whose text or id is on the erased list (doctor)."""
    guard.refresh()
    if not guard.size:
        return []
    return sorted({row.id for row in shared.bodies() if guard.holds(row.id, row.body)})


def finish_on_connect(memex_dir: Path, name: str | None, purge: Callable[[list[str]], object]) -> None:
    """What a process that just connected to store ``name`` runs before anything
    reads it (``Backend.connect``): the erasures still open for it. If the store fails again they stay
    journaled for the next process (reads hide their ids meanwhile, :func:`hide`)."""
    if name is None or not outstanding(memex_dir, name):
        return
    try:
        replay(memex_dir, name, purge)
    except Exception as exc:
        if store_error(exc) is None and not isinstance(exc, MemexError):
            raise


class _Shown(Protocol):
    @property
    def id(self) -> str: ...

    @property
    def body(self) -> str: ...


ShownT = TypeVar("ShownT", bound=_Shown)


def hide(guard: Guard, shown: list[ShownT]) -> list[ShownT]:
    """``shown`` (a shared store's answers) without what this clone knows was
    erased: its erased list (a teammate's erasure, pulled) and the ids of the
    erasures still journaled here. Checked row by row, always: a store the
    clones share cannot say which clone's list it was last checked against."""
    guard.refresh()
    unfinished = open_ids(guard.memex_dir)
    return [s for s in shown if s.id not in unfinished and not guard.holds(s.id, s.body)]
