"""Shared by the tests of captured conversations' small talk (test_dedup_smalltalk,
test_dedup_answers, test_dedup_reactions): a turn added as an import captures
it, a turn written as a file of session "chat", and whether consolidation groups turns."""

from __future__ import annotations

import json
from typing import Any

from memex.consolidation.consolidate import consolidate
from memex.vault import Vault


def add(vault: Vault, text: str, session: str = "chat", source: str = "import") -> Any:
    """One turn captured as a chat import captures it (docs/write-path.md)."""
    return vault.add(text, scope="user", source=source, session=session)


def write(vault: Vault, name: str, body: str, minute: int) -> None:
    """A memory file of session "chat" written at 10:``minute``, id ``name`` (no dedup on the way)."""
    folder = vault.root / "memories" / "user"
    folder.mkdir(parents=True, exist_ok=True)
    meta = {"session": "chat", "confidence": 0.8, "created": f"2026-11-30T10:{minute:02d}:00Z"}
    head = "".join(f"{k}: {json.dumps(v)}\n" for k, v in meta.items())
    (folder / f"{name}.md").write_text(f"---\nid: {name}\n{head}---\n{body}\n", encoding="utf-8")


def grouped(vault: Vault, *names: str) -> bool:
    """Whether consolidating session "chat" puts all ``names`` in one group."""
    report = consolidate(vault, "chat")
    return any(set(names) <= {g.representative, *g.superseded} for g in report.groups)
