"""The vault's folders and files: the one module that knows their names.

A vault is a folder holding::

    memories/              the memory files (the truth; docs/vault.md)
    sessions/<session>/    archived conversation turns (docs/context-engine.md)
    .memex/                memex's own files, private (mode 0700):
        config.toml        settings, every key optional (shared: committed with the vault)
        config.local.toml  settings only this clone may set, git-ignored (docs/team.md)
        index.db           the derived SQLite index (rebuilt from the files)
        write.lock         serializes the short commits of every writer
        erase.key          the key of the erased list (docs/forgetting.md)
        erased.txt         keyed digests of erased texts, never rewritten
        erased.local       the same lines, git-ignored: what git restores cannot cut it
        erasure.log        what each erasure removed (no erased text)
        erasure.log.local  the same lines, git-ignored, like erased.local
        erase-key.id       the team's erasure key's fingerprint, committed (docs/team.md)
        sync.lock          one `memex sync` of a vault at a time
        watch.json         the watcher's heartbeat; watch.lock its single-run lock
        writers/<pid>      folders a running process writes temp files in
        session-<s>.lock   serializes the writers of one archived session
        erasures.pending   erasures a store could not take yet, retried (docs/forgetting.md)
        cache/             hooks.log, context-commit.log, agents/ hook state, config-notices

Everything else takes these names from here: :class:`VaultPaths` for a
vault's absolute paths, the module-level names where only a name is wanted
(a vault-relative path in a message, or a file under a ``.memex/`` folder a
function was handed). This module imports nothing of memex, so any module
may import it.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from pathlib import Path

MEMEX_DIR = ".memex"
MEMORIES_DIR = "memories"
SESSIONS_DIR = "sessions"
# Vault-relative folders where memex writes files atomically (temp files a
# killed write left behind are looked for there; memex/files/orphans.py).
WRITE_FOLDERS = (MEMORIES_DIR, SESSIONS_DIR)

# Files and folders under .memex/
CONFIG_NAME = "config.toml"
CONFIG_LOCAL_NAME = "config.local.toml"
# Erasures whose purge a store (the PostgreSQL index) has not taken yet (memex/erased/pending.py).
ERASURES_PENDING_NAME = "erasures.pending"
INDEX_NAME = "index.db"
WRITE_LOCK_NAME = "write.lock"
ERASE_KEY_NAME = "erase.key"
ERASED_LIST_NAME = "erased.txt"
ERASED_JOURNAL_NAME = "erased.local"
ERASURE_LOG_NAME = "erasure.log"
ERASURE_JOURNAL_NAME = "erasure.log.local"
ERASE_KEY_ID_NAME = "erase-key.id"
SYNC_LOCK_NAME = "sync.lock"
# In the repository's git folder: spare copies of the erasure key and journals (memex/erased/spare.py).
GIT_SPARE_DIR = "memex"
# Beside memories/: which merge driver git uses for which files (docs/team.md).
GIT_ATTRIBUTES_NAME = ".gitattributes"
GIT_IGNORE_NAME = ".gitignore"
# What `memex init` writes beside memories/ to tell a reader what the folder is.
README_NAME = "README.md"
WATCH_STATE_NAME = "watch.json"
WATCH_LOCK_NAME = "watch.lock"
WRITERS_DIR = "writers"
CACHE_DIR = "cache"
HOOKS_LOG_NAME = "hooks.log"

# The settings file, vault-relative: how error messages name it.
CONFIG_RELPATH = Path(MEMEX_DIR) / CONFIG_NAME
CONFIG_LOCAL_RELPATH = Path(MEMEX_DIR) / CONFIG_LOCAL_NAME


def template_dir() -> Path:
    """The files `memex init` writes into a new vault (the installed package's
    copy, else the source tree's ``vault-template/``)."""
    packaged = Path(str(resources.files("memex"))) / "vault_template"
    if packaged.is_dir():
        return packaged
    return Path(__file__).resolve().parent.parent / "vault-template"


def is_vault(folder: Path) -> bool:
    """True when ``folder`` is a vault's root (it has a ``.memex/`` folder)."""
    return (folder / MEMEX_DIR).is_dir()


@dataclass(frozen=True)
class VaultPaths:
    """The absolute paths of one vault's folders and files."""

    root: Path

    @property
    def memex_dir(self) -> Path:
        return self.root / MEMEX_DIR

    @property
    def memories(self) -> Path:
        return self.root / MEMORIES_DIR

    @property
    def sessions(self) -> Path:
        return self.root / SESSIONS_DIR

    def session_dir(self, folder: str) -> Path:
        """The archive folder of one session, by its (already safe) folder name."""
        return self.sessions / folder

    def session_lock(self, folder: str) -> Path:
        return self.memex_dir / f"session-{folder}.lock"

    @property
    def config(self) -> Path:
        return self.memex_dir / CONFIG_NAME

    @property
    def config_local(self) -> Path:
        return self.memex_dir / CONFIG_LOCAL_NAME

    @property
    def erasures_pending(self) -> Path:
        return self.memex_dir / ERASURES_PENDING_NAME

    @property
    def index(self) -> Path:
        return self.memex_dir / INDEX_NAME

    @property
    def index_wal(self) -> Path:
        """SQLite's write-ahead log beside the index (part of its size on disk)."""
        return self.memex_dir / (INDEX_NAME + "-wal")

    @property
    def write_lock(self) -> Path:
        return self.memex_dir / WRITE_LOCK_NAME

    @property
    def erased_list(self) -> Path:
        return self.memex_dir / ERASED_LIST_NAME

    @property
    def erase_key_id(self) -> Path:
        return self.memex_dir / ERASE_KEY_ID_NAME

    @property
    def sync_lock(self) -> Path:
        return self.memex_dir / SYNC_LOCK_NAME

    @property
    def watch_state(self) -> Path:
        return self.memex_dir / WATCH_STATE_NAME

    @property
    def watch_lock(self) -> Path:
        return self.memex_dir / WATCH_LOCK_NAME

    @property
    def writers(self) -> Path:
        return self.memex_dir / WRITERS_DIR

    @property
    def cache(self) -> Path:
        return self.memex_dir / CACHE_DIR

    @property
    def hooks_log(self) -> Path:
        return self.cache / HOOKS_LOG_NAME

    @property
    def agents_cache(self) -> Path:
        """Per-agent hook state (last session, transcript offsets)."""
        return self.cache / "agents"

    @property
    def context_commit_log(self) -> Path:
        return self.cache / "context-commit.log"

    @property
    def config_notices(self) -> Path:
        """The settings notices a terminal was last shown (memex/config_trust.py: once, not at every command)."""
        return self.cache / "config-notices"
