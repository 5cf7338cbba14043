"""memex's own import formats, each an entry of the ``memex.importers`` group
(memex/plugins.py) like any other package's: an object with ``description``,
``detect`` and ``read`` (memex/importers/source.py).

The parsing lives in memex/importers/markdown.py and
memex/importers/chats.py; here, which files each format reads and when
``--format auto`` picks it (docs/import.md).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from memex.importers import chats, markdown
from memex.importers.markdown import Block
from memex.importers.source import Source
from memex.errors import InvalidArgument

INSTRUCTION_NAMES = frozenset({"CLAUDE.md", "CLAUDE.local.md", "AGENTS.md"})
# Other agents' rule files, the same shape (a list of rules for an agent):
# Cursor's and Windsurf's rules files and Gemini CLI's context file. Cursor's
# newer rules are .cursor/rules/*.mdc (Markdown with frontmatter).
OTHER_RULE_NAMES = frozenset({".cursorrules", ".windsurfrules", "GEMINI.md"})
RULE_FOLDERS = {".cursor": ".mdc"}
# Notes looked at to tell a basic-memory project from other Markdown notes.
SNIFF_NOTES = 50


class Obsidian:
    description = "an Obsidian vault or any folder of Markdown notes"

    def detect(self, source: Source) -> bool:
        return source.is_dir and (source.path / ".obsidian").is_dir()

    def read(self, source: Source) -> Iterator[Block]:
        return source.blocks(source.files(), lambda file, text: markdown.note_blocks(text, file.stem))


class ClaudeMd:
    description = "CLAUDE.md / AGENTS.md files and Claude Code's memory files (rules, auto memory)"

    def detect(self, source: Source) -> bool:
        path = source.path
        if not source.is_dir:
            return path.suffix.lower() in (".md", ".markdown", ".mdc") or path.name in OTHER_RULE_NAMES
        return path.name in (".claude", *RULE_FOLDERS) or (path / ".claude").is_dir() or any(
            (path / name).is_file() for name in INSTRUCTION_NAMES | OTHER_RULE_NAMES
        ) or (path / "MEMORY.md").is_file() or (path / ".cursor" / "rules").is_dir()

    def read(self, source: Source) -> Iterator[Block]:
        return source.blocks(self._files(source), lambda _file, text: self._rules(text))

    @staticmethod
    def _rules(text: str) -> Iterator[Block]:
        for block in markdown.instruction_blocks(text):
            if block.category is None:
                block.category = _rule_category(block.text)
            yield block

    @staticmethod
    def _files(source: Source) -> Iterator[Path]:
        if not source.is_dir:
            yield source.path
            return
        root = source.path
        found = source.files(
            suffixes=(".md", ".markdown", *RULE_FOLDERS.values()), names=tuple(OTHER_RULE_NAMES),
            hidden_ok=(".claude", *RULE_FOLDERS),
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


def _rule_category(text: str) -> str:
    """A rule's category by the context engine's rules (preference, decision,
    constraint), else ``instruction``: it was written for an agent to follow."""
    from memex.context.extract import classify

    return classify(" ".join(text.split())) or "instruction"


class BasicMemory:
    description = "a basic-memory project folder (observations become memories)"

    def detect(self, source: Source) -> bool:
        if not source.is_dir:
            return False
        for note in source.files(limit=SNIFF_NOTES):
            try:
                if markdown.is_basic_memory_note(source.text(note)):
                    return True
            except InvalidArgument:
                continue  # reported when the import reads it
        return False

    def read(self, source: Source) -> Iterator[Block]:
        def parse(file: Path, text: str) -> Iterable[Block]:
            if markdown.is_basic_memory_note(text):
                return markdown.basic_memory_blocks(text, file.stem)
            return markdown.note_blocks(text, file.stem)

        return source.blocks(source.files(), parse)


class ChatExport:
    """A JSON export (or its .zip): ChatGPT's, Claude.ai's, or a mem0-style list."""

    def __init__(self, name: str, description: str, reader: Callable[[Any, str], Iterator[Block]]) -> None:
        self.name = name
        self.description = description
        self.reader = reader

    def detect(self, source: Source) -> bool:
        if source.is_dir or source.path.suffix.lower() not in (".json", ".zip"):
            return False
        return chats.detect(source.json()) == self.name

    def read(self, source: Source) -> Iterator[Block]:
        return self.reader(source.json(self.name), str(source.path))


OBSIDIAN = Obsidian()
CLAUDE_MD = ClaudeMd()
BASIC_MEMORY = BasicMemory()
CHATGPT = ChatExport("chatgpt", "a ChatGPT data export (conversations.json, or the export's .zip)", chats.chatgpt_blocks)
CLAUDE_AI = ChatExport(
    "claude-ai", "a Claude.ai data export (conversations.json, or the export's .zip)", chats.claude_ai_blocks)
MEM0 = ChatExport("mem0", "a mem0-style JSON list of {\"memory\": ...} objects (or {\"results\": [...]})",
                  chats.mem0_blocks)
