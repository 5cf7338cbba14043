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

Formats (``--format``, else detected from the path): see :data:`FORMATS` and
docs/import.md. The parsing lives in memex/importers/markdown.py and
memex/importers/chats.py; this module finds the files and adds.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memex.errors import InvalidArgument, MemexError
from memex.importers import chats, limits, markdown
from memex.importers.markdown import Block
from memex.importers.walk import Confinement, markdown_files, read_text

if TYPE_CHECKING:
    from memex.vault import Vault

FORMATS = {
    "claude-md": "CLAUDE.md / AGENTS.md files and Claude Code's memory files (rules, auto memory)",
    "chatgpt": "a ChatGPT data export (conversations.json, or the export's .zip)",
    "claude-ai": "a Claude.ai data export (conversations.json, or the export's .zip)",
    "obsidian": "an Obsidian vault or any folder of Markdown notes",
    "basic-memory": "a basic-memory project folder (observations become memories)",
    "mem0": "a mem0-style JSON list of {\"memory\": ...} objects (or {\"results\": [...]})",
}
INSTRUCTION_NAMES = frozenset({"CLAUDE.md", "CLAUDE.local.md", "AGENTS.md"})
# Other agents' rule files, the same shape (a list of rules for an agent):
# Cursor's and Windsurf's rules files and Gemini CLI's context file. Cursor's
# newer rules are .cursor/rules/*.mdc (Markdown with frontmatter).
OTHER_RULE_NAMES = frozenset({".cursorrules", ".windsurfrules", "GEMINI.md"})
RULE_FOLDERS = {".cursor": ".mdc"}


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


def detect_format(path: Path, vault: Vault | None = None) -> str:
    """The format of ``path``, or an error that names the choices."""
    if path.is_dir():
        if (path / ".obsidian").is_dir():
            return "obsidian"
        if path.name in (".claude", *RULE_FOLDERS) or (path / ".claude").is_dir() or any(
            (path / name).is_file() for name in INSTRUCTION_NAMES | OTHER_RULE_NAMES
        ) or (path / "MEMORY.md").is_file() or (path / ".cursor" / "rules").is_dir():
            return "claude-md"
        where = Confinement(path, vault.root if vault is not None else None)
        for note in markdown_files(path, where, limit=50):
            try:
                if markdown.is_basic_memory_note(read_text(note, where)):
                    return "basic-memory"
            except InvalidArgument:
                continue  # reported when the import reads it
        return "obsidian"
    suffix = path.suffix.lower()
    if suffix in (".md", ".markdown", ".mdc") or path.name in OTHER_RULE_NAMES:
        return "claude-md"
    if suffix in (".json", ".zip"):
        found = chats.detect(_load_json(path))
        if found:
            return found
        raise InvalidArgument(
            str(path), "is JSON but not an export memex knows; pass --format (chatgpt, claude-ai, mem0)"
        )
    raise InvalidArgument(str(path), f"cannot tell its format; pass --format ({', '.join(FORMATS)})")


def candidates(
    path: Path, fmt: str, vault: Vault | None = None
) -> tuple[list[Candidate], list[dict[str, str]]]:
    """What ``path`` holds as memories, and the files that could not be read
    (``vault``: the vault imported into, whose folder is never read)."""
    if fmt not in FORMATS:
        raise InvalidArgument("--format", f"{fmt!r} is not one of {', '.join(FORMATS)}")
    ref_root = str(path.resolve())
    skipped: list[dict[str, str]] = []
    found: list[Candidate] = []
    if fmt in ("chatgpt", "claude-ai", "mem0"):
        if path.is_dir():
            raise InvalidArgument(str(path), f"is a folder; {fmt} imports read one JSON file (or the export's .zip)")
        data = _load_json(path)
        reader = {"chatgpt": chats.chatgpt_blocks, "claude-ai": chats.claude_ai_blocks, "mem0": chats.mem0_blocks}[fmt]
        found = [_candidate(block, ref_root, None) for block in reader(data, str(path))]
        return found, skipped
    vault_root = vault.root if vault is not None else None
    # A file named on its own is read wherever its link points (the vault
    # aside); the files of a folder only when they are the folder's.
    where = Confinement(path if path.is_dir() else None, vault_root)
    files = [path] if not path.is_dir() else list(_files_for(path, fmt, where))
    for file in files:
        rel = None if file == path else file.relative_to(path).as_posix()
        try:
            text = read_text(file, where)
            # A note the parsers cannot take (front matter nested past
            # Python's recursion limit, say) is that file's problem only.
            blocks = list(_blocks(text, file, fmt))
        except InvalidArgument as exc:
            skipped.append({"path": exc.argument, "reason": exc.reason})
            continue
        except (RecursionError, ValueError) as exc:
            skipped.append({"path": str(file), "reason": f"cannot be parsed ({type(exc).__name__}); not imported"})
            continue
        found.extend(_candidate(block, ref_root, rel) for block in blocks)
    return found, skipped


def _blocks(text: str, file: Path, fmt: str) -> Iterator[Block]:
    if fmt == "claude-md":
        for block in markdown.instruction_blocks(text):
            if block.category is None:
                block.category = _rule_category(block.text)
            yield block
    elif fmt == "basic-memory" and markdown.is_basic_memory_note(text):
        yield from markdown.basic_memory_blocks(text, file.stem)
    else:
        yield from markdown.note_blocks(text, file.stem)


def _rule_category(text: str) -> str:
    """A rule's category by the context engine's rules (preference, decision,
    constraint), else ``instruction``: it was written for an agent to follow."""
    from memex.context.extract import classify

    return classify(" ".join(text.split())) or "instruction"


def _candidate(block: Block, ref_root: str, rel: str | None) -> Candidate:
    anchor = f"{rel}#{block.anchor}" if rel else block.anchor
    return Candidate(
        block.text.strip(), f"{ref_root}#{anchor}", block.category, list(dict.fromkeys(block.entities)),
        block.confidence, block.section,
    )


def _files_for(root: Path, fmt: str, where: Confinement) -> Iterator[Path]:
    if fmt != "claude-md":
        yield from markdown_files(root, where)
        return
    found = markdown_files(
        root, where, hidden_ok=(".claude", *RULE_FOLDERS), names=tuple(OTHER_RULE_NAMES),
        suffixes=tuple(RULE_FOLDERS.values()),
    )
    for file in found:
        parts = file.relative_to(root).parts
        if "plugins" in parts[:-1]:
            continue  # ~/.claude/plugins holds other people's repositories, not your rules
        if file.name in INSTRUCTION_NAMES or file.name in OTHER_RULE_NAMES or file.name == "MEMORY.md":
            yield file
        elif len(parts) >= 2 and parts[-2] == "rules" and file.suffix in RULE_FOLDERS.values():
            owner = (root.name, *parts)[-3]  # the folder holding rules/ (root itself for .cursor)
            if RULE_FOLDERS.get(owner) == file.suffix:
                yield file  # .cursor/rules/*.mdc
        elif len(parts) >= 2 and parts[-2] in ("rules", "memory"):
            yield file  # .claude/rules/*.md; Claude Code's auto memory projects/<p>/memory/*.md
        elif root.name == "memory" and len(parts) == 1:
            yield file


def _load_json(path: Path) -> Any:
    data, origin = limits.read_export(path)
    return limits.load_json(data, origin)


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
