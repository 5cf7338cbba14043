"""The vault: a folder of memory files plus its derived index.

:class:`Vault` is the library API that the CLI, the hooks and the MCP server
all call; it is the one write path (principle 2 of docs/design.md). Adding a
memory writes its file atomically and indexes it at once (write-through), so
search is consistent without a running watcher.

``Vault`` is the small core: the files, the index, add/get/list/search/
recall/reindex, and the plumbing features use (config, stores, model,
indexer, write lock, scope checks). Features are functions in their packages
that take the vault (``memex.erase.steps.erase(vault, ...)``,
``memex.consolidation.consolidate.consolidate(vault, ...)``, ...); this
module imports none of them (docs/design.md, "Layers").
"""

from __future__ import annotations

import builtins
import os
import shutil
import subprocess
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any


from memex import decay, scopes
from memex.embedding import embed
from memex.files import memory_file
from memex.files import permissions
from memex.files import writers
from memex.config import Config, load_config, with_embedding_model
from memex.config_trust import machine_only
from memex.store import Backend, IndexStore, MemoryRow, open_backend
from memex.errors import InvalidArgument, MemoryNotFound, VaultNotFound
from memex.erased import erased_list, pending
from memex.index.guard import hide_erased
from memex.index.indexer import Indexer
from memex.index.sync_run import Progress, SyncReport
from memex.layout import CONFIG_RELPATH, MEMEX_DIR, VaultPaths
from memex.layout import template_dir as template_dir  # public here since before it moved
from memex.files.locking import file_lock
from memex.files.names import scope_dir_parts, slug
from memex.records import Memory as Memory  # public here since before it moved
from memex.records import now_iso, record_view
from memex.search.hybrid import Filters, Hit, hit_from_row, search
from memex.text import tokens

if TYPE_CHECKING:
    import numpy as np  # only where vectors are made: a lexical search loads none

    from memex.dedup.pipeline import AddResult  # the write path's; a search need not import it

ENV_VAR = "MEMEX_VAULT"


def find_vault_root(explicit: str | os.PathLike[str] | None = None, cwd: Path | None = None) -> Path:
    """``--vault``, else ``$MEMEX_VAULT``, else the nearest folder up with ``.memex/``."""
    for given, origin in ((explicit, "--vault"), (os.environ.get(ENV_VAR), ENV_VAR)):
        if given:
            root = Path(given).expanduser()
            if not (root / MEMEX_DIR).is_dir():  # a folder inside a vault means that vault, not a new one
                outer = next((f for f in root.resolve().parents if (f / MEMEX_DIR).is_dir()), None)
                fix = f"it is inside the vault {outer}: use {origin}{'=' if origin == ENV_VAR else ' '}{outer}"
                raise VaultNotFound(f"{origin}: {root} is not a memex vault (no {MEMEX_DIR}/ folder); "
                                    + (fix if outer else f"create one with `memex init {root}`"))
            return root.resolve()
    here = (cwd or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / MEMEX_DIR).is_dir():
            return folder
    raise VaultNotFound(
        "no vault found: pass --vault PATH, set MEMEX_VAULT, or run inside a vault; "
        "create one with `memex init PATH`"
    )


def _copy_template(src: Path, root: Path) -> None:
    """The template's files that ``root`` lacks, private. Not shutil.copytree:
    it copies the package's modes (0644, 0755) onto the vault's folders,
    even onto a folder that already existed."""
    for folder, _dirs, files in os.walk(src):
        target = root / Path(folder).relative_to(src)
        permissions.private_dir(target)
        for name in files:
            dst = target / name
            if not os.path.lexists(dst):
                permissions.write_private(dst, (Path(folder) / name).read_text(encoding="utf-8"))


def _inside_git_work_tree(folder: Path) -> bool:
    """True when ``folder`` is already (in) a git repository: no nested repo then."""
    probe = subprocess.run(
        ["git", "-C", str(folder), "rev-parse", "--is-inside-work-tree"], capture_output=True, text=True, check=False
    )
    return probe.returncode == 0 and probe.stdout.strip() == "true"


