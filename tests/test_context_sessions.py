"""Session and agent ids, bypass patterns and the [context]/[recall] settings (docs/context-engine.md)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from memex.context import agent_id, load_settings, session_id
from memex.context.sessions import bypassed
from memex.errors import ConfigError, InvalidArgument
from memex.vault import Vault


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def test_uuid_is_lower_cased() -> None:
    assert session_id("5F0C1A2B-3C4D-4E5F-8A9B-0C1D2E3F4A5B") == "5f0c1a2b-3c4d-4e5f-8a9b-0c1d2e3f4a5b"


def test_session_key_wins_and_is_hashed() -> None:
    assert session_id("5F0C1A2B-3C4D-4E5F-8A9B-0C1D2E3F4A5B", "agent:main:telegram:42") == sha(
        "agent:main:telegram:42"
    )
    assert session_id(None, "k") == sha("k")


@pytest.mark.parametrize("raw", ["telegram:42", "a/b", "x\\y", "with space", "..", "q?", "x" * 200])
def test_ids_illegal_as_file_names_are_hashed_with_prefix(raw: str) -> None:
    assert session_id(raw) == sha("openclaw-session:" + raw)


def test_plain_ids_stay_readable_and_canonical_ids_are_stable() -> None:
    assert session_id("my-session_1") == "my-session_1"
    for raw in ("telegram:42", "ABCDEF01-2345-6789-ABCD-EF0123456789", "plain"):
        once = session_id(raw)
        assert session_id(once) == once


def test_missing_session_is_an_error_naming_it() -> None:
    with pytest.raises(InvalidArgument, match="session"):
        session_id(None, None)
    with pytest.raises(InvalidArgument):
        session_id("   ")


def test_agent_id() -> None:
    assert agent_id("agent:coder:telegram:dm:42", "main") == "coder"
    assert agent_id("telegram:dm:42", "helper") == "helper"
    assert agent_id("agent:onlytwo", None) == "main"
    assert agent_id(None, None) == "main"
    assert agent_id(None, "  ") == "main"


def test_bypass_patterns_are_globs() -> None:
    assert bypassed("cron-nightly-1", ["cron-*"]) == "cron-*"
    assert bypassed("chat-1", ["cron-*", "test?"]) is None
    assert bypassed("test1", ("cron-*", "test?")) == "test?"


def test_settings_defaults_and_bad_values(vault_root: Path) -> None:
    with Vault(vault_root, embedder=None) as v:
        got = load_settings(v)
        assert (got.recall_limit, got.commit_token_threshold, got.auto_recall) == (6, 20_000, True)
    cfg = vault_root / ".memex" / "config.toml"
    for toml, message in [
        ("[recall]\nrecall_limit = 0\n", "recall_limit must be at least 1"),
        ("[recall]\nrecall_limit = \"six\"\n", "recall_limit must be int"),
        ("[context]\nbypass_session_patterns = [1]\n", "bypass_session_patterns must be a list of strings"),
        ("[context]\ncommit_keep_recent_count = -1\n", "must not be negative"),
        ("[recall]\nrecall_cosine_growth = -0.1\n", "recall_cosine_growth must not be negative"),
        ("[recall]\nrecall_cosine_threshold = \"high\"\n", "recall_cosine_threshold must be float"),
    ]:
        cfg.write_text(toml, encoding="utf-8")
        with Vault(vault_root, embedder=None) as v, pytest.raises(ConfigError, match=message):
            load_settings(v)
    cfg.write_text('[context]\nbypass_session_patterns = ["cron-*"]\nauto_capture = false\n'
                   "[recall]\nrecall_score_threshold = 0.5\n", encoding="utf-8")
    with Vault(vault_root, embedder=None) as v:
        got = load_settings(v)
        assert got.bypass_session_patterns == ("cron-*",) and not got.auto_capture
        assert got.recall_score_threshold == 0.5


def test_an_archive_line_nested_too_deeply_is_skipped(vault: Vault) -> None:
    """Found from outside: a turns.jsonl line nested past Python's recursion
    limit (not memex's: written by hand, or brought by git) made
    `memex context search` print a RecursionError traceback."""
    from memex import context
    from memex.context.archive import session_dir

    context.after_turn(vault, "deep", [{"role": "user", "content": "the otter enclosure opens at nine"}], 0)
    turns = session_dir(vault, "deep") / "turns.jsonl"
    with open(turns, "a", encoding="utf-8") as handle:
        handle.write('{"id": "deep#9", "seq": 9, "messages": ' + "[" * 100_000 + "]" * 100_000 + "}\n")
    hits = context.archive_search(vault, "deep", "otter enclosure")
    assert [h["archive_id"] for h in hits] == ["deep#1"]
