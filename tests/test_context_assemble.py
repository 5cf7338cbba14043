"""assemble: the auto-recall path and the full-context budget arithmetic."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memex.context import after_turn, assemble, budget_plan, compact
from memex.context import archive
from memex.context.messages import normalize_turns, units
from memex.context.tokens import count_message, count_messages, count_text
from memex.errors import InvalidArgument
from memex.vault import Vault
from tests.fakes import HashEmbedder


def open_with_config(root: Path, toml: str) -> Vault:
    (root / ".memex" / "config.toml").write_text(toml, encoding="utf-8")
    return Vault(root, embedder=HashEmbedder())


@pytest.fixture
def low_vault(vault_root: Path) -> Iterator[Vault]:
    """A vault that recalls anything related at all (the fake embedder's scores are low)."""
    with open_with_config(vault_root, "[recall]\nrecall_score_threshold = 0.1\n") as v:
        yield v


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def assistant(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": text}


def filler(i: int, words: int = 300) -> str:
    return f"message {i} " + " ".join(f"w{i}x{j}" for j in range(words))


def conversation(turns: int, words: int = 300) -> list[dict[str, Any]]:
    out = []
    for i in range(turns):
        out += [user(filler(2 * i, words)), assistant(filler(2 * i + 1, words))]
    return out


# -- auto-recall -------------------------------------------------------------


def test_recall_prepends_block_to_latest_user_message(low_vault: Vault) -> None:
    kept = low_vault.add("Deploys go through the staging cluster first", scope="project:web").id
    low_vault.add("Banana bread needs three ripe bananas", scope="user")
    msgs = [user("hi"), assistant("hello"), user("How do deploys reach the staging cluster?")]
    out = assemble(low_vault, "s", msgs, 200_000)
    assert out["mode"] == "recall" and out["injected"][0] == kept
    latest = out["messages"][-1]["content"]
    assert latest.startswith("<relevant-memories>")
    assert latest.endswith("How do deploys reach the staging cluster?")
    assert out["messages"][:2] == msgs[:2] and msgs[-1]["content"].startswith("How")  # input untouched
    assert out["tokens"] == count_messages(out["messages"])
    assert low_vault.get(kept).access_count == 1  # recall is counted


def test_recall_respects_scopes(low_vault: Vault) -> None:
    low_vault.add("Deploys go through the staging cluster first", scope="project:web")
    out = assemble(low_vault, "s", [user("staging cluster deploys?")], 200_000, scopes=["user"])
    assert out["injected"] == [] and out["mode"] == "skipped"


def test_recall_limit_and_char_budget(vault_root: Path) -> None:
    with open_with_config(
        vault_root, "[recall]\nrecall_score_threshold = 0.0\nrecall_limit = 2\nrecall_max_injected_chars = 60\n"
    ) as v:
        for i in range(4):
            v.add(f"Cluster fact number {i}: staging cluster node {i} runs the deploy agent", scope="user")
        out = assemble(v, "s", [user("staging cluster deploy agent")], 200_000)
        assert len(out["injected"]) == 1  # two recalled, only one fits 60 characters
        block = out["messages"][-1]["content"]
        assert block.count("<memory ") == 1


@pytest.mark.parametrize(
    "msgs, reason",
    [
        ([user("staging?"), assistant("yes")], "not the user's"),
        ([user("staging?"), {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "ok"}]}],
         "not the user's"),
        ([user("<relevant-memories>\nx\n</relevant-memories>\n\nstaging cluster?")], "already there"),
        ([], "not the user's"),
    ],
)
def test_recall_does_nothing(low_vault: Vault, msgs: list[dict[str, Any]], reason: str) -> None:
    low_vault.add("Deploys go through the staging cluster first")
    out = assemble(low_vault, "s", msgs, 200_000)
    assert out["messages"] == msgs and out["injected"] == [] and out["mode"] == "skipped"
    assert reason in out["reason"]


