"""Exceptions raised by memex.

Every error memex raises on purpose derives from :class:`MemexError`, so a
caller (the CLI, a hook, the MCP server) can catch one class at its edge::

    MemexError
    ├── VaultNotFound        no vault at --vault / MEMEX_VAULT / up from cwd
    ├── ConfigError          .memex/config.toml cannot be read or has a bad value
    ├── MemoryFileError      one memory file cannot be read or parsed (carries .path)
    ├── MemoryNotFound       no memory with that id
    ├── InvalidArgument      a bad value passed to the API (carries .argument)
    │   ├── ScopeError       not a valid scope (carries .scope and .suggestion)
    │   └── AmbiguousId      an id prefix that several memories share (carries .candidates)
    ├── IndexStoreError          the derived index cannot be opened or written
    │   └── SchemaTooNew     index.db was written by a newer memex
    ├── LockTimeout          another process held the vault's write lock too long
    ├── WatcherRunning       another `memex watch` already watches this vault (carries .pid)
    ├── GitHistoryError      checking or rewriting the vault's git history failed (erase)
    ├── SyncError            `memex sync` cannot sync the team vault (no remote, a conflict, a rejected push)
    └── PluginError          a plug-in (docs/plugins.md) cannot be loaded or failed; the message names it

The CLI converts any of these to ``click.ClickException`` (one line, exit 1).
"""

from __future__ import annotations

from pathlib import Path


class MemexError(Exception):
    """Root of every error memex raises on purpose."""


class VaultNotFound(MemexError):
    """No vault could be found or opened."""


class ConfigError(MemexError):
    """The vault configuration is unreadable or holds a bad value."""


class MemoryFileError(MemexError):
    """One memory file cannot be read; ``path`` names it, ``reason`` says why."""

    def __init__(self, path: Path | str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = str(path)
        self.reason = reason


class MemoryNotFound(MemexError):
    """No memory has the requested id."""

    def __init__(self, memory_id: str) -> None:
        super().__init__(f"no memory with id {memory_id!r}")
        self.memory_id = memory_id


class InvalidArgument(MemexError):
    """A caller passed a value memex cannot use; ``argument`` names it."""

    def __init__(self, argument: str, reason: str) -> None:
        super().__init__(f"{argument}: {reason}")
        self.argument = argument
        self.reason = reason


class ScopeError(InvalidArgument):
    """Not a valid scope (see memex/scopes.py); ``suggestion`` is a near miss's
    likely meaning, or None."""

    def __init__(self, argument: str, scope: str, reason: str, suggestion: str | None = None) -> None:
        super().__init__(argument, reason)
        self.scope = scope
        self.suggestion = suggestion


class AmbiguousId(InvalidArgument):
    """An id prefix that begins more than one memory's id; ``candidates`` are
    (id, a short preview of its body) pairs, the first few of them."""

    def __init__(self, argument: str, prefix: str, candidates: list[tuple[str, str]], more: bool) -> None:
        shown = "; ".join(f"{i} ({preview})" for i, preview in candidates)
        many = f"{len(candidates)}{' or more' if more else ''}"
        super().__init__(argument, f"{prefix!r} begins {many} memory ids: {shown}; give more of the id")
        self.prefix = prefix
        self.candidates = candidates


class IndexStoreError(MemexError):
    """The derived SQLite index cannot be opened or written."""


class SchemaTooNew(IndexStoreError):
    """The index was created by a newer version of memex."""


class LockTimeout(MemexError):
    """Another process held the vault's write lock for too long."""


class WatcherRunning(MemexError):
    """A second watcher was started for a vault that already has one."""

    def __init__(self, root: Path | str, pid: int | None) -> None:
        who = f" (pid {pid})" if pid else ""
        super().__init__(f"{root}: a watcher is already running for this vault{who}")
        self.pid = pid


class GitHistoryError(MemexError):
    """Checking or rewriting the vault's git history failed; the message names the step."""


class SyncError(MemexError):
    """``memex sync`` cannot go on; the message says what to do (docs/team.md)."""


class PluginError(MemexError):
    """A plug-in (memex/plugins.py) cannot be loaded, is not what its group
    expects, or failed; the message names it and the package it came from."""
