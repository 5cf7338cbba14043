"""File events into a debounced batch: which paths are waiting, and when
their batch is due.

The observer thread adds the vault-relative paths an event touched
(:func:`touched`); the watcher's loop thread takes the batch once no event
arrived for ``debounce_ms``, or ``max_delay_ms`` after its first event, so
a stream of events cannot postpone indexing for ever. Paths held back on
purpose (a vanished file that an editor may be about to put back, an
indexed file caught empty half way through a save) wait in ``deferred``
until their own time. Everything here is guarded by one condition
variable, which is also how the loop is woken (docs/watching.md).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterable
from pathlib import Path

from watchdog.events import FileSystemEvent

from memex.index.scan import is_memory_name
from memex.layout import MEMORIES_DIR
from memex.watch.state import WatchSettings


def relative(root: Path, path: str | bytes) -> str | None:
    """The vault-relative POSIX path of an event, or None when it is not ours."""
    rel = os.path.relpath(os.fsdecode(path), root).replace(os.sep, "/")
    if rel != MEMORIES_DIR and not rel.startswith(MEMORIES_DIR + "/"):
        return None  # .git/, .memex/, sessions/, outside the vault
    if any(part.startswith(".") for part in rel.split("/")):
        return None  # hidden folders are not walked, so never indexed
    return rel


def touched(root: Path, event: FileSystemEvent) -> list[tuple[str, bool]]:
    """The paths an event touched that the index may hold, each with whether it is a folder."""
    out: list[tuple[str, bool]] = []
    for raw in (event.src_path, getattr(event, "dest_path", "")):
        if not raw:
            continue
        rel = relative(root, raw)
        if rel is None:
            continue
        if event.is_directory:
            out.append((rel, True))
        elif is_memory_name(rel.rsplit("/", 1)[-1]):
            out.append((rel, False))
    return out


class Pending:
    """The paths waiting to be indexed (safe from any thread)."""

    def __init__(self, settings: WatchSettings) -> None:
        self.settings = settings
        self.cond = threading.Condition()
        self.events = 0  # events that touched a path of ours
        self.files: set[str] = set()
        self.dirs: set[str] = set()
        self.first_event = 0.0
        self.last_event = 0.0
        self.deferred: dict[str, float] = {}  # held path -> look again no earlier than
        self.reconcile_now = False
        self.idle = threading.Event()
        self.idle.set()

    def add(self, paths: list[tuple[str, bool]]) -> None:
        now = time.monotonic()
        with self.cond:
            self.events += 1
            if not self.files and not self.dirs:
                self.first_event = now
            self.last_event = now
            for rel, is_dir in paths:
                (self.dirs if is_dir else self.files).add(rel)
                self.deferred.pop(rel, None)
            self.idle.clear()
            self.cond.notify()

    def request_reconcile(self) -> None:
        with self.cond:
            self.reconcile_now = True
            self.idle.clear()
            self.cond.notify()

    def requeue(self, paths: Iterable[str]) -> None:
        """Paths whose batch could not be indexed now (the lock was busy): again later."""
        with self.cond:
            self.files.update(paths)
            self.first_event = self.last_event = time.monotonic()

    def defer(self, paths: Iterable[str], until: float, keep_earlier: bool = False) -> None:
        with self.cond:
            for p in paths:
                if keep_earlier:
                    self.deferred.setdefault(p, until)
                else:
                    self.deferred[p] = until

    def wait(self, until: float) -> tuple[set[str], set[str], set[str], bool]:
        """Wait until the batch is due (or ``until``, or a wake-up), then hand
        over what is ripe and whether a reconcile was asked for."""
        with self.cond:
            now = time.monotonic()
            due = min(self.due(), until)
            if due > now and not self.reconcile_now:
                # Bounded so a stop request is seen quickly even without a notify.
                self.cond.wait(min(due - now, 0.25))
            files, dirs, ripe = self.take(force=False)
            reconcile_now, self.reconcile_now = self.reconcile_now, False
        return files, dirs, ripe, reconcile_now

    def due(self) -> float:
        """When the pending batch (or a deferred purge) should be flushed (caller holds cond)."""
        s = self.settings
        due = float("inf")
        if self.files or self.dirs:
            due = min(self.last_event + s.debounce_ms / 1000, self.first_event + s.max_delay_ms / 1000)
        if self.deferred:
            due = min(due, min(self.deferred.values()))
        return due

    def take(self, force: bool) -> tuple[set[str], set[str], set[str]]:
        """Hand over the batch if it is due, and deferred purges that are ripe
        (caller holds cond)."""
        now = time.monotonic()
        files: set[str] = set()
        dirs: set[str] = set()
        if (self.files or self.dirs) and (force or now >= self.due()):
            files, dirs = self.files, self.dirs
            self.files, self.dirs = set(), set()
        ripe = {p for p, t in self.deferred.items() if force or t <= now}
        for p in ripe:
            del self.deferred[p]
        return files, dirs, ripe

    def settle(self) -> None:
        """Mark the watcher idle when nothing waits any more."""
        with self.cond:
            if not (self.files or self.dirs or self.deferred or self.reconcile_now):
                self.idle.set()