def test_bypass_sessions_and_auto_recall_switch(vault_root: Path) -> None:
    with open_with_config(
        vault_root, '[recall]\nrecall_score_threshold = 0.0\n[context]\nbypass_session_patterns = ["cron-*"]\n'
    ) as v:
        v.add("Deploys go through the staging cluster first")
        msgs = conversation(40)  # over budget too: bypass leaves everything as it is
        out = assemble(v, "cron-nightly", msgs, 30_000)
        assert out["messages"] == msgs and out["mode"] == "skipped" and "cron-*" in out["reason"]
        assert assemble(v, "chat", [user("staging cluster")], 200_000)["injected"]
    with open_with_config(vault_root, "[recall]\nrecall_score_threshold = 0.0\n[context]\nauto_recall = false\n") as v:
        out = assemble(v, "chat", [user("staging cluster")], 200_000)
        assert out["injected"] == [] and out["reason"] == "auto_recall is off"


def test_query_is_the_last_4000_characters(vault_root: Path) -> None:
    with open_with_config(vault_root, "[recall]\nrecall_score_threshold = 0.2\n") as v:
        v.add("Deploys go through the staging cluster first")
        long_prompt = "staging cluster deploys " + "qqq " * 2000
        assert assemble(v, "s", [user(long_prompt)], 200_000)["injected"] == []
        assert assemble(v, "s", [user("qqq " * 2000 + "staging cluster deploys")], 200_000)["injected"]


def test_bad_input_names_the_argument(vault: Vault) -> None:
    with pytest.raises(InvalidArgument, match="token_budget"):
        assemble(vault, "s", [user("x")], 0)
    with pytest.raises(InvalidArgument, match=r"messages\[0\].role"):
        assemble(vault, "s", [{"role": "robot", "content": "x"}], 1000)
    with pytest.raises(InvalidArgument, match="messages"):
        assemble(vault, "s", "not a list", 1000)  # type: ignore[arg-type]


# -- budget arithmetic -------------------------------------------------------


@pytest.mark.parametrize(
    "budget, reserve, archive_cap",
    [
        (200_000, 30_000, 8_000),  # 15% output reserve; archive capped at 8k
        (100_000, 20_000, 8_000),  # reserve floor of 20k; 15% archive capped
        (40_000, 20_000, 6_000),   # archive at 15%
        (150_001, 22_501, 8_000),  # reserve rounds up
        (30_001, 20_000, 4_500),   # archive rounds down
    ],
)
def test_budget_plan(budget: int, reserve: int, archive_cap: int) -> None:
    plan = budget_plan(budget)
    assert plan["reserve"] == reserve and plan["archive"] == archive_cap
    assert plan["available"] == budget - reserve
    assert plan["messages"] == budget - reserve - archive_cap


def test_fitting_conversation_is_left_alone(vault: Vault) -> None:
    msgs = conversation(3)
    out = assemble(vault, "s", msgs, 200_000)
    assert out["mode"] == "skipped" and out["messages"] == msgs


def test_over_budget_drops_oldest_within_available(vault: Vault) -> None:
    msgs = conversation(30)  # about 30 x 2 x 600 tokens
    budget = 40_000
    room = budget_plan(budget)["available"]
    assert count_messages(msgs) > room
    out = assemble(vault, "s", msgs, budget)
    kept = out["messages"]
    assert out["mode"] == "full"
    assert kept == msgs[-len(kept):]  # a suffix: the oldest went first
    assert kept[0]["role"] == "user"
    assert out["tokens"] <= room
    # One more (user, assistant) pair would not have fit.
    assert count_messages(msgs[-len(kept) - 2 :]) > room
    assert all(a["role"] != b["role"] for a, b in zip(kept, kept[1:]))


def test_latest_exchange_is_kept_even_when_it_alone_is_too_big(vault: Vault) -> None:
    msgs = [user("old question"), assistant("old answer"), user(filler(1, 4000))]
    out = assemble(vault, "s", msgs, 21_000)  # room: 1,000 tokens
    assert out["messages"] == msgs[-1:]


def tool_turn(i: int, words: int) -> list[dict[str, Any]]:
    call = {"type": "tool_use", "id": f"t{i}", "name": "read_file", "input": {"path": f"f{i}"}}
    result = {"type": "tool_result", "tool_use_id": f"t{i}", "content": filler(i, words)}
    return [
        user(f"question {i}"),
        {"role": "assistant", "content": [{"type": "text", "text": "reading"}, call]},
        {"role": "user", "content": [result]},
        assistant(f"answer {i}"),
    ]


def test_units_keep_tool_calls_with_results() -> None:
    msgs = tool_turn(1, 5) + tool_turn(2, 5)
    assert units(msgs) == [[0], [1, 2], [3], [4], [5, 6], [7]]
    openai = [
        user("q"),
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c1"}, {"id": "c2"}]},
        {"role": "tool", "tool_call_id": "c1", "content": "r1"},
        {"role": "tool", "tool_call_id": "c2", "content": "r2"},
    ]
    assert units(openai) == [[0], [1, 2, 3]]


