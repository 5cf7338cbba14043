"""Markdown sources: agent instruction files, Obsidian and basic-memory notes.

How a document becomes memories (docs/import.md):

- An instruction file (CLAUDE.md, AGENTS.md, Claude Code's rules and auto
  memory files) is a list of rules: each top-level list item (with its
  nested items and continuation lines) and each paragraph is one memory; a
  fenced code block belongs to the item or paragraph before it (``Run the
  tests with:`` + the command). Headings are not memories; the heading a
  block sits under is kept in its ``section`` field. Lines that only pull
  in other files (``@docs/style.md``) are not memories either.
- An Obsidian note is one memory (its title on top when the text does not
  begin with a heading); a note longer than :data:`NOTE_CHARS` is split at
  its headings, one memory per section. Front-matter ``tags`` become the
  memory's entities.
- A basic-memory note's observations (``- [category] text #tag (context)``)
  are one memory each, with that category and the note's title as entity;
  relations (``- relates_to [[Other]]``) are links, not facts, and are
  skipped; what prose remains is handled as an Obsidian note.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import yaml

NOTE_CHARS = 1500

_FENCE = re.compile(r"^\s{0,3}(```|~~~)")
_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
_LIST_ITEM = re.compile(r"^( *)([-*+]|\d{1,9}[.)])\s+\S")
_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
_SETEXT = re.compile(r"^ {0,3}(=+|-+)\s*$")
_BREAK = re.compile(r"^ {0,3}([-*_])(?:\s*\1){2,}\s*$")
_IMPORT_ONLY = re.compile(r"^(?:[-*+]\s+)?(?:@\S+\s*)+$")
# "- [category] text"; "- [x] done" and "- [ ] todo" are task lists, not observations.
_OBSERVATION = re.compile(r"^\s*[-*]\s+\[(?![xX ]\])([^\]\[]+)\]\s+(.+?)\s*$")
_RELATION = re.compile(r"^\s*[-*]\s+[\w-]+\s+\[\[[^\]]+\]\]")
_TAG = re.compile(r"(?<![\w&/])#([\w/-]+)")


@dataclass
class Block:
    """One memory-to-be from a document, with where it sits."""

    text: str
    anchor: str
    section: str | None = None
    category: str | None = None
    entities: list[str] = field(default_factory=list)
    confidence: float | None = None  # None: the vault's default


def split_frontmatter(text: str) -> tuple[dict[str, Any], str]:
    """(front matter, rest); a malformed header is left as text, never fatal."""
    text = text.lstrip("\ufeff")
    if not text.startswith("---"):
        return {}, text
    lines = text.split("\n")
    if lines[0].strip() != "---":
        return {}, text
    for i in range(1, len(lines)):
        if lines[i].strip() in ("---", "..."):
            try:
                meta = yaml.safe_load("\n".join(lines[1:i]))
            except yaml.YAMLError:
                return {}, text
            return (meta if isinstance(meta, dict) else {}), "\n".join(lines[i + 1 :])
    return {}, text


def instruction_blocks(text: str) -> Iterator[Block]:
    """The rules of an instruction file, one block per list item or paragraph."""
    _, body = split_frontmatter(text)
    body = _COMMENT.sub("", body)
    headings: list[tuple[int, str]] = []
    current: list[str] = []
    kind = ""  # "item", "para" or "" (no block open)
    fence: str | None = None
    count = 0
    base_indent = 0  # indentation of the open item's marker

    def flush() -> Block | None:
        nonlocal current, kind, count
        lines, current, kind = current, [], ""
        joined = "\n".join(lines).strip()
        if not joined or _IMPORT_ONLY.match(" ".join(joined.split())):
            return None
        count += 1
        section = " / ".join(h for _, h in headings) or None
        return Block(_clean_item(joined), f"{count}", section)

    for line in body.split("\n"):
        if fence is not None:  # inside a code block: it belongs to the open block
            current.append(line)
            if line.strip().startswith(fence):
                fence = None
            continue
        opening = _FENCE.match(line)
        if opening:
            fence = opening.group(1)
            if not kind:
                kind = "para"
            current.append(line)
            continue
        heading = _HEADING.match(line)
        underline = _SETEXT.match(line)
        if underline and kind == "para" and len(current) == 1:
            # "Title" over "=====" (or "-----"): a heading, not a paragraph.
            heading_text, current, kind = current[0].strip(), [], ""
            level = 1 if underline.group(1)[0] == "=" else 2
            headings = [(lv, h) for lv, h in headings if lv < level] + [(level, heading_text)]
            continue
        if heading or _BREAK.match(line):
            done = flush()
            if done:
                yield done
            if heading:
                level = len(heading.group(1))
                headings = [(lv, h) for lv, h in headings if lv < level] + [(level, heading.group(2))]
            continue  # a thematic break (---, ***) only separates
        if not line.strip():
            if kind == "item":
                current.append(line)  # an item may go on after a blank line, indented
            elif kind == "para":
                done = flush()
                if done:
                    yield done
            continue
        item = _LIST_ITEM.match(line)
        if item:
            indent = len(item.group(1))
            if kind == "item" and indent > base_indent:
                current.append(line)  # a nested item stays with its parent
                continue
            done = flush()
            if done:
                yield done
            kind, base_indent = "item", indent
            current.append(line)
            continue
        indented = line.startswith(("  ", "\t"))
        if kind == "item" and not indented and current and not current[-1].strip():
            done = flush()  # a blank line then unindented text: the item has ended
            if done:
                yield done
        if not kind:
            kind = "para"
        current.append(line)
    done = flush()
    if done:
        yield done


def _clean_item(text: str) -> str:
    """A list item without its bullet (``- `` or ``1. ``); nested items keep theirs."""
    first, _, rest = text.partition("\n")
    first = re.sub(r"^\s{0,3}(?:[-*+]|\d{1,9}[.)])\s+", "", first)
    if rest:
        rest = "\n".join(_dedent(rest.split("\n")))
        return f"{first}\n{rest}".strip()
    return first.strip()


def _dedent(lines: list[str]) -> list[str]:
    widths = [len(ln) - len(ln.lstrip(" ")) for ln in lines if ln.strip()]
    cut = min(widths) if widths else 0
    cut = min(cut, 4)
    return [ln[cut:] if ln[:cut].strip() == "" else ln for ln in lines]


def note_blocks(text: str, title: str) -> Iterator[Block]:
    """An Obsidian note: one block, or one per section when it is long."""
    meta, body = split_frontmatter(text)
    body = _COMMENT.sub("", body).strip()
    if not body:
        return
    tags = _tags(meta)
    title = str(meta.get("title") or title)
    if len(body) <= NOTE_CHARS:
        yield Block(_titled(body, title), "note", None, None, tags)
        return
    parts = [(heading, part.strip()) for heading, part in _sections(body) if part.strip()]
    for n, (heading, part) in enumerate(parts, 1):
        yield Block(_titled(part, title), f"{n}", heading, None, tags)


def _titled(text: str, title: str) -> str:
    return text if _HEADING.match(text.split("\n", 1)[0]) else f"# {title}\n\n{text}"


def _sections(body: str) -> list[tuple[str | None, str]]:
    """The note cut before each heading of level 1-3 (outside code blocks)."""
    parts: list[tuple[str | None, str]] = []
    heading: str | None = None
    lines: list[str] = []
    fence: str | None = None
    for line in body.split("\n"):
        if fence is None:
            opening = _FENCE.match(line)
            if opening:
                fence = opening.group(1)
            else:
                found = _HEADING.match(line)
                if found and len(found.group(1)) <= 3:
                    parts.append((heading, "\n".join(lines)))
                    heading, lines = found.group(2), []
        elif line.strip().startswith(fence):
            fence = None
        lines.append(line)
    parts.append((heading, "\n".join(lines)))
    return parts


def _tags(meta: dict[str, Any]) -> list[str]:
    raw = meta.get("tags") or []
    if isinstance(raw, str):
        raw = [t for t in re.split(r"[,\s]+", raw) if t]
    if not isinstance(raw, list):
        return []
    return [str(t).lstrip("#") for t in raw if str(t).strip("# ")]


def is_basic_memory_note(text: str) -> bool:
    meta, body = split_frontmatter(text)
    if "permalink" in meta:
        return True
    return any(_OBSERVATION.match(line) for line in body.split("\n"))


def basic_memory_blocks(text: str, title: str) -> Iterator[Block]:
    """Observations one by one; the remaining prose as a note."""
    meta, body = split_frontmatter(text)
    title = str(meta.get("title") or title)
    prose: list[str] = []
    n = 0
    fence: str | None = None
    for line in body.split("\n"):
        if fence is None and _FENCE.match(line):
            fence = _FENCE.match(line).group(1)  # type: ignore[union-attr]
        elif fence is not None and line.strip().startswith(fence):
            fence = None
        observed = _OBSERVATION.match(line) if fence is None else None
        if observed:
            n += 1
            category, content = observed.group(1).strip(), observed.group(2)
            entities = [title] + [t for t in _TAG.findall(content) if t not in (title,)]
            yield Block(content, f"obs-{n}", None, category, entities)
            continue
        if fence is None and _RELATION.match(line):
            continue
        prose.append(line)
    rest = "\n".join(ln for ln in prose if not _is_bare_heading(ln, title, ("Observations", "Relations")))
    if len(" ".join(rest.split())) >= 40:  # a title and a stray line are not a memory
        for block in note_blocks(rest, title):
            block.entities = [title] + [e for e in _tags(meta) if e != title]
            yield block


def _is_bare_heading(line: str, title: str, names: tuple[str, ...]) -> bool:
    found = _HEADING.match(line)
    return bool(found) and found.group(2).strip() in (title, *names)  # type: ignore[union-attr]
