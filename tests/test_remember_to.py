"""Which "remember …" requests are stored as long-term memories: the line, both sides.

"remember that …", "don't forget …", "keep in mind …", "记住…" state a fact
and are stored. "remember to <do something>" is a request about the task
at hand when it points at that task ("this change", "first", "now",
"when you're done") or asks it as a question ("can you remember to add
tests?"), unless it says the request always holds ("always", "every",
"whenever", "from now on", "before committing"). Such a task request stays
in the session archive, not in the vault (docs/context-engine.md,
"Keyword capture").
"""

from __future__ import annotations

import pytest

from memex.context import capture_keyword
from memex.context.extract import is_remember_request
from memex.vault import Vault

DURABLE = [
    # named by the docs and tests
    "Remember that we use pnpm.",
    "Always remember to run tests before committing.",
    "记住：测试数据库在 5433 端口。",
    "记住我们用 pnpm。",
    "Remember that the staging DB is on port 5433.",
    "please remember: deploy keys live in 1Password",
    "Don't forget we ship on Thursdays.",
    "Can you remember that I use fish shell?",
    "Remember to rotate the API keys every quarter.",
    # "remember to" that says it always holds
    "Remember to run the migrations after every schema change.",
    "From now on, remember to write commit messages in English.",
    "Could you remember to always add type hints?",
    "Don't forget to never log card numbers.",
    "Remember to run the tests whenever you touch the parser.",
    "Remember to use pnpm in this repo.",
    # "remember to" with no sign of the task at hand: kept, as before
    "Remember to use pnpm, not npm.",
    "Remember to run the linter before you push.",
]

TASK = [
    "Remember to run the migrations after this change.",
    "can you remember to add tests?",
    "Fix the bug. Also, remember to run the migrations first.",
    "Don't forget to update the changelog for this release.",
    "Remember to push the branch when you're done.",
    "Remember to revert these debug prints later.",
    "Please remember to close the issue now.",
    "Don't forget to bump the version before we merge it, then tag it.",
]

NOT_A_REQUEST = [
    "Do you remember what we decided?",
    "I can't remember the port.",
    "Fix the remembering logic in cache.py",
]


@pytest.mark.parametrize("prompt", DURABLE)
def test_durable_requests_are_stored(prompt: str) -> None:
    assert is_remember_request(prompt)


@pytest.mark.parametrize("prompt", TASK + NOT_A_REQUEST)
def test_task_requests_and_questions_are_not(prompt: str) -> None:
    assert not is_remember_request(prompt)


def test_one_durable_request_among_task_ones_is_enough() -> None:
    assert is_remember_request("Remember to run the migrations first. And remember that prod runs Postgres 16.")


def test_the_trials_prompts_store_nothing_and_a_standing_one_is_stored(vault: Vault) -> None:
    """Found in an outside trial: both were stored as long-term memories."""
    for prompt in ("Remember to run the migrations after this change", "can you remember to add tests?"):
        assert capture_keyword(vault, "s", prompt) is None
    assert vault.list() == []
    stored = capture_keyword(vault, "s", "Always remember to run tests before committing.")
    assert stored is not None and stored["status"] == "created"
