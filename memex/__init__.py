"""memex: local-first memory for AI coding agents.

Memories are Markdown files with YAML frontmatter in a vault folder; a
derived SQLite index (FTS5, sqlite-vec, entity graph) makes them searchable.

    >>> import memex
    >>> vault = memex.open_vault("~/notes/agent-vault")   # doctest: +SKIP
    >>> vault.add("Prefer tabs over spaces", scope="user")  # doctest: +SKIP
    >>> vault.search("indentation")                          # doctest: +SKIP
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from memex.errors import (
    ConfigError,
    IndexStoreError,
    InvalidArgument,
    LockTimeout,
    MemexError,
    MemoryFileError,
    MemoryNotFound,
    SchemaTooNew,
    VaultNotFound,
)

if TYPE_CHECKING:
    from memex.dedup.pipeline import AddResult, SimilarFact
    from memex.index.sync_run import SyncReport
    from memex.search.hybrid import Hit
    from memex.vault import Memory, Vault, find_vault_root, init_vault, open_vault

# Imported on first use (PEP 562): `memex --version`, `memex --help` and the
# hooks that never touch the index do not pay for numpy, SQLite and the rest
# (start-up: docs/benchmarks.md).
_LAZY = {
    "AddResult": "memex.dedup.pipeline", "SimilarFact": "memex.dedup.pipeline", "SyncReport": "memex.index.sync_run",
    "Hit": "memex.search.hybrid", "Memory": "memex.vault", "Vault": "memex.vault",
    "find_vault_root": "memex.vault", "init_vault": "memex.vault", "open_vault": "memex.vault",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'memex' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__all__ = [
    "AddResult",
    "ConfigError",
    "Hit",
    "IndexStoreError",
    "InvalidArgument",
    "LockTimeout",
    "Memory",
    "MemexError",
    "MemoryFileError",
    "MemoryNotFound",
    "SchemaTooNew",
    "SimilarFact",
    "SyncReport",
    "Vault",
    "VaultNotFound",
    "find_vault_root",
    "init_vault",
    "open_vault",
]
