"""``memex watch``: file events -> short debounce -> index just the touched paths.

The watcher is the one path by which edits made outside memex reach the
index (docs/design.md, principle 2). It never trusts events alone:

* it reconciles (a full :meth:`Indexer.sync`) right after the observer
  starts, so edits made while nothing watched are picked up, and again every
  ``reconcile_seconds`` and whenever inotify reports a queue overflow, so a
  dropped event is repaired within a minute;
* it re-reads touched files even when their size and mtime look unchanged
  (``index_paths(verify=True)``): two same-size writes in one mtime tick
  would otherwise look like no change;
* it checks with every heartbeat that the observer thread is alive (a new
  one is started and a reconcile run if not), and falls back to polling
  when inotify has no watches left.

Debounce is tens of milliseconds, not the second comparable tools use: a
batch is flushed once no event arrived for ``debounce_ms`` (a git checkout
or an editor's save sequence is one burst), or ``max_delay_ms`` after its
first event so a stream of events cannot postpone indexing for ever.

Editors' saves: rename-over shows up as a move onto the target; swap,
backup and hidden files fail :func:`memex.index.scan.is_memory_name`. How
half-written saves are held back, and how a batch is indexed under the
vault's locks: :mod:`memex.watch.indexing`; how events become a batch:
:mod:`memex.watch.pending`. This module is the watcher's life cycle: the
lock, the observer and its health, the loop, reconciles and the heartbeat
(``watch.json``, read by ``memex status``).
"""
from __future__ import annotations

import logging
import os
import signal
import threading
import time
import warnings
from types import FrameType
from typing import IO, TYPE_CHECKING, Any

from watchdog.events import (
    DirCreatedEvent,
    DirDeletedEvent,
    DirMovedEvent,
    FileAttribEvent,
    FileClosedEvent,
    FileCreatedEvent,
    FileDeletedEvent,
    FileModifiedEvent,
    FileMovedEvent,
    FileSystemEvent,
    FileSystemEventHandler,
)
from watchdog.observers import Observer
from watchdog.observers.polling import PollingObserver

from memex.errors import WatcherRunning
from memex.files.locking import try_file_lock
from memex.index.sync_run import SyncReport
from memex.watch import state as watch_state
from memex.watch.indexing import BatchIndexer
from memex.watch.pending import Pending, touched
from memex.watch.state import WatchSettings as WatchSettings  # re-exported: the public API
from memex.watch.state import settings_for as settings_for

if TYPE_CHECKING:
    from memex.vault import Vault

log = logging.getLogger("memex.watch.watcher")

_EVENTS = (
    FileCreatedEvent, FileModifiedEvent, FileDeletedEvent, FileMovedEvent, FileClosedEvent,
    FileAttribEvent,  # `touch` changes only the mtime, which drift compares
    DirCreatedEvent, DirDeletedEvent, DirMovedEvent,
)
# How long a second watcher keeps trying the lock: `memex status` probes it
# for a moment, and that must not make a watcher starting then give up.
_LOCK_RETRY_SECONDS = 0.5


class _Handler(FileSystemEventHandler):
    def __init__(self, watcher: Watcher) -> None:
        self.watcher = watcher

    def on_any_event(self, event: FileSystemEvent) -> None:
        self.watcher.on_event(event)


class _OverflowSpy(logging.Handler):
    """watchdog rebuilds its watches after an inotify overflow and only logs it;
    events were lost, so we ask for a full reconcile."""

    def __init__(self, watcher: Watcher) -> None:
        super().__init__(logging.WARNING)
        self.watcher = watcher

    def emit(self, record: logging.LogRecord) -> None:
        if "overflow" in record.getMessage().lower():
            self.watcher.request_reconcile()


