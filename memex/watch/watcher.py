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
backup and hidden files fail :func:`is_memory_name`. Truncate-then-write
leaves an empty file for a moment; the indexer treats a file that no longer
reads as a memory as gone (so the index agrees with a rebuild), so the
watcher holds an indexed path that is empty for up to ``empty_grace_ms``,
keeping the old memory searchable until the real content arrives; a file
still empty after that is indexed as it is. Likewise a path that vanished
with nothing else in its batch waits ``vanish_grace_ms`` before it is
purged, so an editor that renames the old file away before it writes the
new one does not drop the memory (and its usage) in between.

Indexing a batch takes the vault's ``write.lock``, the lock ``add`` holds
while it checks, writes and indexes; so a memory memex just wrote is seen
here as unchanged, never indexed twice.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
import warnings
from collections.abc import Iterator
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

from memex.watch import state as watch_state
from memex.adding import vectors_for_files
from memex.errors import LockTimeout, WatcherRunning
from memex.index import scan
from memex.index.scan import is_memory_name
from memex.index.sync_run import SyncReport
from memex.layout import MEMORIES_DIR
from memex.files.locking import try_file_lock
from memex.index.purge import scrub_if_pending
from memex.store.meta import SCRUB_PENDING
from memex.watch.state import WatchSettings as WatchSettings  # re-exported: the public API
from memex.watch.state import settings_for as settings_for

if TYPE_CHECKING:
    from memex.vault import Vault

log = logging.getLogger("memex.watch.watcher")
# How long one batch waits for write.lock and SQLite before it is requeued.
LOCK_WAIT = 30.0

