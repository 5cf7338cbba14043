"""Token counts from the bundled tokenizer, and the documented fallback."""

from __future__ import annotations

import pytest

from memex.context import tokens


def test_counts_come_from_the_bundled_tokenizer() -> None:
    assert tokens._tokenizer() is not None, "tokenizer.json ships in memex/model_files"
    assert tokens.count_text("") == 0
    english = "Use FTS5 external-content tables; the body is stored once."
    assert 10 <= tokens.count_text(english) <= 20
    # Chinese: about one token per character, as chat tokenizers count it.
    chinese = "我们决定用本地索引作为默认方案"
    assert abs(tokens.count_text(chinese) - len(chinese)) <= 2


def test_heuristic_fallback(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tokens, "_tokenizer", lambda: None)
    assert tokens.count_text("abcdefgh") == 2
    assert tokens.count_text("我们决定") == 4
    assert tokens.count_texts(["abcd", "我们"]) == [1, 2]


def test_message_costs_include_tool_calls_and_framing() -> None:
    plain = {"role": "assistant", "content": "ok"}
    call = {"role": "assistant", "content": [
        {"type": "text", "text": "ok"},
        {"type": "tool_use", "id": "t1", "name": "read_file", "input": {"path": "src/very/long/path.py"}},
    ]}
    assert tokens.count_message(plain) == tokens.MESSAGE_OVERHEAD + tokens.count_text("ok")
    assert tokens.count_message(call) > tokens.count_message(plain) + 5
    openai = {"role": "assistant", "content": None, "tool_calls": [{"id": "c", "function": {"name": "grep"}}]}
    assert tokens.count_message(openai) > tokens.MESSAGE_OVERHEAD


def test_cached_counts_equal_fresh_counts() -> None:
    texts = [f"sentence number {i} about caching" for i in range(50)]
    tokens.clear_count_cache()
    fresh = tokens.count_texts(texts)
    assert tokens.count_texts(texts) == fresh
    # Each line costs its tokens plus one for the newline: 4, 4 and 2 here.
    assert tokens.newest_lines(["a b c", "d e f", "g"], 6) == ["d e f", "g"]
    assert tokens.newest_lines(["a b c", "d e f", "g"], 5) == ["g"]