def test_trimming_never_splits_a_tool_pair(vault: Vault) -> None:
    msgs = tool_turn(1, 50) + tool_turn(2, 2000) + tool_turn(3, 50) + [user("final question")]
    pair2 = count_message(msgs[5]) + count_message(msgs[6])
    tail = count_messages(msgs[7:])
    # Room for everything after turn 2's tool result, and part of its pair.
    budget = 20_000 + tail + pair2 // 2 + 30_000 * 0  # reserve is 20k at this size
    budget = max(budget, 1)
    out = assemble(vault, "s", msgs, budget)
    ids_used = {b.get("id") for m in out["messages"] if isinstance(m["content"], list)
                for b in m["content"] if isinstance(b, dict) and b.get("type") == "tool_use"}
    ids_answered = {b.get("tool_use_id") for m in out["messages"] if isinstance(m["content"], list)
                    for b in m["content"] if isinstance(b, dict) and b.get("type") == "tool_result"}
    assert ids_used == ids_answered == {"t3"}
    assert out["messages"][0]["role"] == "user"


def test_merge_consecutive_user_messages() -> None:
    merged = normalize_turns([
        user("a"), user("b"), assistant("c"),
        {"role": "user", "content": [{"type": "text", "text": "d"}]}, user("e"),
    ])
    assert [m["role"] for m in merged] == ["user", "assistant", "user"]
    assert merged[0]["content"] == "a\n\nb"
    assert merged[2]["content"] == [{"type": "text", "text": "d"}, {"type": "text", "text": "e"}]
    assert normalize_turns([assistant("orphan"), user("q")]) == [user("q")]


# -- archived summary --------------------------------------------------------


def test_compacted_session_uses_summary_plus_recent(vault_root: Path) -> None:
    with open_with_config(vault_root, "[context]\ncommit_keep_recent_count = 4\n") as v:
        msgs: list[dict[str, Any]] = []
        for i in range(6):
            before = len(msgs)
            msgs += [user(f"We decided to use tool{i} for step {i}."), assistant(f"Noted, tool{i}. {filler(i, 80)}")]
            after_turn(v, "s", msgs, before, commit="none")
        done = compact(v, "s", 200_000, count_messages(msgs))
        assert done["compacted_upto"] == len(msgs) - 4
        assert "tool0" in done["summary"]
        assert done["tokens_after"] < done["tokens_before"]
        msgs.append(user("and next?"))
        out = assemble(v, "s", msgs, 200_000)
        assert out["mode"] == "full" and "summary replaces the first 8" in out["reason"]
        first = out["messages"][0]
        assert first["role"] == "user" and first["content"].startswith("<session-summary>")
        assert "tool0" in first["content"]
        # The summary stands in for the first 8 messages; the last 5 follow it.
        rest = [m["content"] for m in out["messages"]]
        assert not any(c == msgs[0]["content"] for c in rest)
        assert rest[-1] == "and next?"
        assert msgs[-5]["content"] in rest[0]  # merged after the summary (both user)


def test_summary_is_cut_to_the_archive_share(vault: Vault) -> None:
    state = archive.State(session="s", compacted_upto=2, messages_seen=2)
    archive.save_state(vault, state)
    archive.write_summary(vault, "s", "\n".join(f"- line {i} " + "word " * 50 for i in range(400)))
    out = assemble(vault, "s", [user("old"), assistant("old"), user("new question")], 40_000)
    summary_msg = out["messages"][0]["content"]
    assert "line 399" in summary_msg and "line 0 " not in summary_msg  # newest lines kept
    body = summary_msg.split("\n", 2)[2]
    assert count_text(body) <= budget_plan(40_000)["archive"] + 40  # plus the closing tag


def test_system_messages_survive_trimming(vault: Vault) -> None:
    msgs = [{"role": "system", "content": "You are a careful coding agent."}, *conversation(30)]
    out = assemble(vault, "s", msgs, 40_000)
    assert out["mode"] == "full"
    assert out["messages"][0] == msgs[0]
    assert out["messages"][1]["role"] == "user"
    assert out["tokens"] <= budget_plan(40_000)["available"]