_EVENTS = (
    FileCreatedEvent, FileModifiedEvent, FileDeletedEvent, FileMovedEvent, FileClosedEvent,
    FileAttribEvent,  # `touch` changes only the mtime, which drift compares
    DirCreatedEvent, DirDeletedEvent, DirMovedEvent,
)
_OUTCOMES = ("added", "updated", "removed", "moved", "unchanged")
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
        self.totals: dict[str, int] = dict.fromkeys((*_OUTCOMES, "errors", "failures"), 0)
        self.events = 0
        self.batches = 0
        self.reconciles = 0
        self.last_error: dict[str, str] | None = None
        self._cond = threading.Condition()
        self._stop = threading.Event()
        self._files: set[str] = set()
        self._dirs: set[str] = set()
        self._first_event = 0.0
        self._last_event = 0.0
        self._deferred: dict[str, float] = {}  # held path -> look again no earlier than
        self._empty_since: dict[str, float] = {}  # indexed path seen empty -> since when
        self._reconcile_now = False
        self._idle = threading.Event()
        self._idle.set()
        self._lock: IO[bytes] | None = None
        self._observer: Any = None
        self._spy = _OverflowSpy(self)
        self._started = 0.0
        self._last_reconcile: float | None = None
        self._warned: dict[str, str] = {}

    # -- events (observer thread) ----------------------------------------------

    def _relative(self, path: str | bytes) -> str | None:
        """The vault-relative POSIX path of an event, or None when it is not ours."""
        rel = os.path.relpath(os.fsdecode(path), self.vault.root).replace(os.sep, "/")
        if rel != MEMORIES_DIR and not rel.startswith(MEMORIES_DIR + "/"):
            return None  # .git/, .memex/, sessions/, outside the vault
        if any(part.startswith(".") for part in rel.split("/")):
            return None  # hidden folders are not walked, so never indexed
        return rel

    def on_event(self, event: FileSystemEvent) -> None:
        touched: list[tuple[str, bool]] = []
        for raw in (event.src_path, getattr(event, "dest_path", "")):
            if not raw:
                continue
            rel = self._relative(raw)
            if rel is None:
                continue
            if event.is_directory:
                touched.append((rel, True))
            elif is_memory_name(rel.rsplit("/", 1)[-1]):
                touched.append((rel, False))
        if not touched:
            return
        now = time.monotonic()
        with self._cond:
            self.events += 1
            if not self._files and not self._dirs:
                self._first_event = now
            self._last_event = now
            for rel, is_dir in touched:
                (self._dirs if is_dir else self._files).add(rel)
                self._deferred.pop(rel, None)
            self._idle.clear()
            self._cond.notify()

    def request_reconcile(self) -> None:
        with self._cond:
            self._reconcile_now = True
            self._idle.clear()
            self._cond.notify()

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
        self.last_error = {"path": "", "error": "file observer stopped; restarted", "at": watch_state.iso(time.time())}
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
            with self._cond:
                files, dirs, ripe = self._take(force=True)
            if files or dirs or ripe:
                self._flush(files, dirs, ripe | files)
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
        return self._idle.wait(timeout)

    # -- the loop (one thread owns the index connection) -----------------------------

    def _loop(self) -> None:
        next_beat = time.monotonic() + self.settings.heartbeat_seconds
        next_reconcile = time.monotonic() + self.settings.reconcile_seconds
        while not self._stop.is_set():
            with self._cond:
                now = time.monotonic()
                due = min(self._due(), next_beat, next_reconcile)
                if due > now and not self._reconcile_now:
                    # Bounded so a stop request is seen quickly even without a notify.
                    self._cond.wait(min(due - now, 0.25))
                files, dirs, ripe = self._take(force=False)
                reconcile_now, self._reconcile_now = self._reconcile_now, False
            if files or dirs or ripe:
                self._flush(files, dirs, ripe)
            now = time.monotonic()
            if reconcile_now or now >= next_reconcile:
                self.reconcile("overflow" if reconcile_now else "periodic")
                next_reconcile = time.monotonic() + self.settings.reconcile_seconds
            if now >= next_beat:
                self._check_observer()
                self._write_state("running")
                next_beat = now + self.settings.heartbeat_seconds
            with self._cond:
                if not (self._files or self._dirs or self._deferred or self._reconcile_now):
                    self._idle.set()

    def _due(self) -> float:
        """When the pending batch (or a deferred purge) should be flushed."""
        s = self.settings
        due = float("inf")
        if self._files or self._dirs:
            due = min(self._last_event + s.debounce_ms / 1000, self._first_event + s.max_delay_ms / 1000)
        if self._deferred:
            due = min(due, min(self._deferred.values()))
        return due

    def _take(self, force: bool) -> tuple[set[str], set[str], set[str]]:
        """Hand over the batch if it is due, and deferred purges that are ripe
        (caller holds the condition)."""
        now = time.monotonic()
        files: set[str] = set()
        dirs: set[str] = set()
        if (self._files or self._dirs) and (force or now >= self._due()):
            files, dirs = self._files, self._dirs
            self._files, self._dirs = set(), set()
        ripe = {p for p, t in self._deferred.items() if force or t <= now}
        for p in ripe:
            del self._deferred[p]
        return files, dirs, ripe

    def _flush(self, files: set[str], dirs: set[str], ripe: set[str]) -> None:
        paths = files | ripe
        if dirs:
            paths |= self._expand(dirs)
        fresh = files - ripe
        if fresh and not dirs and not any(os.path.lexists(self.vault.root / p) for p in paths):
            # Only vanished paths: hold them briefly in case an editor is
            # about to put the file back (rename-away-then-write saves).
            until = time.monotonic() + self.settings.vanish_grace_ms / 1000
            with self._cond:
                for p in fresh:
                    self._deferred.setdefault(p, until)
            paths = set(ripe)
        paths -= self._hold_empty(paths)
        if paths:
            self._index(sorted(paths))
            self.batches += 1

    def _hold_empty(self, paths: set[str]) -> set[str]:
        """Indexed paths that are empty files right now and still within their
        grace: they are held (their old row stays) until content arrives."""
        now = time.monotonic()
        grace = self.settings.empty_grace_ms / 1000
        held: set[str] = set()
        for rel in paths:
            if not _is_blank(self.vault.root / rel):
                self._empty_since.pop(rel, None)
                continue
            if not self.vault.store.has_path(rel):
                continue  # nothing to protect: index it (the indexer records why it is skipped)
            since = self._empty_since.setdefault(rel, now)
            if now - since < grace:
                held.add(rel)
                with self._cond:
                    self._deferred[rel] = since + grace
            else:
                del self._empty_since[rel]
        return held

    def _expand(self, dirs: set[str]) -> set[str]:
        """Every path a moved, created or deleted folder may have touched: files on
        disk below it now, and rows and recorded errors below it in the index."""
        on_disk = scan.walk(self.vault.root).found
        known = self.vault.store.known_paths()
        out: set[str] = set()
        for d in dirs:
            prefix = d + "/"
            out.update(p for p in on_disk if p.startswith(prefix))
            out.update(p for p in known if p.startswith(prefix))
        return out

    def _chunks(self, paths: list[str]) -> Iterator[list[str]]:
        size = self.settings.batch_size
        for i in range(0, len(paths), size):
            yield paths[i : i + size]

    def _index(self, paths: list[str]) -> None:
        started = time.perf_counter()
        total = SyncReport()
        for chunk in self._chunks(paths):
            try:
                self._count(self._commit_paths(chunk), total)
            except LockTimeout as exc:
                log.warning("%s; will retry %d paths", exc, len(chunk))
                with self._cond:
                    self._files.update(chunk)
                    self._first_event = self._last_event = time.monotonic()
                continue
            except Exception:
                # One bad file must not stop the others: retry one by one.
                for rel in chunk:
                    self._index_one(rel, total)
            self._write_state("running")
        if total.removed or self.vault.store.get_meta(SCRUB_PENDING) is not None:
            self._scrub()
        changed = sum(getattr(total, k) for k in ("added", "updated", "removed", "moved"))
        level = logging.INFO if changed else logging.DEBUG
        log.log(level, "indexed %d path(s) in %.0f ms: %s", len(paths), (time.perf_counter() - started) * 1000,
                ", ".join(f"{getattr(total, k)} {k}" for k in _OUTCOMES if getattr(total, k)) or "nothing")

    def _commit_paths(self, paths: list[str]) -> SyncReport:
        """Index these paths. The model runs first, with no lock held; then
        write.lock and SQLite are taken together for the short commit
        (docs/write-path.md: waiting for SQLite with write.lock held made
        every ``memex add`` wait too, until it timed out)."""
        rows = vectors_for_files(self.vault, paths)
        with self.vault.commit(timeout=LOCK_WAIT):
            self.vault.store.cache_put(rows)
            report: SyncReport = self.vault.indexer.index_paths(paths, verify=True)
            # Vectors of files gone or refused since they were read go again.
            self.vault.store.cache_drop_unused({r[1] for r in rows})
        return report

    def _scrub(self) -> None:
        """A deleted file's text must not linger in FTS segments or the WAL
        until the next reconcile: scrub now, as erase and reindex do."""
        try:
            with self.vault.write_lock():
                scrub_if_pending(self.vault.conn)
        except Exception as exc:
            log.error("scrub after removal failed: %s: %s", type(exc).__name__, exc)

    def _index_one(self, rel: str, total: SyncReport) -> None:
        try:
            self._count(self._commit_paths([rel]), total)
        except Exception as exc:
            self.totals["failures"] += 1
            self.last_error = {"path": rel, "error": f"{type(exc).__name__}: {exc}", "at": watch_state.iso(time.time())}
            log.error("%s: could not be indexed: %s: %s", rel, type(exc).__name__, exc, exc_info=True)

    def _count(self, report: SyncReport, total: SyncReport) -> None:
        for key in _OUTCOMES:
            setattr(total, key, getattr(total, key) + getattr(report, key))
            self.totals[key] += getattr(report, key)
        self.totals["errors"] += len(report.errors)
        for err in report.errors:
            path, reason = err["path"], err["reason"]
            if self._warned.get(path) != reason:
                self._warned[path] = reason
                log.warning("%s: not indexed: %s", path, reason)

    def reconcile(self, why: str) -> SyncReport:
        """A full sync, exactly ``memex reindex``; logged when it changed something."""
        try:
            report = self.vault.reindex(progress=self._progress)
        except Exception as exc:
            self.last_error = {"path": "", "error": f"reconcile: {type(exc).__name__}: {exc}",
                               "at": watch_state.iso(time.time())}
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


def _is_blank(path: os.PathLike[str]) -> bool:
    """An empty (or whitespace-only) regular file: a save caught half way."""
    try:
        st = os.stat(path)
        if st.st_size > 4096 or not os.path.isfile(path):
            return False
        with open(path, "rb") as handle:
            return not handle.read(4097).strip()
    except OSError:
        return False