def init_vault(path: str | os.PathLike[str], git: bool = True, model: str | None = None) -> Path:
    """Create a vault from the template (and a git repository when git exists);
    ``model`` sets ``[embedding] model``, loaded first so a bad one creates nothing."""
    root = Path(path).expanduser().resolve()
    if root == Path(root.anchor) or root == Path.home().resolve():
        # Found from outside: `memex init ~` (the name forgotten) made the home
        # folder a vault and a git repository, found by every folder below it.
        where = "the file system's root" if root == Path(root.anchor) else "your home folder"
        raise InvalidArgument(
            "PATH", f"{root} is {where}; a vault is a folder of its own, e.g. `memex init ~/agent-vault`"
        )
    if (root / MEMEX_DIR).exists():
        raise InvalidArgument("PATH", f"{root} is already a vault")
    if root.exists() and not root.is_dir():
        raise InvalidArgument("PATH", f"{root} exists and is not a folder")
    outer = next((f for f in root.parents if (f / MEMEX_DIR).is_dir()), None)
    if outer is not None and root.is_relative_to(VaultPaths(outer).memories):
        # Found from outside: the outer vault indexed the new one's files as its own memories.
        raise InvalidArgument("PATH", f"{root} is inside the memories of the vault at {outer}")
    if model is not None:
        embed.require(model, argument="--model")
    permissions.private_dir(root)  # a new vault folder is 0700; an existing one keeps its mode
    paths = VaultPaths(root)
    for folder in (paths.memex_dir, paths.memories):
        permissions.private_dir(folder)
    # An existing folder (notes you already keep) keeps its own files; its
    # .gitignore only gains the lines that keep the index out of git.
    gitignore = root / ".gitignore"
    own_ignore = gitignore.read_text(encoding="utf-8") if gitignore.is_file() else None
    _copy_template(template_dir(), root)
    template_ignore = (template_dir() / ".gitignore").read_text(encoding="utf-8")
    if own_ignore is not None:
        lacking = [ln for ln in template_ignore.splitlines() if ln.strip() and ln not in own_ignore.splitlines()]
        if any(not ln.startswith("#") for ln in lacking):
            gitignore.write_text(own_ignore.rstrip("\n") + "\n\n" + "\n".join(lacking) + "\n", encoding="utf-8")
    permissions.private_dir(paths.memories)
    if model is not None:
        # A model folder is a path on this machine: this clone's own settings (memex/config_trust.py).
        target = paths.config if machine_only("embedding", "model", model) is None else paths.config_local
        permissions.write_private(target, with_embedding_model(target.read_text(encoding="utf-8"), model))
    if git and shutil.which("git") and not _inside_git_work_tree(root):
        subprocess.run(["git", "init", "-q", str(root)], check=False, capture_output=True)
    Vault(root).reindex()
    return root


def open_vault(path: str | os.PathLike[str] | None = None) -> Vault:
    """Open the vault at ``path`` (or the one found from the environment)."""
    return Vault(find_vault_root(path))


