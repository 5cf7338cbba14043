"""memex: local-first memory for AI coding agents.

Memories are Markdown files with YAML frontmatter in a vault folder; a
derived SQLite index (FTS5, sqlite-vec, entity graph) makes them searchable.

    >>> import memex
    >>> vault = memex.open_vault("~/notes/agent-vault")   # doctest: +SKIP
    >>> vault.add("Prefer tabs over spaces", scope="user")  # doctest: +SKIP
    >>> vault.search("indentation")                          # doctest: +SKIP
"""

from memex.dedup import AddResult, SimilarFact
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
from memex.indexer import SyncReport
from memex.search import Hit
from memex.vault import Memory, Vault, find_vault_root, init_vault, open_vault

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
