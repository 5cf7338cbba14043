"""A session the agent leaves without a session end is committed when its
next session starts (docs/agents.md, "What each hook does").

Found with the real Codex: it has no session-end event, so a decision said
in a short session stayed in the archive and never became a memory.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from memex.agents import claude_code, codex, session_marks
from memex.vault import Vault
from tests.hook_helpers import fixture

pytestmark = pytest.mark.usefixtures("no_warm_server")

DECISION = "We decided to use pnpm for packages."


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "shop"
    (root / ".git").mkdir(parents=True)
    return root


def _rollout(path: Path, session: str, cwd: Path, text: str) -> Path:
    lines = [
        {"timestamp": "2026-12-01T10:00:00.000Z", "type": "session_meta", "payload": {"id": session, "cwd": str(cwd)}},
        {"timestamp": "2026-12-01T10:00:01.000Z", "type": "response_item",
         "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}},
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def _run(handler: Any, vault: Vault, payload: dict[str, Any]) -> dict[str, Any]:
    result = handler.handle(vault, payload)
    if result.deferred is not None:
        result.deferred()
    answer: dict[str, Any] = result.answer
    return answer


def _codex(name: str, project: Path, session: str, transcript: Path, **changes: Any) -> dict[str, Any]:
    data = fixture("codex", f"{name}.json", cwd=str(project), transcript=str(transcript))
    data.update(session_id=session, **changes)
    return data


def test_a_codex_session_is_committed_when_the_next_one_starts(vault: Vault, project: Path, tmp_path: Path) -> None:
    first = "019d036d-0000-7000-8000-000000000001"
    rollout = _rollout(tmp_path / "first.jsonl", first, project, f"How do we deploy? {DECISION}")
    _run(codex, vault, _codex("SessionStart", project, first, rollout))
    _run(codex, vault, _codex("Stop", project, first, rollout, last_assistant_message="Noted."))
    assert [m.body for m in vault.list()] == []  # archived, not committed: Codex sends no session end
    assert session_marks.left_sessions(vault, "codex") == [first]
    second = "019d036d-0000-7000-8000-000000000002"
    _run(codex, vault, _codex("SessionStart", project, second, tmp_path / "second.jsonl"))
    assert [m.body.strip() for m in vault.list()] == [DECISION]
    assert session_marks.left_sessions(vault, "codex") == []


def test_a_session_that_ended_or_is_resumed_is_not_committed_again(vault: Vault, project: Path,
                                                                   tmp_path: Path) -> None:
    session = "5f0c2b9e-8a41-4c7d-9e3b-2d1f6a7b8c90"
    transcript = tmp_path / "t.jsonl"
    lines = [{"type": "user", "sessionId": session, "cwd": str(project),
              "message": {"role": "user", "content": DECISION}}]
    transcript.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")

    def event(name: str, **changes: Any) -> dict[str, Any]:
        data = fixture("claude-code", f"{name}.json", cwd=str(project), transcript=str(transcript))
        data.update(changes)
        return data

    _run(claude_code, vault, event("Stop"))
    assert session_marks.left_sessions(vault, "claude-code") == [session]
    # Resuming it is not a new session: nothing is committed behind its back.
    _run(claude_code, vault, event("SessionStart", source="resume"))
    assert vault.list() == [] and session_marks.left_sessions(vault, "claude-code") == [session]
    _run(claude_code, vault, event("SessionEnd"))
    assert [m.body.strip() for m in vault.list()] == [DECISION]
    assert session_marks.left_sessions(vault, "claude-code") == []
