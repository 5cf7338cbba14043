"""Import Markdown documents as resource memories (the MCP tool memory_add_resource).

A document is cut at its ``#`` and ``##`` headings (not inside code
fences): one memory per section, because recall injects whole memories and
a 30-page manual injected whole would crowd out everything else. Each
section starts with ``<document title> › <heading>`` so that it still says
what it belongs to on its own. Sections land in the ``resources`` scope by
default with ``source: import`` and ``source_ref: <file>#<n>``; importing
the same file again finds every unchanged section already stored (exact
dedup), so re-imports are cheap and create nothing twice.

An agent names the path, so it may only name files under the allowed roots
(docs/write-path.md, "Resources come only from allowed roots"): the vault, the agent's project folder (the server's
working folder, unless that is ``/`` or the home folder itself) and the
folders listed in ``[resources] roots`` of the vault config. A path is
judged by where it really is: a symbolic link out of the roots is refused,
inside a folder as well as given directly.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memex.config import string_list
from memex.errors import InvalidArgument, MemexError
from memex.layout import CONFIG_LOCAL_RELPATH

if TYPE_CHECKING:  # the MCP server reads DEFAULT_SCOPE before it loads the vault
    from memex.vault import Vault

DEFAULT_SCOPE = "resources"
SUFFIXES = (".md", ".markdown")
_HEADING = re.compile(r"^(#{1,2})\s+(.+?)\s*#*\s*$")
_FENCE = re.compile(r"^\s*(```|~~~)")
MIN_CHARS = 20  # a heading with no text under it is not worth a memory


def sections(text: str, default_title: str) -> list[tuple[str, str]]:
    """(label, body) pairs of a Markdown document, label ``title › heading``.

    The title is the document's leading ``# heading`` when it has one, else
    ``default_title`` (the file name); text before any heading is headed by it.
    """
    raw: list[tuple[str, str]] = []
    heading, in_fence = "", False
    lines: list[str] = []
    for line in text.splitlines():
        if _FENCE.match(line):
            in_fence = not in_fence
        found = None if in_fence else _HEADING.match(line)
        if found:
            raw.append((heading, "\n".join(lines).strip()))
            heading, lines = found.group(2), []
        else:
            lines.append(line)
    raw.append((heading, "\n".join(lines).strip()))
    title = default_title
    first = _first_heading(text)
    if len(raw) > 1 and not raw[0][1] and first is not None and first.startswith("# "):
        title = raw[1][0]
    out = []
    for head, body in raw:
        if len(body) < MIN_CHARS:
            continue
        label = title if head in ("", title) else f"{title} › {head}"
        out.append((label, body))
    return out


def _first_heading(text: str) -> str | None:
    for line in text.splitlines():
        if _HEADING.match(line):
            return line.strip()
    return None


def allowed_roots(vault: Vault, cwd: str | os.PathLike[str] | None = None) -> list[Path]:
    """Where resources may come from, each resolved: the vault, the project
    folder (``cwd``, default the working folder) and ``[resources] roots``."""
    roots = [vault.root]
    project = Path(cwd if cwd is not None else os.getcwd()).expanduser().resolve()
    # A server started from / or from the home folder has no project folder:
    # taking it as one would allow every file the user can read.
    if project != Path(project.anchor) and project != Path.home().resolve():
        roots.append(project)
    where = f"[resources] in {CONFIG_LOCAL_RELPATH}"
    for entry in string_list(vault.config.section("resources"), "roots", (), where):
        root = Path(entry).expanduser()
        roots.append(root if root.is_absolute() else vault.root / root)
    return [Path(os.path.realpath(r)) for r in roots]


def _inside(path: Path, roots: Sequence[Path]) -> bool:
    return any(path == root or root in path.parents for root in roots)


def _refusal(given: Path, real: Path, roots: Sequence[Path]) -> str:
    via = f" (a symbolic link to {real})" if real != given else ""
    listed = ", ".join(str(r) for r in roots)
    return (
        f"{given}{via} is outside the folders resources may be imported from ({listed}); "
        f"add its folder to [resources] roots in {CONFIG_LOCAL_RELPATH} (this machine's own settings) to allow it"
    )


def markdown_files(path: Path, roots: Sequence[Path]) -> tuple[list[Path], list[dict[str, str]]]:
    """The Markdown files at ``path`` that really lie under ``roots``, and the
    ones refused (links out of the roots) with why."""
    real = Path(os.path.realpath(path))
    if not _inside(real, roots):
        raise InvalidArgument("path", _refusal(path, real, roots))
    if real.is_file():
        if path.suffix.lower() not in SUFFIXES and real.suffix.lower() not in SUFFIXES:
            raise InvalidArgument("path", f"{path} is not a Markdown file ({', '.join(SUFFIXES)})")
        return [real], []
    if not real.is_dir():
        raise InvalidArgument("path", f"{path} does not exist")
    files: list[Path] = []
    refused: list[dict[str, str]] = []
    # os.walk does not enter linked folders; a linked file is judged by its target.
    for folder, dirs, names in os.walk(real):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(names):
            file = Path(folder) / name
            if name.startswith(".") or file.suffix.lower() not in SUFFIXES:
                continue
            target = Path(os.path.realpath(file))
            if not _inside(target, roots):
                refused.append({"file": str(file), "reason": _refusal(file, target, roots)})
            elif target.is_file():
                files.append(file)
        for d in dirs:
            link = Path(folder) / d
            if link.is_symlink():
                target = Path(os.path.realpath(link))
                if not _inside(target, roots):
                    refused.append({"file": str(link), "reason": _refusal(link, target, roots)})
    return files, refused


def import_markdown(
    vault: Vault, path: str, scope: str = DEFAULT_SCOPE, session: str | None = None,
    cwd: str | os.PathLike[str] | None = None,
) -> dict[str, Any]:
    """Add every section of the Markdown file(s) at ``path``; the answer counts what happened.

    ``path`` must lie under :func:`allowed_roots` (``cwd``: the project folder).
    """
    given = Path(path).expanduser()
    root = Path(os.path.abspath(given if given.is_absolute() else Path(cwd or os.getcwd()) / given))
    roots = allowed_roots(vault, cwd)
    files, errors = markdown_files(root, roots)
    created: list[str] = []
    existing: list[str] = []
    for file in files:
        try:
            real = Path(os.path.realpath(file))
            if not _inside(real, roots):  # swapped for a link since the walk
                raise InvalidArgument("path", _refusal(file, real, roots))
            with open(real, "rb") as handle:  # at most one byte over the cap is read
                data = handle.read(vault.config.max_file_bytes + 1)
            if len(data) > vault.config.max_file_bytes:
                raise InvalidArgument("path", f"larger than index.max_file_bytes ({vault.config.max_file_bytes})")
            if b"\0" in data:  # said as a vault file's would be (memex/files/memory_file.py)
                raise InvalidArgument("path", "binary file (NUL bytes), not Markdown; not imported")
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:  # not Python's codec message: the agent reads this
            errors.append({"file": str(file), "reason": f"not UTF-8 text (byte {exc.start}); not imported"})
            continue
        except (OSError, InvalidArgument) as exc:
            errors.append({"file": str(file), "reason": str(exc)})
            continue
        for number, (label, body) in enumerate(sections(text, file.stem), 1):
            try:
                result = vault.add(
                    f"{label}\n\n{body}", scope=scope, source="import", session=session,
                    source_ref=f"{file}#{number}", category="resource",
                )
            except MemexError as exc:
                errors.append({"file": f"{file}#{number}", "reason": str(exc)})
                continue
            (created if result.status == "created" else existing).append(result.id)
    return {
        "path": str(root), "scope": scope, "files": len(files), "created": created,
        "already_stored": existing, "errors": errors,
    }
