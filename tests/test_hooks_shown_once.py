"""A memory is shown to an agent once per session, until a compaction takes
it out of the agent's context (docs/agents.md, "Shown once").

Found with the real Claude Code: the memory SessionStart injected came again
in the same request through UserPromptSubmit's recall.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from memex.agents import claude_code, codex
from memex.vault import Vault
from tests.hook_helpers import fixture

pytestmark = pytest.mark.usefixtures("no_warm_server")

QUESTION = "which port does the staging database use?"


def _event(agent: str, name: str, project: Path, **changes: Any) -> dict[str, Any]:
    data = fixture(agent, f"{name}.json", cwd=str(project), transcript=str(project / "none.jsonl"))
    data.update(changes)
    return data


def _context(vault: Vault, payload: dict[str, Any], agent: str = "claude-code") -> str:
    result = (claude_code if agent == "claude-code" else codex).handle(vault, payload)
    if result.deferred is not None:
        result.deferred()
    text: str = result.answer.get("hookSpecificOutput", {}).get("additionalContext", "")
    return text


@pytest.fixture
def port(vault: Vault) -> str:
    return vault.add("The staging database is postgres 16 on port 5433", scope="project:shop-api").id


def test_a_memory_shown_at_session_start_is_not_recalled_again_in_that_session(
    vault: Vault, project: Path, port: str
) -> None:
    assert port in _context(vault, _event("claude-code", "SessionStart", project))
    prompt = _context(vault, _event("claude-code", "UserPromptSubmit", project, prompt=QUESTION))
    assert port not in prompt and "<relevant-memories" not in prompt
    # Another session has not seen it: its prompt recalls it.
    other = _context(vault, _event("claude-code", "UserPromptSubmit", project, prompt=QUESTION, session_id="other"))
    assert port in other
    # ... once: the same question again in that session shows it no more.
    assert port not in _context(vault, _event("claude-code", "UserPromptSubmit", project, prompt=QUESTION,
                                              session_id="other"))


def test_the_freed_place_goes_to_the_next_memory(vault: Vault, project: Path, port: str) -> None:
    _context(vault, _event("claude-code", "SessionStart", project))
    later = vault.add("The staging database backups run nightly at 02:00", scope="user").id
    prompt = _context(vault, _event("claude-code", "UserPromptSubmit", project,
                                    prompt="when do the staging database backups run?"))
    assert later in prompt and port not in prompt


@pytest.mark.parametrize("agent", ["claude-code", "codex"])
def test_a_compaction_lets_it_be_shown_again(vault: Vault, project: Path, port: str, agent: str) -> None:
    start = _event(agent, "SessionStart", project)
    session = start["session_id"]
    assert port in _context(vault, start, agent)
    assert port not in _context(vault, _event(agent, "UserPromptSubmit", project, prompt=QUESTION), agent)
    _context(vault, _event(agent, "PreCompact", project, session_id=session), agent)
    assert port in _context(vault, _event(agent, "UserPromptSubmit", project, prompt=QUESTION), agent)


def test_after_a_compaction_session_start_shows_it_once_more(vault: Vault, project: Path, port: str) -> None:
    _context(vault, _event("claude-code", "SessionStart", project))
    assert port in _context(vault, _event("claude-code", "SessionStart", project, source="compact"))
    assert port not in _context(vault, _event("claude-code", "UserPromptSubmit", project, prompt=QUESTION))


def test_a_resumed_session_still_holds_what_it_was_shown(vault: Vault, project: Path, port: str) -> None:
    assert port in _context(vault, _event("claude-code", "UserPromptSubmit", project, prompt=QUESTION))
    _context(vault, _event("claude-code", "SessionStart", project, source="resume"))
    assert port not in _context(vault, _event("claude-code", "UserPromptSubmit", project, prompt=QUESTION))
