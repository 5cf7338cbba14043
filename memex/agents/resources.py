"""Import Markdown documents as resource memories (the MCP tool memory_add_resource).

A document is cut at its ``#`` and ``##`` headings (not inside code
fences): one memory per section, because recall injects whole memories and
a 30-page manual injected whole would crowd out everything else. Each
section starts with ``<document title> › <heading>`` so that it still says
what it belongs to on its own. Sections land in the ``resources`` scope by
default with ``source: import`` and ``source_ref: <file>#<n>``; importing
the same file again finds every unchanged section already stored (exact
dedup), so re-imports are cheap and create nothing twice.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from memex.errors import InvalidArgument, MemexError
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


def markdown_files(path: Path) -> list[Path]:
    if path.is_file():
        if path.suffix.lower() not in SUFFIXES:
            raise InvalidArgument("path", f"{path} is not a Markdown file ({', '.join(SUFFIXES)})")
        return [path]
    if path.is_dir():
        return sorted(
            p for p in path.rglob("*")
            if p.is_file() and p.suffix.lower() in SUFFIXES
            and not any(part.startswith(".") for part in p.relative_to(path).parts)
        )
    raise InvalidArgument("path", f"{path} does not exist")


def import_markdown(vault: Vault, path: str, scope: str = DEFAULT_SCOPE, session: str | None = None) -> dict[str, Any]:
    """Add every section of the Markdown file(s) at ``path``; the answer counts what happened."""
    root = Path(path).expanduser().resolve()
    files = markdown_files(root)
    created: list[str] = []
    existing: list[str] = []
    errors: list[dict[str, str]] = []
    for file in files:
        try:
            data = file.read_bytes()
            if len(data) > vault.config.max_file_bytes:
                raise InvalidArgument("path", f"larger than index.max_file_bytes ({vault.config.max_file_bytes})")
            text = data.decode("utf-8")
        except (OSError, UnicodeDecodeError, InvalidArgument) as exc:
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
