"""``memex import``: bring in the memories a newcomer already keeps elsewhere.

Every memory goes through :meth:`memex.vault.Vault.add`, the one write path:
dedup (an import run twice adds nothing the second time), the erased-text
guard, write-through indexing. Provenance is kept so that an import can be
erased as a subject later:

- ``source`` is ``import:<format>`` (``import:chatgpt``, ``import:claude-md``, ...);
- ``source_ref`` is ``<absolute path>#<anchor>``: for a single file the
  anchor names the place in it (``3`` for its third rule, ``<conversation
  id>#<message id>`` in an export); for a folder it begins with the file's
  path inside the folder (``notes/deploys.md#note``). ``memex erase
  --source-ref <path>`` therefore erases a whole import, and ``--source-ref
  '<folder>#notes/deploys.md'`` one file of it.

Formats (``--format``, else detected from the path) are entries of the
``memex.importers`` group (memex/plugins.py): memex's own in
memex/importers/formats.py (docs/import.md), other packages' found through
their entry points (docs/plugins.md); each reads through
:class:`~memex.importers.source.Source`. This module asks the format for
its memories and adds them.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memex import plugins
from memex.errors import InvalidArgument, MemexError
from memex.importers.markdown import Block as Block
from memex.importers.source import Importer, Source as Source

if TYPE_CHECKING:
    from memex.vault import Vault


@dataclass
class Candidate:
    """One memory an import would add."""

    text: str
    source_ref: str
    category: str | None = None
    entities: list[str] = field(default_factory=list)
    confidence: float | None = None
    section: str | None = None


@dataclass
class ImportReport:
    path: str
    format: str
    source: str
    scope: str
    dry_run: bool
    found: int = 0
    created: int = 0
    duplicate: int = 0
    refused: int = 0
    failed: int = 0
    items: list[dict[str, Any]] = field(default_factory=list)
    skipped_files: list[dict[str, str]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        printable: dict[str, Any] = _printable(asdict(self))
        return printable


def _printable(value: Any) -> Any:
    """``value`` with every string valid UTF-8: a lone surrogate (a JSON
    export's ``\\udce9``, a file name's undecodable byte) becomes its escape,
    so the report prints as valid JSON whatever it read."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return value.encode("utf-8", "backslashreplace").decode("utf-8")
        return value
    if isinstance(value, dict):
        return {_printable(k): _printable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_printable(v) for v in value]
    return value


Progress = Callable[[int, int, "ImportReport"], None]


def known_formats() -> dict[str, str]:
    """Every format ``--format`` takes, with its description: memex's own, then
    plug-ins' (docs/plugins.md). A plug-in that cannot be loaded is said once
    on stderr and left out."""
    return {entry.name: str(getattr(fmt, "description", "")) for entry, fmt in _loaded_formats()}


def _loaded_formats() -> list[tuple[plugins.Entry, Importer]]:
    return plugins.load_all(plugins.IMPORTERS)


def _format(name: str) -> tuple[plugins.Entry, Importer]:
    entry = plugins.find(plugins.IMPORTERS, name)
    if entry is None:
        raise InvalidArgument("--format", f"{name!r} is not one of {', '.join(plugins.names(plugins.IMPORTERS))}")
    fmt: Importer = entry.load()
    return entry, fmt


def detect_format(path: Path, vault: Vault | None = None) -> str:
    """The format of ``path``, or an error that names the choices: each format's
    ``detect`` is asked in turn, memex's own first; a folder none claims is
    read as Markdown notes (obsidian)."""
    source = Source(path, vault.root if vault is not None else None)
    for entry, fmt in _loaded_formats():
        detect = getattr(fmt, "detect", None)
        if detect is None:
            continue
        try:
            if detect(source):
                return entry.name
        except MemexError:
            raise  # the path's own problem (an export too large, say): the same for every format
        except Exception as exc:  # noqa: BLE001 - another package's bug must not stop memex's formats
            if entry.builtin:
                raise
            plugins.warn(f"{entry.label} failed to look at {path} ({type(exc).__name__}: {exc}); not asked again")
    if source.is_dir:
        return "obsidian"
    choices = ", ".join(plugins.names(plugins.IMPORTERS))
    if path.suffix.lower() in (".json", ".zip"):
        raise InvalidArgument(str(path), f"is JSON but not an export memex knows; pass --format ({choices})")
    raise InvalidArgument(str(path), f"cannot tell its format; pass --format ({choices})")