class Vault:
    # How long an add waits for the write lock: as long as it takes (None),
    # since the lock is held only for short commits and dies with its holder.
    # Hooks, which must answer promptly, set a bound (agents/hook_io.py).
    lock_wait: float | None = None

    def __init__(self, root: str | os.PathLike[str], embedder: embed.Embedder | None | str = "config") -> None:
        self.root = Path(root)
        self.paths = VaultPaths(self.root)
        self._erased = erased_list.Guard(self.paths.memex_dir)  # reads hide what a restored old index.db still holds
        self.config: Config = load_config(self.root)
        self._embedder_choice = embedder
        self._embedder_loaded = False
        self._embedder: embed.Embedder | None = None
        self._indexer: Indexer | None = None
        # The one index object, whichever database holds it (memex/store/backend.py); nothing connects yet.
        self.backend: Backend = open_backend(self.root, self.config, lambda: self.embedder, self._finish_erasures)
        self._scope_rules: scopes.ScopeRules | None = None
        # Temp files (whole memory texts) a killed write left behind go now,
        # not at the next reindex: one listing of a small folder (memex/files/writers.py).
        writers.sweep(self.root)

    # -- plumbing ------------------------------------------------------------

    @property
    def memex_dir(self) -> Path:
        return self.paths.memex_dir

    @property
    def store(self) -> IndexStore:
        """The index the vault answers from (docs/store.md)."""
        return self.backend.store

    @property
    def local_store(self) -> IndexStore:
        """This clone's own index: what its files were when it last read them
        (docs/postgres.md, "What is shared and what stays local")."""
        return self.backend.local

    def _finish_erasures(self, backend: Backend) -> None:
        """On first reaching a shared index: the erasures journaled for it (memex/erased/pending.py)."""
        if backend.target is not None:
            pending.finish_on_connect(self.memex_dir, backend.target, backend.purge)

    @property
    def embedder(self) -> embed.Embedder | None:
        """The embedding model, loaded on first use; None means lexical only."""
        if not self._embedder_loaded:
            choice = self._embedder_choice
            self._embedder = (
                embed.load_embedder(self.config.embedding_model) if isinstance(choice, str) else choice
            )
            self._embedder_loaded = True
        return self._embedder

    def set_embedder(self, embedder: embed.Embedder | None | str = "config") -> None:
        """Embed with ``embedder`` from now on (``"config"``: the vault's model,
        loaded on first use). A hook that answered its agent without the model
        does the work it leaves for after the answer with it
        (memex/agents/hook_run.py)."""
        self._embedder_choice = embedder
        self._embedder_loaded = False
        self._embedder = None
        self._indexer = None  # built with the embedder it had

    def embedder_status(self) -> str:
        if self.embedder is not None:
            return f"{self.embedder.model_id} ({self.embedder.dim} dimensions)"
        return embed.why_no_embedder(self.config.embedding_model) or "no embedding model; lexical search only"

    @property
    def indexer(self) -> Indexer:
        if self._indexer is None:
            self.backend.connect()  # an index that cannot be reached is an error here, before any write
            self._indexer = Indexer(self.root, self.backend.local, self.config, self.embedder)
            for store in self.backend.followers:  # an index other clones write too follows this clone's
                follower = Indexer(self.root, store, self.config, self.embedder, borrow=self.backend.local)
                self._indexer.followers.append(follower.follow)
        return self._indexer

    def close(self) -> None:
        self.backend.close()
        self._indexer = None

    def reopen_if_replaced(self) -> bool:
        """For a process that keeps the vault open (the watcher, the MCP and
        OpenClaw servers): when ``index.db`` was deleted or replaced since it was
        opened, close it, so that the next use opens the file there now (a new
        one, empty, when it was deleted: the caller reindexes). True when it did."""
        if not self.backend.replaced():
            return False
        self.close()
        return True

    def __enter__(self) -> Vault:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def write_lock(self, timeout: float = 30.0) -> AbstractContextManager[IO[bytes]]:
        return file_lock(self.paths.write_lock, timeout)

    def commit(self, timeout: float | None = None) -> AbstractContextManager[None]:
        """``write.lock`` plus a write transaction, for a short commit; never
        holds the lock while SQLite is busy (memex/store/backend.py, ``commit``).
        ``timeout`` None means :attr:`lock_wait`. A shared index's write lock
        is held too."""
        return self.backend.commit(self.paths.write_lock, timeout if timeout is not None else self.lock_wait)

    @property
    def scope_rules(self) -> scopes.ScopeRules:
        """The scopes this vault accepts (built-in kinds plus ``[scopes] extra_kinds``)."""
        self._scope_rules = self._scope_rules or scopes.rules_for(self.config)
        return self._scope_rules

    def check_scope(self, scope: str | None) -> str:
        """A valid scope for a new memory: ``scope``, else the configured default."""
        if not scope:
            return self.scope_rules.check(self.config.default_scope, f"[vault] default_scope in {CONFIG_RELPATH}")
        return self.scope_rules.check(scope)

    def check_scope_filter(self, scope: str | Sequence[str] | None) -> tuple[str, ...] | None:
        """Scopes to narrow a search or listing to, each valid or held by some
        memory; returned as the index holds them (normalised as ``add``
        stores them: ``"ｐｒｏｊｅｃｔ:web "`` is ``project:web``), None for none."""
        if not scope:
            return None
        in_use = self.store.scope_in_use
        return tuple(scopes.check_filter(self.scope_rules, in_use, [scope] if isinstance(scope, str) else scope))

    def _filters(
        self, scope: str | Sequence[str] | None, source: str | None, session: str | None, superseded: bool
    ) -> Filters:
        for name, value in (("source", source), ("session", session)):
            # An empty filter would read as no filter: found from outside, `memex list
            # --session ""` listed every memory.
            if value is not None and not value.strip():
                raise InvalidArgument(name, "must not be empty")
        return Filters(self.check_scope_filter(scope), source, session, superseded)

    def scope_filter(self, scope: str | None) -> str | None:
        """One scope to narrow to, checked and normalised (:meth:`check_scope_filter`)."""
        checked = self.check_scope_filter(scope)
        return checked[0] if checked else scope

    def embed_query(self, text: str) -> np.ndarray | None:
        if self.embedder is None:
            return None
        self.indexer  # vector tables must match this model before a caller queries them
        local = self.local_store
        blobs, rows = embed.cached_vectors(local, self.embedder, [text])
        if rows:
            with local.write_txn():
                embed.store_cache(local, rows)
        return embed.from_blob(blobs[0])

    # -- reading -------------------------------------------------------------

    def row_by_id(self, memory_id: str) -> MemoryRow:
        """The index row of one memory (its path, status, fields); MemoryNotFound if none."""
        row = self.store.row_by_id(memory_id)
        if row is None:
            raise MemoryNotFound(memory_id)
        return row

    def get(self, memory_id: str) -> Memory:
        """The memory with this id, read from its file.

        On a shared index (``[index] backend = "postgres"``) a memory another
        clone added may have no file here yet (until git brings it): it is
        then answered from its index row, which holds the body and the
        fields memex shows (docs/postgres.md)."""
        store = self.store
        row = self.row_by_id(memory_id)
        hit = hit_from_row(row)
        if not self._hide_erased([hit]):
            raise MemoryNotFound(memory_id)  # erased: a restored old index.db's row, or a teammate's erasure
        count, last = store.usage_of(memory_id)
        decay.annotate(store, [hit], decay.load_policy(self.config))
        record = {k: v for k, v in record_view(hit).items() if k != "body"}
        full = self.root / row.path
        if self.backend.shared and not os.path.lexists(full):
            meta = {k: v for k, v in record.items() if v is not None and k not in ("path", "status", "effective_confidence")}
            return Memory(memory_id, row.path, meta, row.body, row.status, count, last, record)
        mf, _ = memory_file.read_indexed(full, self.config.max_file_bytes, self.root)
        return Memory(memory_id, row.path, dict(mf.meta), mf.body, row.status, count, last, record)

    def list(
        self,
        scope: str | Sequence[str] | None = None,
        session: str | None = None,
        source: str | None = None,
        include_superseded: bool = False,
        limit: int | None = None,
    ) -> list[Hit]:
        filters = self._filters(scope, source, session, include_superseded)
        store = self.store
        hits = [hit_from_row(r) for r in store.list_rows(filters, limit)]
        hits = self._hide_erased(hits)
        decay.annotate(store, hits, decay.load_policy(self.config))
        return hits

    def _hide_erased(self, hits: builtins.list[Hit]) -> builtins.list[Hit]:
        """``hits`` without what was erased: on an index other clones write, row by row (their
        erasures may not be purged there yet: memex/erased/pending.py); on this clone's own, only
        while a restored old index.db may hold erased rows (memex/index/guard.py)."""
        if self.backend.shared:
            return pending.hide(self._erased, hits)
        return hide_erased(self.store, self._erased, hits)

    def search(
        self,
        query: str,
        limit: int = 10,
        scope: str | Sequence[str] | None = None,
        source: str | None = None,
        session: str | None = None,
        include_superseded: bool = False,
        floor: bool = True,
    ) -> builtins.list[Hit]:  # `list` here would name the method above
        """Hybrid search over active memories (superseded ones only when asked);
        ``floor=False`` keeps hits below the relevance floor (docs/search.md)."""
        if not query.strip():
            raise InvalidArgument("query", "must not be empty")
        if not tokens(query):
            # Neither BM25 nor the model has anything to go on (found from outside:
            # `memex search "?!"` answered with the model's noise as hits).
            raise InvalidArgument("query", "has no words to search for (only punctuation or symbols)")
        if limit < 1:
            raise InvalidArgument("limit", "must be at least 1")
        filters = self._filters(scope, source, session, include_superseded)
        self.indexer  # make sure vector tables match the loaded model
        # Query vectors come from an in-process LRU, not the index's cache:
        # a search takes no write lock and does not grow the index.
        qvec = embed.query_vector(self.embedder, query) if self.embedder is not None else None
        found = search(self.backend.lookup, self.embedder, query, limit, filters, qvec, floor=floor)
        hits = self._hide_erased(found)
        decay.annotate_from(self.backend.last_accesses, hits, decay.load_policy(self.config))
        return hits

    def recall(
        self,
        query: str,
        limit: int = 6,
        scope: str | Sequence[str] | None = None,
        gate: Callable[[Sequence[Hit]], builtins.list[Hit]] | None = None,
    ) -> builtins.list[Hit]:
        """Search for an agent's context: active memories only, and counts the recall.

        Decay (docs/consolidation.md, "Decay") filters memories whose effective confidence is too low;
        ``gate`` (the context engine's, memex/context/gate.py) drops more before
        the best ``limit`` are taken, so only what is returned counts as recalled.
        """
        if not tokens(query):
            return []  # an agent's "?!" or "..." prompt: nothing to recall, and no reason to fail the turn
        # Ask for more than `limit`: decayed memories are dropped afterwards.
        hits = self.search(query, limit=limit * 3 + 10, scope=scope)
        floor = decay.load_policy(self.config).min_confidence
        hits = [h for h in hits if (h.effective_confidence or 0.0) >= floor]
        if gate is not None:
            hits = gate(hits)
        hits = hits[:limit]
        self.record_access([h.id for h in hits])
        return hits

    def record_access(self, ids: Sequence[str]) -> None:
        """Count a recall of these memories (a soft signal kept in the index only)."""
        if not ids:
            return
        stamp = now_iso()
        local = self.local_store
        with local.write_txn():
            local.record_use(ids, stamp)
        self.backend.record_use(ids, stamp)

    # -- writing -------------------------------------------------------------

    def reindex(self, full: bool = False, progress: Progress | None = None) -> SyncReport:
        """Bring the index in line with the files; ``full`` re-reads every file."""
        report = self.indexer.sync(full=full, progress=progress)
        # Rows of vanished files were purged (a crashed erase, a file deleted by
        # hand): make their text unreadable on disk too (docs/forgetting.md, memex/store/sqlite/scrub.py).
        backend = self.backend
        backend.scrub_if_pending()
        if backend.target is not None:  # what the erased list holds and the shared index still has (erased/pending.py)
            report.removed += len(pending.sweep(backend.local, backend.store, self._erased, backend.target,
                                                backend.purge))
        return report

    def new_path(self, scope: str, body: str, memory_id: str) -> Path:
        folder = self.paths.memories / Path(*scope_dir_parts(scope))
        stem = slug(body)
        tail = memory_id[-6:].lower()
        path = folder / f"{stem}-{tail}.md"
        if path.exists():
            path = folder / f"{stem}-{memory_id.lower()}.md"
        return path

    def add(
        self,
        text: str,
        scope: str | None = None,
        source: str | None = "user",
        session: str | None = None,
        source_ref: str | None = None,
        category: str | None = None,
        confidence: float | None = None,
        entities: Sequence[str] | None = None,
        extra: dict[str, Any] | None = None,
        supersedes: str | None = None,
        allow_erased: bool = False,
    ) -> AddResult:
        """Store a memory unless the dedup pipeline finds it is already known.

        A body that was erased before is refused (method "erased") unless
        ``allow_erased`` (docs/forgetting.md, memex/erased/erased_list.py). A body the index
        would never hold (over ``[index] max_file_bytes``, a NUL byte) raises
        InvalidArgument and nothing is written. See memex/adding.py.
        """
        from memex.adding import add

        return add(
            self, text, scope=scope, source=source, session=session, source_ref=source_ref, category=category,
            confidence=confidence, entities=entities, extra=extra, supersedes=supersedes, allow_erased=allow_erased,
        )

