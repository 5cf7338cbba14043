"""Claude Code and Codex hooks within the agents' documented limits (docs/agents.md, "Size limits").

Payloads are the official ones (tests/data/hooks). Claude Code saves an
``additionalContext`` over 10,000 characters to a file and shows the model a
preview; Codex previews hook output over about 2,500 tokens. Sources in
docs/agents.md.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from memex import context
from memex.agents import claude_code, codex, hooks, transcript
from memex.context.assemble import BLOCK_ALLOWANCE_CHARS
from memex.context.inject import CLOSE_TAG, OPEN_TAG
from memex.context.tokens import count_text
from memex.vault import Vault
from tests.hook_helpers import copy_transcript, fixture, lexical_only, run_hook, set_config

SESSION = "5f0c2b9e-8a41-4c7d-9e3b-2d1f6a7b8c90"
CODEX_SESSION = "019d036d-c7fa-72d2-b6fd-78878bfe34e4"
CLAUDE_CODE_LIMIT = 10_000  # characters of additionalContext kept in context
CODEX_PREVIEW_TOKENS = 2_500


pytestmark = pytest.mark.usefixtures("no_warm_server")


def event(agent: str, name: str, project: Path, transcript_path: Path | None = None, **changes: Any) -> dict[str, Any]:
    data = fixture(agent, f"{name}.json", cwd=str(project), transcript=str(transcript_path or project / "none.jsonl"))
    data.update(changes)
    return data


def added_context(result: Any, name: str) -> str:
    spec = result.answer["hookSpecificOutput"]
    assert spec["hookEventName"] == name
    text: str = spec["additionalContext"]
    return text


def well_formed(text: str) -> None:
    """At most one block, closed, and no entity cut in half."""
    assert text.count(OPEN_TAG) == text.count(CLOSE_TAG) <= 1
    assert not re.search(r"&[a-z#0-9]*…", text)


def big_memory(i: int, size: int = 18_800) -> str:
    return f"Runbook {i} for shop-api: " + ("step <b> & \"check\" the canary; " * (size // 32))[:size]


def test_session_start_stays_under_claude_code_limit(vault: Vault, project: Path) -> None:
    ids = [vault.add(big_memory(i), scope="project:shop-api").id for i in range(2)]
    text = added_context(claude_code.handle(vault, event("claude-code", "SessionStart", project)), "SessionStart")
    assert len(text) <= CLAUDE_CODE_LIMIT
    well_formed(text)
    assert SESSION in text and any(i in text for i in ids)  # cut, not dropped


@pytest.mark.parametrize("agent", ["claude-code", "codex"])
def test_cli_session_start_answer_is_within_the_limit(vault_root: Path, project: Path, agent: str) -> None:
    """The issue's case through the real program: two 18.8k-character memories gave 39,427 characters."""
    lexical_only(vault_root)
    with Vault(vault_root) as vault:
        for i in range(2):
            vault.add(big_memory(i), scope="project:shop-api")
    proc = run_hook(agent, json.dumps(event(agent, "SessionStart", project)), vault_root)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    text = json.loads(proc.stdout)["hookSpecificOutput"]["additionalContext"]
    assert len(text) <= CLAUDE_CODE_LIMIT and OPEN_TAG in text
    if agent == "codex":
        assert count_text(text) <= CODEX_PREVIEW_TOKENS
    well_formed(text)


def test_user_prompt_stays_under_claude_code_limit(vault_root: Path, fake_embedder: Any, project: Path) -> None:
    # A user who raised the recall budget must still not overflow the agent.
    set_config(vault_root, "recall", "recall_max_injected_chars = 100000")
    set_config(vault_root, "recall", "recall_score_threshold = 0.0")
    with Vault(vault_root, embedder=fake_embedder) as vault:
        for i in range(3):
            vault.add(big_memory(i), scope="project:shop-api")
        payload = event("claude-code", "UserPromptSubmit", project,
                        prompt="Remember that the shop-api runbook canary step comes first")
        text = added_context(claude_code.handle(vault, payload), "UserPromptSubmit")
        captured = vault.list(source="keyword")
    assert len(text) <= CLAUDE_CODE_LIMIT
    well_formed(text)
    assert OPEN_TAG in text and captured and captured[0].id in text  # memories and the hand-off note both fit


def test_codex_session_start_stays_under_its_preview_tokens(vault: Vault, project: Path) -> None:
    # Chinese text: about one token per character, so characters alone are no bound.
    ids = [vault.add(f"部署手册{i}:" + "先检查金丝雀发布,然后切换流量。" * 500, scope="project:shop-api").id
           for i in range(3)]
    text = added_context(codex.handle(vault, event("codex", "SessionStart", project)), "SessionStart")
    assert count_text(text) <= CODEX_PREVIEW_TOKENS and len(text) <= CLAUDE_CODE_LIMIT
    well_formed(text)
    assert CODEX_SESSION in text and any(i in text for i in ids)  # the newest memory, cut to fit


def test_assemble_block_is_bounded_after_escaping(vault_root: Path, fake_embedder: Any) -> None:
    set_config(vault_root, "recall", "recall_score_threshold = 0.0")
    with Vault(vault_root, embedder=fake_embedder) as vault:
        vault.add("canary <&> " + "<>&\"" * 975, scope="user")  # 3,911 characters, each escaped to 4-6
        out = context.assemble(vault, "s", [{"role": "user", "content": "canary?"}], 200_000)
        limit = context.load_settings(vault).recall_max_injected_chars + BLOCK_ALLOWANCE_CHARS
    block = hooks.injected_block(out)
    assert block and len(block) <= limit
    well_formed(block)