def candidates(
    path: Path, fmt: str, vault: Vault | None = None
) -> tuple[list[Candidate], list[dict[str, str]]]:
    """What ``path`` holds as memories, and the files that could not be read
    (``vault``: the vault imported into, whose folder is never read)."""
    entry, reader = _format(fmt)
    source = Source(path, vault.root if vault is not None else None)
    ref_root = str(path.resolve())
    try:
        found = [_candidate(entry, block, ref_root) for block in reader.read(source)]
    except MemexError:
        raise
    except Exception as exc:  # noqa: BLE001 - a plug-in's bug is one line naming it
        if entry.builtin:
            raise
        raise entry.fail(f"failed reading {path} ({type(exc).__name__}: {exc}); nothing was imported") from exc
    if not found and source.skipped and not source.is_dir:
        # One file named, and it could not be read: that is the import's error,
        # not "nothing to import" (in a folder, the others go on).
        first = source.skipped[0]
        raise InvalidArgument(first["path"], first["reason"])
    return found, source.skipped


def _candidate(entry: plugins.Entry, block: Block, ref_root: str) -> Candidate:
    if not isinstance(block, Block) or not isinstance(block.text, str) or not isinstance(block.anchor, str):
        raise entry.fail(f"gave {type(block).__name__} {block!r:.80}, not a Block with text and anchor")
    return Candidate(
        block.text.strip(), f"{ref_root}#{block.anchor}", block.category, list(dict.fromkeys(block.entities)),
        block.confidence, block.section,
    )


def import_path(
    vault: Vault,
    path: str | os.PathLike[str],
    fmt: str = "auto",
    scope: str | None = None,
    dry_run: bool = False,
    progress: Progress | None = None,
    allow_erased: bool = False,
) -> ImportReport:
    """Import the memories ``path`` holds into ``vault`` (nothing is written with ``dry_run``);
    ``allow_erased`` stores texts that were erased before too (as ``memex add --allow-erased``)."""
    where = Path(path).expanduser()
    if not where.exists():
        raise InvalidArgument("PATH", f"{where} does not exist")
    inside = where.resolve()
    if inside == vault.root.resolve() or vault.root.resolve() in inside.parents:
        raise InvalidArgument("PATH", f"{where} is inside the vault: its Markdown files are memories already")
    chosen = detect_format(where, vault) if fmt == "auto" else fmt
    found, skipped = candidates(where, chosen, vault)
    scope = vault.check_scope(scope)  # the vault's rules: kinds, look-alike and hidden characters
    report = ImportReport(
        str(where.resolve()), chosen, f"import:{chosen}", scope, dry_run, len(found), skipped_files=skipped
    )
    adder = vault
    ahead = None
    if not dry_run and vault.embedder is not None:
        from memex.vault import Vault as _Vault

        from memex.text import body_hash

        def stored(body: str, scope: str = scope) -> bool:
            return vault.store.exact_duplicate(scope, body_hash(body), None) is not None

        ahead = Prefetched(vault.embedder, vault.indexer.chunker, stored)
        adder = _Vault(vault.root, embedder=ahead)
    try:
        for n, cand in enumerate(found, 1):
            if ahead is not None and (n - 1) % EMBED_AHEAD == 0:
                ahead.prefetch(found[n - 1 : n - 1 + EMBED_AHEAD])
            item: dict[str, Any] = {
                "text": cand.text, "source_ref": cand.source_ref, "category": cand.category,
                "section": cand.section, "entities": cand.entities,
            }
            if not dry_run:
                item.update(_add(adder, cand, report, allow_erased))
            report.items.append(item)
            if progress is not None:
                progress(n, len(found), report)
    finally:
        if adder is not vault:
            adder.close()
    return report


