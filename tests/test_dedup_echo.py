"""Turn-echo guard and the hand-off note (docs/write-path.md#dedup)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from memex.errors import InvalidArgument
from memex.vault import Vault
from memex.consolidation.handoff import handoff
from memex.meta_edit import update_meta
from tests.test_dedup import memory_files, set_dedup_config

pytestmark = pytest.mark.both_backends

HOOK_TEXT = "I want all API handlers to return problem+json errors with a trace id"
AGENT_TEXT = "User wants API handlers to return errors as problem+json including trace id field"


def _minutes_ago(minutes: int) -> str:
    moment = dt.datetime.now(dt.timezone.utc) - dt.timedelta(minutes=minutes)
    return moment.replace(microsecond=0).isoformat().replace("+00:00", "Z")


def test_agent_restating_a_hook_capture_is_refused_with_the_stored_id(vault: Vault) -> None:
    hook = vault.add(HOOK_TEXT, source="keyword", session="turn-1")
    echo = vault.add(AGENT_TEXT, source="tool", session="turn-1")
    assert (echo.status, echo.method, echo.existing_id, echo.id) == ("refused", "turn_echo", hook.id, hook.id)
    assert echo.path == hook.path
    assert echo.similarity is not None and 0.28 <= echo.similarity < 0.70
    assert len(memory_files(vault)) == 1


@pytest.mark.parametrize(
    ("source", "session"),
    [
        ("tool", "turn-2"),  # another session
        ("claude-code", "turn-1"),  # not an agent source of the guard
        ("user", "turn-1"),  # a person may restate
    ],
)
def test_the_guard_applies_only_to_agents_in_the_same_session(vault: Vault, source: str, session: str) -> None:
    vault.add(HOOK_TEXT, source="keyword", session="turn-1")
    other = vault.add(AGENT_TEXT, source=source, session=session)
    assert other.status == "created"


def test_a_capture_older_than_the_window_does_not_count(vault: Vault) -> None:
    hook = vault.add(HOOK_TEXT, source="keyword", session="turn-1")
    update_meta(vault, hook.id, {"created": "2020-01-01T00:00:00Z"})
    assert vault.add(AGENT_TEXT, source="agent", session="turn-1").status == "created"


def test_a_changed_number_is_not_an_echo(vault: Vault) -> None:
    vault.add("Keep the retry budget at 3 attempts per request", source="keyword", session="t")
    changed = vault.add("Retry budget should be 5 attempts for each request", source="tool", session="t")
    assert changed.status == "created"


def test_unrelated_agent_save_in_the_same_turn_is_stored(vault: Vault) -> None:
    vault.add(HOOK_TEXT, source="keyword", session="turn-1")
    assert vault.add("The staging database is reset every night", source="tool", session="turn-1").status == "created"


@pytest.mark.parametrize(
    ("settings", "source", "status"),
    [
        ({"echo_jaccard": 0.9}, "tool", "created"),
        ({"echo_window_seconds": 60}, "tool", "created"),  # captured 5 minutes ago
        ({"echo_window_seconds": 600}, "tool", "refused"),
        ({"echo_agent_sources": ["claude-code"]}, "tool", "created"),
        ({"echo_agent_sources": ["claude-code"]}, "claude-code", "refused"),
        ({"echo_capture_sources": ["hook"]}, "tool", "created"),
    ],
)
def test_echo_settings_come_from_the_config(
    vault_root: Path, settings: dict[str, object], source: str, status: str
) -> None:
    set_dedup_config(vault_root, **settings)
    with Vault(vault_root, embedder=None) as v:
        hook = v.add(HOOK_TEXT, source="keyword", session="t")
        if "echo_window_seconds" in settings:
            update_meta(v, hook.id, {"created": _minutes_ago(5)})
        assert v.add(AGENT_TEXT, source=source, session="t").status == status


def test_handoff_lists_this_turns_verbatim_captures(vault: Vault) -> None:
    long_text = "Remember that " + "the ingestion worker must never drop partial batches " * 6
    hook = vault.add(HOOK_TEXT, source="keyword", session="turn-1", scope="project:api")
    long = vault.add(long_text, source="user", session="turn-1")
    vault.add("An agent note, not a capture", source="tool", session="turn-1")
    vault.add("Another session's capture", source="keyword", session="turn-2")

    note = handoff(vault, "turn-1")

    assert [i.id for i in note.items] == [hook.id, long.id]
    assert note.items[0].scope == "project:api"
    assert len(note.items[1].preview) == 160 and note.items[1].preview.endswith("…")
    assert hook.id in note.text and "project:api" in note.text
    assert "not save" in note.text and "supersede" in note.text
    assert "An agent note" not in note.text and "Another session" not in note.text


def test_handoff_is_empty_without_captures_and_rejects_an_empty_session(vault: Vault) -> None:
    vault.add("An agent note", source="tool", session="turn-9")
    note = handoff(vault, "turn-9")
    assert note.items == [] and note.text == ""
    with pytest.raises(InvalidArgument, match="session"):
        handoff(vault, " ")


def test_handoff_leaves_out_captures_older_than_the_window(vault: Vault) -> None:
    hook = vault.add(HOOK_TEXT, source="keyword", session="turn-1")
    update_meta(vault, hook.id, {"created": "2020-01-01T00:00:00Z"})
    assert handoff(vault, "turn-1").items == []
