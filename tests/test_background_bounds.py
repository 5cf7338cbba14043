"""Background work from one transcript is bounded (memex/context/bounds.py):
a hook reads at most the last MAX_NEW_BYTES of new transcript, a commit
stores at most MAX_MEMORIES within MAX_SECONDS, the detached commit runs at
low priority, and what is left out is noted."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from memex import context
from memex.agents import transcript
from memex.context import archive
from memex.context import bounds, capture
from memex.vault import Vault
from tests.hook_helpers import fixture, lexical_only, run_hook, set_config
from tests.watchkit import wait_for

pytestmark = pytest.mark.usefixtures("no_warm_server")


def _statement(n: int) -> str:
    return f"We decided that service number {n} always deploys from the branch named release{n}."


def _write_transcript(path: Path, count: int, start: int = 0) -> Path:
    """A Claude Code transcript: ``count`` turns, each a user statement and a reply."""
    with path.open("a", encoding="utf-8") as out:
        for n in range(start, start + count):
            out.write(json.dumps({"type": "user", "uuid": f"u{n}", "message": {"role": "user", "content": _statement(n)}}) + "\n")
            out.write(json.dumps({"type": "assistant", "uuid": f"a{n}", "message": {
                "id": f"m{n}", "role": "assistant", "content": [{"type": "text", "text": "Noted. " + "x" * 200}]}}) + "\n")
    return path


def test_a_hook_reads_only_the_last_piece_of_a_huge_new_transcript(
    vault: Vault, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(transcript, "MAX_NEW_BYTES", 64 << 10, raising=False)
    path = _write_transcript(tmp_path / "t.jsonl", 2000)  # about 700 KB
    new = transcript.read_new(vault, "claude-code", "s1", str(path), "claude-code")
    texts = [m["content"] for m in new.messages if m["role"] == "user"]
    assert 0 < len(texts) < 250 and texts[-1] == _statement(1999), "the latest turns, in order"
    assert new.offset == path.stat().st_size
    assert "bytes of older transcript not archived" in capsys.readouterr().err
    transcript.mark_read(vault, "claude-code", "s1", new.offset)
    _write_transcript(path, 3, start=2000)  # the next turn is read whole, from where the last read ended
    later = transcript.read_new(vault, "claude-code", "s1", str(path), "claude-code")
    assert [m["content"] for m in later.messages if m["role"] == "user"] == [_statement(n) for n in (2000, 2001, 2002)]
    assert capsys.readouterr().err == ""


def test_a_line_longer_than_the_piece_is_skipped_not_read_forever(
    vault: Vault, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(transcript, "MAX_NEW_BYTES", 64 << 10, raising=False)
    path = tmp_path / "t.jsonl"
    huge = {"type": "user", "message": {"role": "user", "content": "a pasted log " + "y" * (200 << 10)}}
    path.write_text(json.dumps(huge) + "\n", encoding="utf-8")
    new = transcript.read_new(vault, "claude-code", "s1", str(path), "claude-code")
    assert new.messages == [] and new.offset == path.stat().st_size


@pytest.fixture
def many_statements(vault: Vault) -> Iterator[str]:
    """A session whose archived turns hold 120 user statements, not committed yet."""
    messages = [{"role": "user", "content": _statement(n)} for n in range(120)]
    context.after_turn(vault, "big", messages, 0, commit="none")
    yield "big"


def test_a_commit_stores_at_most_max_memories_the_latest_and_says_so(
    vault: Vault, many_statements: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bounds, "MAX_MEMORIES", 50)
    done = context.commit_session(vault, many_statements)
    stored = [m for m in done["memories"] if m.get("status") == "created"]
    assert len(done["memories"]) == bounds.MAX_MEMORIES == len(stored)
    assert done["not_stored"] == 120 - bounds.MAX_MEMORIES
    assert {h.body for h in vault.list(limit=500)} == {_statement(n) for n in range(120 - bounds.MAX_MEMORIES, 120)}
    assert f"{120 - bounds.MAX_MEMORIES} of 120 statements not stored" in capsys.readouterr().err
    assert archive.load_state(vault, many_statements).pending_tokens == 0  # the session goes on


def test_a_commit_stops_adding_after_max_seconds(
    vault: Vault, many_statements: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    ticks = iter(range(0, 10_000, 10))  # each look at the clock: ten seconds later
    monkeypatch.setattr(bounds, "clock", lambda: float(next(ticks)))
    done = context.commit_session(vault, many_statements)
    expected = int(bounds.MAX_SECONDS // 10) - 1  # the deadline is taken at 0, then one look per add
    assert len(done["memories"]) == expected and done["not_stored"] == 120 - expected


def test_the_detached_commit_runs_at_low_priority(vault: Vault, many_statements: str) -> None:
    lexical_only(vault.root)  # the detached process reads the config: no model to load
    pid = capture.spawn_commit(vault, many_statements)
    try:
        niceness = os.getpriority(os.PRIO_PROCESS, pid)
    except ProcessLookupError:  # pragma: no cover - starting Python alone outlasts this call
        pytest.fail("the commit ended before its priority could be read")
    assert niceness >= bounds.BACKGROUND_NICENESS
    wait_for(lambda: archive.load_state(vault, many_statements).commits >= 1, 300, "the commit to finish")


def test_a_stop_hook_with_a_transcript_full_of_statements_stores_a_bounded_number(
    vault_root: Path, tmp_path: Path
) -> None:
    """Through the real hook: the Stop archives the turn and starts the
    background commit, which stores at most MAX_MEMORIES and logs the rest."""
    lexical_only(vault_root)
    set_config(vault_root, "context", "commit_token_threshold = 1000")
    project = tmp_path / "shop"
    (project / ".git").mkdir(parents=True)
    path = _write_transcript(tmp_path / "t.jsonl", 300)
    stop = fixture("claude-code", "Stop.json", cwd=str(project), transcript=str(path))
    done = run_hook("claude-code", json.dumps(stop), vault_root)
    assert done.returncode == 0, done.stderr
    session = context.session_id(stop["session_id"])
    with Vault(vault_root, embedder=None) as vault:
        wait_for(lambda: archive.load_state(vault, session).commits >= 1, 300, "the background commit")
        assert len(vault.list(limit=1000)) == bounds.MAX_MEMORIES
        # The commit saves its state, then writes its note (capture.commit_session):
        # under load the log was read in between and found empty. Wait for the note.
        log_path = vault.paths.context_commit_log
        wait_for(lambda: "statements not stored" in log_path.read_text(encoding="utf-8"), 60, "the commit's note")
        log = log_path.read_text(encoding="utf-8")
    assert f"{300 - bounds.MAX_MEMORIES} of 300 statements not stored" in log