class Watcher:
    """Watch one vault. ``run()`` blocks; tests call ``start()``/``close()`` around a thread."""

    def __init__(self, vault: Vault, settings: WatchSettings | None = None) -> None:
        self.vault = vault
        self.settings = settings or settings_for(vault)
        self.pending = Pending(self.settings)
        self.indexing = BatchIndexer(vault, self.settings, self.pending, lambda: self._write_state("running"))
        self.reconciles = 0
        self._stop = threading.Event()
        self.stopped_by: int | None = None  # the signal that stopped run(), if one did
        self._lock: IO[bytes] | None = None
        self._observer: Any = None
        self._spy = _OverflowSpy(self)
        self._started = 0.0
        self._last_reconcile: float | None = None
        self.gone = False  # the vault folder was moved or deleted: run() stopped (see _loop)

    @property
    def totals(self) -> dict[str, int]:
        """Paths added, updated, removed, moved, unchanged; errors; failures."""
        return self.indexing.totals

    @property
    def last_error(self) -> dict[str, str] | None:
        return self.indexing.last_error

    @property
    def batches(self) -> int:
        return self.indexing.batches

    @property
    def events(self) -> int:
        """File events seen that touched a path the index may hold."""
        return self.pending.events

    # -- events (observer thread) ----------------------------------------------

    def on_event(self, event: FileSystemEvent) -> None:
        paths = touched(self.vault.root, event)
        if paths:
            self.pending.add(paths)

    def request_reconcile(self) -> None:
        self.pending.request_reconcile()

    # -- life cycle ---------------------------------------------------------------

    def start(self) -> None:
        """Take the vault's watch lock, start the observer, reconcile once."""
        memex_dir = self.vault.memex_dir
        deadline = time.monotonic() + _LOCK_RETRY_SECONDS
        while (handle := try_file_lock(watch_state.lock_path(memex_dir))) is None:
            if time.monotonic() >= deadline:
                state = watch_state.read_state(memex_dir) or {}
                pid = state.get("pid") if state.get("state") == "running" else None
                raise WatcherRunning(self.vault.root, pid if isinstance(pid, int) else None)
            time.sleep(0.05)
        self._lock = handle
        self._started = time.time()
        try:
            self.vault.indexer  # load the model and open the index before the first event
            self._write_state("running")
            logging.getLogger("watchdog.observers.inotify").addHandler(self._spy)
            # watchdog's inotify backend warns when a folder is created and
            # filled faster than it registers the new watch ("Callback with
            # id ... already exists ... will be Overwritten"). The watch is
            # replaced correctly; the warning is noise, and under an
            # error-on-warning policy it would kill the observer thread.
            warnings.filterwarnings(
                "ignore", message=r"Callback with id .* already exists", category=RuntimeWarning
            )
            self._start_observer()
            # After the observer: an edit made during this sync is still an event.
            self.reconcile("start-up")
        except BaseException:
            if self._observer is not None:
                self._observer.stop()
                self._observer = None
            logging.getLogger("watchdog.observers.inotify").removeHandler(self._spy)
            self._release()
            raise

    def _start_observer(self) -> None:
        try:
            observer: Any = self._new_observer(Observer)
        except OSError as exc:
            # Typically ENOSPC: the inotify watch limit (fs.inotify.max_user_watches).
            log.warning("cannot watch %s with inotify (%s); polling the folder instead (slower)",
                        self.vault.root, exc)
            observer = self._new_observer(PollingObserver)
        self._observer = observer

    def _new_observer(self, kind: Any) -> Any:
        observer = kind()
        observer.schedule(_Handler(self), str(self.vault.root), recursive=True, event_filter=list(_EVENTS))
        observer.daemon = True
        try:
            observer.start()
        except BaseException:
            observer.stop()
            raise
        return observer

    def _check_observer(self) -> None:
        """An observer thread that died would make the watcher silently deaf:
        start a new one and reconcile what it missed."""
        if self._observer is None or self._observer.is_alive():
            return
        log.error("the file observer stopped; starting a new one and reconciling")
        self.indexing.note_error("", "file observer stopped; restarted")
        self._start_observer()
        self.reconcile("observer restart")

    def stop(self) -> None:
        """Ask ``run()`` to finish (safe from any thread and from a signal handler)."""
        self._stop.set()

    def run(self, install_signals: bool = True) -> None:
        """Watch until ``stop()``, SIGINT or SIGTERM; then shut down cleanly."""
        previous: dict[int, Any] = {}
        if install_signals and threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                previous[sig] = signal.signal(sig, self._on_signal)
        try:
            if self._lock is None:
                self.start()
            log.info("watching %s (pid %d; debounce %d ms, reconcile every %gs)", self.vault.root,
                     os.getpid(), self.settings.debounce_ms, self.settings.reconcile_seconds)
            self._loop()
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)
            self.close()

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        log.info("%s received; finishing pending work and stopping", signal.Signals(signum).name)
        self.stopped_by = signum  # `memex watch` exits 130 after Ctrl-C, as every command does
        self._stop.set()

    def close(self) -> None:
        """Stop the observer, index what is still pending, release the lock."""
        if self._lock is None:
            return
        try:
            if self._observer is not None:
                self._observer.stop()
                self._observer.join(timeout=5)
                self._observer = None
            with self.pending.cond:
                files, dirs, ripe = self.pending.take(force=True)
            if self.gone:  # nothing to index or note where the vault was
                return
            if files or dirs or ripe:
                self.indexing.flush(files, dirs, ripe | files)
            self._write_state("stopped")
        finally:
            logging.getLogger("watchdog.observers.inotify").removeHandler(self._spy)
            self._release()
            log.info("stopped")

    def _release(self) -> None:
        if self._lock is not None:
            self._lock.close()  # closing the descriptor releases the flock
            self._lock = None

    def wait_idle(self, timeout: float) -> bool:
        """True once every event seen so far has been indexed (for tests and tools)."""
        return self.pending.idle.wait(timeout)

    # -- the loop (one thread owns the index connection) -----------------------------

    def _loop(self) -> None:
        next_beat = time.monotonic() + self.settings.heartbeat_seconds
        next_reconcile = time.monotonic() + self.settings.reconcile_seconds
        while not self._stop.is_set():
            files, dirs, ripe, reconcile_now = self.pending.wait(min(next_beat, next_reconcile))
            if not self.vault.memex_dir.is_dir():
                # Moved or deleted: nothing here to keep in step, and a heartbeat
                # would make .memex/ again where it was (a "vault" with no memories).
                self.gone = True
                self.indexing.note_error("", "the vault folder is gone (moved or deleted)")
                log.error("%s is gone (moved or deleted); stopping", self.vault.root)
                return
            if self._index_replaced():
                next_reconcile = time.monotonic() + self.settings.reconcile_seconds
            if files or dirs or ripe:
                self.indexing.flush(files, dirs, ripe)
            now = time.monotonic()
            if reconcile_now or now >= next_reconcile:
                self.reconcile("overflow" if reconcile_now else "periodic")
                next_reconcile = time.monotonic() + self.settings.reconcile_seconds
            if now >= next_beat:
                self._check_observer()
                self._write_state("running")
                next_beat = now + self.settings.heartbeat_seconds
            self.pending.settle()

    def _index_replaced(self) -> bool:
        """``index.db`` deleted or replaced under the watcher (docs: it may be
        deleted any time; a restored backup): the open connection still writes
        the old file, which nothing else reads. Reopen, rebuild from the files,
        and carry on with the new file."""
        if not self.vault.reopen_if_replaced():
            return False
        log.warning("%s was deleted or replaced; reopened it, reconciling", self.vault.paths.index)
        self.reconcile("index replaced")
        return True

    def reconcile(self, why: str) -> SyncReport:
        """A full sync, exactly ``memex reindex``; logged when it changed something."""
        try:
            report = self.vault.reindex(progress=self._progress)
        except Exception as exc:
            self.indexing.note_error("", f"reconcile: {type(exc).__name__}: {exc}")
            log.error("reconcile (%s) failed: %s: %s", why, type(exc).__name__, exc, exc_info=True)
            return SyncReport()
        self.reconciles += 1
        self._last_reconcile = time.time()
        changed = report.added + report.updated + report.removed + report.moved
        if changed:
            log.info("reconcile (%s) repaired the index: %d added, %d updated, %d moved, %d removed",
                     why, report.added, report.updated, report.moved, report.removed)
        self._write_state("running")
        return report

    def _progress(self, done: int, total: int) -> None:
        """Keep the heartbeat going through a long reconcile (a first index)."""
        self._write_state("running")

    def _write_state(self, state: str) -> None:
        now = time.time()
        data = {
            "state": state,
            "pid": os.getpid(),
            "vault": str(self.vault.root),
            "started": watch_state.iso(self._started),
            "heartbeat": watch_state.iso(now),
            "heartbeat_ts": now,
            "last_reconcile": watch_state.iso(self._last_reconcile) if self._last_reconcile else None,
            "events": self.events,
            "batches": self.batches,
            "reconciles": self.reconciles,
            "totals": self.totals,
            "last_error": self.last_error,
            "debounce_ms": self.settings.debounce_ms,
            "reconcile_seconds": self.settings.reconcile_seconds,
        }
        try:
            watch_state.write_state(self.vault.memex_dir, data)
        except OSError as exc:
            log.warning("%s: cannot write the heartbeat: %s", watch_state.state_path(self.vault.memex_dir), exc)

