"""The hand-off note in a Claude Code session: each capture named once, in the turn it happened.

Driven through the real hook command (``memex hook claude-code``) with the
official payloads of tests/data/hooks, as Claude Code runs it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from memex.vault import Vault
from tests.hook_helpers import copy_transcript, fixture, lexical_only, run_hook

NOTE = "Already stored verbatim this turn"


@pytest.fixture
def lexical_root(vault_root: Path) -> Path:
    lexical_only(vault_root)
    return vault_root


def send(root: Path, project: Path, transcript: Path, name: str, **changes: Any) -> str:
    payload = fixture("claude-code", f"{name}.json", cwd=str(project), transcript=str(transcript))
    payload.update(changes)
    proc = run_hook("claude-code", json.dumps(payload), root)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    if not proc.stdout:
        return ""
    text: str = json.loads(proc.stdout)["hookSpecificOutput"]["additionalContext"]
    return text


def test_each_capture_is_named_once_in_its_own_turn(lexical_root: Path, project: Path, tmp_path: Path) -> None:
    transcript = copy_transcript("claude-code", "transcript.jsonl", tmp_path / "t.jsonl", str(project))
    send(lexical_root, project, transcript, "SessionStart")
    first = send(lexical_root, project, transcript, "UserPromptSubmit")  # "Remember that ... on Fridays."
    send(lexical_root, project, transcript, "Stop")
    with Vault(lexical_root) as vault:
        [friday] = vault.list(source="keyword")
    assert NOTE in first and friday.id in first

    second = send(lexical_root, project, transcript, "UserPromptSubmit", prompt="How do I roll back a release?")
    send(lexical_root, project, transcript, "Stop")
    assert NOTE not in second and friday.id not in second  # told once already: not again on every prompt

    third = send(lexical_root, project, transcript, "UserPromptSubmit",
                 prompt="Remember that the staging database listens on port 5433.")
    with Vault(lexical_root) as vault:
        port = next(h for h in vault.list(source="keyword") if "5433" in h.body)
    assert NOTE in third and port.id in third
    assert friday.id not in third  # only this turn's capture


def test_compact_names_the_captures_again(lexical_root: Path, project: Path, tmp_path: Path) -> None:
    """After a compaction the earlier notes are gone from the agent's context: the note is given whole."""
    transcript = copy_transcript("claude-code", "transcript.jsonl", tmp_path / "t.jsonl", str(project))
    send(lexical_root, project, transcript, "UserPromptSubmit")
    with Vault(lexical_root) as vault:
        [friday] = vault.list(source="keyword")
    resumed = send(lexical_root, project, transcript, "SessionStart", source="compact")
    assert NOTE in resumed and friday.id in resumed
    after = send(lexical_root, project, transcript, "UserPromptSubmit", prompt="How do I roll back a release?")
    assert friday.id not in after
