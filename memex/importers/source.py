"""What an import format is, and what it reads through.

A format (memex's own in memex/importers/formats.py, or another package's
``memex.importers`` entry point: docs/plugins.md) is an object with

- ``description``: one line saying what PATH holds;
- ``read(source)``: the memories-to-be of ``source.path``, as
  :class:`~memex.importers.markdown.Block` objects (text, and an anchor
  that says where in the file each sits: it becomes the memory's
  ``source_ref``, ``<path>#<anchor>``);
- optionally ``detect(source)``: True when ``--format auto`` should pick it
  for this path (formats are asked in turn; a folder none claims is read as
  Markdown notes).

A format reads through :class:`Source`, which reads as memex's own formats
do: a file of a folder only when it is the folder's own (a link out of it
is refused), never the vault's files, never a FIFO, at most 4 MiB of UTF-8
text per note and an export within its size and nesting limits
(memex/importers/limits.py). A file that cannot be read or parsed is
reported (``skipped``) and the others are imported.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any, Protocol

from memex.errors import InvalidArgument
from memex.importers import limits
from memex.importers.markdown import Block
from memex.importers.walk import Confinement, markdown_files, read_text

_UNREAD = object()


class Importer(Protocol):
    """An import format: ``read`` is required, ``detect`` optional."""

    description: str

    def read(self, source: Source) -> Iterable[Block]:
        """The memories-to-be ``source.path`` holds."""
        ...


class Source:
    """The path a user asked to import, and memex's safe ways to read it."""

    def __init__(self, path: Path, vault: Path | None = None) -> None:
        self.path = path
        self.vault = vault
        # A file named on its own is read wherever its link points (the vault
        # aside); the files of a folder only when they are the folder's.
        self.where = Confinement(path if path.is_dir() else None, vault)
        self.skipped: list[dict[str, str]] = []
        self._json: Any = _UNREAD

    @property
    def is_dir(self) -> bool:
        return self.path.is_dir()

    def text(self, file: Path | None = None) -> str:
        """The UTF-8 text of ``file`` (default: the path itself), checked as every note is."""
        return read_text(self.path if file is None else file, self.where)

    def json(self, fmt: str = "this format") -> Any:
        """The path's JSON (a .json file, or the JSON inside an export's .zip), read once."""
        if self.is_dir:
            raise InvalidArgument(str(self.path), f"is a folder; {fmt} imports read one JSON file (or the export's .zip)")
        if self._json is _UNREAD:
            data, origin = limits.read_export(self.path)
            self._json = limits.load_json(data, origin)
        return self._json

    def files(
        self, suffixes: tuple[str, ...] = (".md", ".markdown"), names: tuple[str, ...] = (),
        hidden_ok: tuple[str, ...] = (), limit: int | None = None,
    ) -> Iterator[Path]:
        """For a folder, its files ending in one of ``suffixes`` or called one of
        ``names``, in name order (hidden files and folders, version control,
        dependencies and the vault skipped; ``hidden_ok`` folders walked);
        for a file, the file."""
        if not self.is_dir:
            yield self.path
            return
        markdown = set(suffixes) >= {".md", ".markdown"}
        rest = tuple(s for s in suffixes if s not in (".md", ".markdown"))
        yield from markdown_files(
            self.path, self.where, limit=limit, hidden_ok=hidden_ok, names=names, suffixes=rest, markdown=markdown,
        )

    def blocks(self, files: Iterable[Path], parse: Callable[[Path, str], Iterable[Block]]) -> Iterator[Block]:
        """Each file's text, parsed by ``parse(file, text)``. In a folder a
        block's anchor begins with its file's path inside the folder
        (``notes/deploys.md#2``). A file that cannot be read or parsed is
        reported in :attr:`skipped` and the others go on."""
        for file in files:
            rel = None if file == self.path else file.relative_to(self.path).as_posix()
            try:
                # A note the parser cannot take (front matter nested past
                # Python's recursion limit, say) is that file's problem only.
                found = list(parse(file, self.text(file)))
            except InvalidArgument as exc:
                self.skip(exc.argument, exc.reason)
                continue
            except (RecursionError, ValueError) as exc:
                self.skip(str(file), f"cannot be parsed ({type(exc).__name__}); not imported")
                continue
            yield from (replace(b, anchor=f"{rel}#{b.anchor}") if rel else b for b in found)

    def skip(self, path: Path | str, reason: str) -> None:
        """Report a file that is not imported, and why (``memex import`` prints it)."""
        self.skipped.append({"path": str(path), "reason": reason})
