"""The watcher's settings, its state on disk, and ``memex status``.

A running watcher holds ``.memex/watch.lock`` for its whole life and writes a
small heartbeat file, ``.memex/watch.json`` (pid, start, last heartbeat, last
reconcile, counts). Neither is trusted alone: a pid file outlives a killed
process, so "running" means the lock is held right now, and the heartbeat's
age tells whether the holder is still making progress. Freshness never comes
from the watcher's own word either: it is :func:`memex.health.drift`, which
compares the files on disk with the index rows at the moment it is asked.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from memex import jsonio
from memex.files import permissions
from memex.config import setting
from memex.errors import ConfigError
from memex.files.locking import try_file_lock
from memex.layout import VaultPaths
from memex.files.writers import pid_alive as pid_alive  # re-exported: status and the watcher use it

if TYPE_CHECKING:
    from memex.vault import Vault

# A heartbeat older than this while the lock is held means the watcher is
# stuck (or busy with one very long batch); status says so.
STALE_AFTER_SECONDS = 30.0


@dataclass(frozen=True)
class WatchSettings:
    debounce_ms: int = 40
    max_delay_ms: int = 1000
    reconcile_seconds: float = 60.0
    heartbeat_seconds: float = 2.0
    vanish_grace_ms: int = 300
    empty_grace_ms: int = 2000
    batch_size: int = 64

    @classmethod
    def from_config(cls, section: dict[str, Any], where: str, **overrides: Any) -> WatchSettings:
        """The ``[watch]`` table, each key checked, then explicit overrides (CLI flags)."""
        values = {
            name: setting(section, name, getattr(cls, name), where)
            for name in ("debounce_ms", "max_delay_ms", "reconcile_seconds", "heartbeat_seconds",
                         "vanish_grace_ms", "empty_grace_ms", "batch_size")
        }
        values.update({k: v for k, v in overrides.items() if v is not None})
        for name, value in values.items():
            if value <= 0:
                raise ConfigError(f"{where}: watch.{name} must be positive, got {value!r}")
        return cls(**values)


def settings_for(vault: Vault, **overrides: Any) -> WatchSettings:
    where = str(vault.paths.config) + " [watch]"
    return WatchSettings.from_config(vault.config.section("watch"), where, **overrides)


def state_path(memex_dir: Path) -> Path:
    return VaultPaths(memex_dir.parent).watch_state


def lock_path(memex_dir: Path) -> Path:
    return VaultPaths(memex_dir.parent).watch_lock


def iso(ts: float) -> str:
    moment = dt.datetime.fromtimestamp(ts, tz=dt.timezone.utc)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def write_state(memex_dir: Path, data: dict[str, Any]) -> None:
    """Replace watch.json atomically, so a reader never sees half a file.

    Only the lock holder writes it, so one fixed temp name is enough. No
    fsync: the heartbeat is rewritten every few seconds, and a lost one after
    a power cut only makes the watcher look stopped, which it then is.
    """
    final = state_path(memex_dir)
    tmp = final.with_name(final.name + ".tmp")
    permissions.write_private(tmp, json.dumps(data, indent=2, sort_keys=True))
    os.replace(tmp, final)


def read_state(memex_dir: Path) -> dict[str, Any] | None:
    """The last state a watcher wrote, or None when there is none (or it is
    unreadable: damaged, not UTF-8, or nested past Python's stack)."""
    try:
        data = jsonio.loads(state_path(memex_dir).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def lock_is_held(memex_dir: Path) -> bool:
    """True when some process holds watch.lock (we probe by trying to take it)."""
    handle: IO[bytes] | None = try_file_lock(lock_path(memex_dir))
    if handle is None:
        return True
    handle.close()  # closing the descriptor releases the probe's lock at once
    return False


def watcher_info(memex_dir: Path, now: float | None = None) -> dict[str, Any]:
    """What is known about this vault's watcher; ``running`` comes from the lock."""
    now = time.time() if now is None else now
    running = lock_is_held(memex_dir)
    state = read_state(memex_dir) or {}
    info: dict[str, Any] = {"running": running, "pid": None, "started": None, "heartbeat": None,
                            "heartbeat_age_seconds": None, "responsive": None}
    beat = state.get("heartbeat_ts")
    if running and state and state.get("state") == "running":
        info["pid"] = state.get("pid")
        info["started"] = state.get("started")
        info["heartbeat"] = state.get("heartbeat")
        if isinstance(beat, (int, float)):
            age = max(0.0, now - float(beat))
            info["heartbeat_age_seconds"] = round(age, 1)
            info["responsive"] = age <= STALE_AFTER_SECONDS
        for key in ("last_reconcile", "events", "batches", "reconciles", "last_error", "debounce_ms",
                    "reconcile_seconds"):
            info[key] = state.get(key)
    elif running:
        # The lock is held but no (or an old) state file: a watcher starting
        # up, or another tool holding the lock. Say what we know.
        info["pid"] = state.get("pid")
    elif state:
        info["last_pid"] = state.get("pid")
        info["last_heartbeat"] = state.get("heartbeat")
        info["last_state"] = "crashed" if state.get("state") == "running" else state.get("state")
    return info


def changed_since_index(vault: Vault, on_disk: dict[str, os.stat_result] | None = None) -> list[str]:
    """Memory files added, edited or deleted since the index last saw them,
    judged from sizes and mtimes alone (one stat per file; nothing is read,
    hashed or embedded): cheap enough to ask after every `memex search`.
    ``on_disk``: the walk (:func:`memex.index.scan.walk`), if the caller ran
    it already (the CLI runs it beside the search). A file whose bytes are
    back to what was indexed counts as changed if its mtime moved; the next
    reindex finds it unchanged."""
    from memex.index import scan

    store = vault.local_store
    rows, errors = store.sync_rows(), store.index_errors()
    if on_disk is None:
        on_disk = scan.walk(vault.root).found
    changed = []
    for rel, st in on_disk.items():
        seen = rows.get(rel) or errors.get(rel)
        if seen is None or (seen.size is not None and (seen.size, seen.mtime_ns) != (st.st_size, st.st_mtime_ns)):
            changed.append(rel)
    changed += [rel for rel in rows if rel not in on_disk]
    return sorted(changed)


def status(vault: Vault) -> dict[str, Any]:
    """``memex status``: the watcher, and how many files differ from the index now."""
    from memex.health import drift

    found = drift(vault)
    watcher = watcher_info(vault.memex_dir)
    return {
        "vault": str(vault.root),
        "watcher": watcher,
        # Counted from the files at this moment; never from the watcher's word.
        "differing": found.differing,
        "fresh": found.differing == 0,
        "clean": found.clean,
        "missing": found.missing,
        "stale": found.stale,
        "orphaned": found.orphaned,
        "unembedded": found.unembedded,
        "errors": found.errors,
    }