# -- SessionStart picks by project, recency and relevance ----------------------


@pytest.mark.model
def test_session_start_does_not_inject_a_confident_memory_of_another_project(
    model_vault: Vault, project: Path
) -> None:
    vault = model_vault
    elsewhere = vault.add("The billing-service repository pins Node 18 in its Dockerfile", confidence=1.0)
    relevant = vault.add("The user wants shop-api releases announced in the #deploys channel", confidence=0.6)
    for text in ("The user prefers short answers", "The user writes commit messages in English",
                 "The user works from Lisbon", "The user likes dark terminal themes"):
        vault.add(text, confidence=0.6)
    mine = vault.add("shop-api deploys with blue-green releases on Fridays", scope="project:shop-api")
    text = added_context(claude_code.handle(vault, event("claude-code", "SessionStart", project)), "SessionStart")
    assert mine.id in text and relevant.id in text
    assert elsewhere.id not in text
    assert text.index(mine.id) < text.index(relevant.id)


# -- Stop: last_assistant_message, a lagging or missing transcript -------------


ARCHIVE_QUERY = "deploy OR blue OR green OR kubectl OR canary"


def archived(vault: Vault, session: str, query: str = ARCHIVE_QUERY) -> list[dict[str, Any]]:
    found = context.archive_search(vault, session, query, limit=50)
    ids = list(dict.fromkeys(h["archive_id"] for h in found))
    return [m for i in ids for m in context.archive_expand(vault, i)]


def run(result: Any) -> Any:
    assert result.answer == {} and result.deferred is not None
    return result.deferred()


def test_stop_uses_last_assistant_message_when_the_transcript_lags(
    vault: Vault, project: Path, tmp_path: Path
) -> None:
    lagging = tmp_path / "t.jsonl"
    lagging.write_text(json.dumps({"type": "user", "message": {
        "role": "user", "content": "How does shop-api deploy?"}}) + "\n", encoding="utf-8")
    reply = "It deploys with kubectl and a blue-green switch."
    payload = event("claude-code", "Stop", project, lagging, last_assistant_message=reply)
    assert run(claude_code.handle(vault, payload))["archived"] == 2
    # The transcript catches up: the reply is not archived a second time.
    with open(lagging, "a", encoding="utf-8") as fh:
        fh.write(json.dumps({"type": "assistant", "message": {
            "id": "m1", "role": "assistant", "content": [{"type": "text", "text": reply}]}}) + "\n")
    assert run(claude_code.handle(vault, payload)) == {"archived": 0}
    texts = [transcript.text_of(m["content"]) for m in archived(vault, SESSION)]
    assert texts.count(reply) == 1 and "How does shop-api deploy?" in texts


def test_stop_before_the_transcript_exists_archives_the_reply(vault: Vault, project: Path, tmp_path: Path) -> None:
    later = tmp_path / "not-yet.jsonl"
    reply = "The deploy script applies blue-green.yaml with kubectl."
    payload = event("claude-code", "Stop", project, later, last_assistant_message=reply)
    assert run(claude_code.handle(vault, payload))["archived"] == 1
    copy_transcript("claude-code", "transcript.jsonl", later, str(project))  # ends with the same reply
    run(claude_code.handle(vault, payload))
    texts = [transcript.text_of(m["content"]) for m in archived(vault, SESSION)]
    assert texts.count(reply) == 1


def test_stop_without_transcript_or_reply_does_nothing(vault: Vault, project: Path, tmp_path: Path) -> None:
    payload = event("claude-code", "Stop", project, tmp_path / "gone.jsonl")
    assert run(claude_code.handle(vault, payload)) == {"archived": 0}


def test_fork_does_not_archive_the_parents_history_again(vault: Vault, project: Path, tmp_path: Path) -> None:
    copied = copy_transcript("claude-code", "transcript.jsonl", tmp_path / "fork.jsonl", str(project))
    fork = "7a7a7a7a-0000-4000-8000-000000000001"
    claude_code.handle(vault, event("claude-code", "SessionStart", project, copied, session_id=fork, source="fork"))
    with open(copied, "a", encoding="utf-8") as fh:
        fh.write(json.dumps({"type": "user", "message": {"role": "user", "content": "and the canary?"}}) + "\n")
    assert run(claude_code.handle(vault, event("claude-code", "Stop", project, copied, session_id=fork)))[
        "archived"] == 1


def test_codex_pre_compact_archives_then_compacts(vault: Vault, project: Path, tmp_path: Path) -> None:
    rollout = copy_transcript("codex", "rollout.jsonl", tmp_path / "rollout.jsonl", str(project))
    compacted = run(codex.handle(vault, event("codex", "PreCompact", project, rollout)))
    assert {"summary", "tokens_before", "tokens_after"} <= set(compacted)
    assert archived(vault, CODEX_SESSION, "docker"), "the rollout's pending lines are archived before compacting"


def test_session_start_without_a_project_fills_by_recency(vault: Vault, project: Path) -> None:
    ids = [vault.add(f"The user note number {i} is about topic {i}").id for i in range(8)]
    payload = event("claude-code", "SessionStart", project)
    del payload["cwd"]
    text = added_context(claude_code.handle(vault, payload), "SessionStart")
    limit = hooks.AgentSettings.of(vault).session_start_limit
    assert [i for i in ids if i in text] == ids[-limit:]  # the newest, every place