# Candidates whose texts are embedded together before they are added one by one.
EMBED_AHEAD = 64


class Prefetched:
    """The vault's model, fed in batches: before a run of adds, the texts those
    adds will embed (the body, the normalized body the index stores and, for a
    long one, its chunks) are embedded together, and each add then takes its
    vectors from here. The body and its normalized text are one run of the
    model when it reads them alike (:meth:`memex.embedding.embed.FastEmbedder.embed`).

    Only in memory: nothing reaches the index's embedding cache that
    :meth:`Vault.add` would not put there itself, so a refused (erased) or
    duplicate text leaves no vector behind (memex/adding.py keeps the cache to
    what stored memories use). A text not prefetched goes to the model.
    """

    def __init__(
        self, model: Any, chunker: Callable[[str], list[str]] | None = None,
        stored: Callable[[str], bool] | None = None,
    ) -> None:
        self.model = model
        self.chunker = chunker
        # A body stored already is answered "duplicate" before any embedding
        # (memex/adding.py): nothing to embed ahead for it.
        self.stored = stored
        self.model_id: str = model.model_id
        self.dim: int = model.dim
        self._ready: dict[str, Any] = {}

    def prefetch(self, cands: list[Candidate]) -> None:
        from memex.text import normalize, strip_injected

        texts: list[str] = []
        for cand in cands:
            body = strip_injected(cand.text).strip()
            if not _unicode(body):
                continue  # refused by the add (one failed item), never hashed nor embedded
            if self.stored is not None and self.stored(body):
                continue
            indexed = normalize(body)  # the text the index embeds, and chunks if it is long
            texts += [body, indexed, *(self.chunker(indexed) if self.chunker is not None else ())]
        wanted = [t for t in dict.fromkeys(texts) if t]
        self._ready = dict(zip(wanted, self.model.embed(wanted))) if wanted else {}

    def embed(self, texts: Any) -> Any:
        import numpy as np

        missing = [t for t in dict.fromkeys(texts) if t not in self._ready]
        fresh = dict(zip(missing, self.model.embed(missing))) if missing else {}
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([self._ready[t] if t in self._ready else fresh[t] for t in texts]).astype(np.float32)


def _unicode(text: str) -> bool:
    """Whether ``text`` is text UTF-8 can hold (a JSON export's lone surrogate escape is not)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _add(vault: Vault, cand: Candidate, report: ImportReport, allow_erased: bool = False) -> dict[str, Any]:
    extra = {"section": cand.section} if cand.section else None
    try:
        result = vault.add(
            cand.text, scope=report.scope, source=report.source, source_ref=cand.source_ref,
            category=cand.category, confidence=cand.confidence, entities=cand.entities or None, extra=extra,
            allow_erased=allow_erased,
        )
    except MemexError as exc:
        report.failed += 1
        return {"status": "failed", "reason": str(exc)}
    status = result.status if result.status in ("created", "duplicate", "refused") else "failed"
    setattr(report, status, getattr(report, status) + 1)
    return {"status": result.status, "id": result.id or result.existing_id, "method": result.method}


class Ticker:
    """Calls ``emit`` at most every ``every`` seconds (and for the last item)."""

    def __init__(self, emit: Callable[[str], None], every: float = 2.0) -> None:
        self.emit = emit
        self.every = every
        self._last = time.monotonic()

    def __call__(self, done: int, total: int, report: ImportReport) -> None:
        now = time.monotonic()
        if done == total or now - self._last >= self.every:
            self._last = now
            verb = "read" if report.dry_run else "imported"
            self.emit(
                f"import: {verb} {done}/{total} ({report.created} created, {report.duplicate} duplicate, "
                f"{report.refused} refused, {report.failed} failed)"
            )
