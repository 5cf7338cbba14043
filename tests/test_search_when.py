"""Relative time in a query ("last week", "上周") favours memories from then (docs/search.md)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from memex.files import memory_file
from memex.search.hybrid import search
from memex.vault import Vault
from memex.search.when import window
from tests.fakes import HashEmbedder

NOW = dt.datetime(2026, 4, 16, 12, 0, tzinfo=dt.timezone.utc)  # a Thursday
UTC = dt.timezone.utc


def day(y: int, m: int, d: int) -> dt.datetime:
    return dt.datetime(y, m, d, tzinfo=UTC)


@pytest.mark.parametrize(("query", "span"), [
    ("what did we decide yesterday?", (day(2026, 4, 15), day(2026, 4, 16))),
    ("What did we decide last week about the cache?", (day(2026, 4, 6), day(2026, 4, 13))),
    ("what was agreed two weeks ago", (day(2026, 3, 30), day(2026, 4, 6))),
    ("On Tuesday, what did we land on?", (day(2026, 4, 14), day(2026, 4, 15))),
    ("what did we say on Thursday", (day(2026, 4, 9), day(2026, 4, 10))),
    ("上周我们对缓存是怎么定的？", (day(2026, 4, 6), day(2026, 4, 13))),
    ("昨天开会说的上线日期是哪天？", (day(2026, 4, 15), day(2026, 4, 16))),
    ("周二开会说的存储最后定了什么？", (day(2026, 4, 14), day(2026, 4, 15))),
])
def test_relative_times_become_windows(query: str, span: tuple[dt.datetime, dt.datetime]) -> None:
    assert window(query, NOW) == span


@pytest.mark.parametrize("query", ["can we deploy on Friday?", "which database does the cache use", "周会什么时候开？"])
def test_plans_and_plain_questions_name_no_window(query: str) -> None:
    assert window(query, NOW) is None


def test_last_weeks_decision_comes_first(vault_root: Path) -> None:
    for mid, created, body in (
        ("old", "2026-04-01T10:00:00Z", "We decided the cache keeps entries for ten minutes."),
        ("new", "2026-04-08T10:00:00Z", "We decided the cache keeps entries for one hour."),
        ("now", "2026-04-16T09:00:00Z", "We decided the cache keeps entries for a day."),
    ):
        memory_file.atomic_write(
            vault_root / "memories" / "user" / f"{mid}.md",
            memory_file.serialize(memory_file.MemoryFile({"id": mid, "scope": "user", "created": created}, body + "\n")),
        )
    with Vault(vault_root, embedder=HashEmbedder()) as vault:
        vault.reindex()
        hits = search(vault.conn, vault.embedder, "what did we decide last week about the cache?", 3, now=NOW)
        assert hits[0].id == "new"
        hits = search(vault.conn, vault.embedder, "what did we decide two weeks ago about the cache?", 3, now=NOW)
        assert hits[0].id == "old"
