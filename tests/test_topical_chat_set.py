"""scripts/topical_chat.py rebuilds the held-out set of real chats from a
local copy of Topical-Chat; its labels name turns only. Tested on a tiny
chat file written here, in the split file's own layout."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

import locomo_pairs  # noqa: E402
import topical_chat  # noqa: E402

from memex.dedup.subject import body, speaker  # noqa: E402


def chat(*messages: tuple[str, str]) -> dict[str, Any]:
    return {"article_url": "", "config": "A", "conversation_rating": {},
            "content": [{"agent": a, "message": m, "sentiment": "Neutral", "knowledge_source": ["FS1"],
                         "turn_rating": "Good"} for a, m in messages]}


@pytest.fixture
def split_file(tmp_path: Path) -> Path:
    data = {
        f"t_{k:02d}": chat(("agent_1", f"Hi there, chat {k}!"), ("agent_2", "  Hello!   Do you like  football? "),
                           ("agent_1", ""), ("agent_1", "Bye!"))
        for k in (3, 1, 0, 2, 4)
    }
    path = tmp_path / "test_freq.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_each_turn_is_one_memory_named_by_its_speaker(split_file: Path) -> None:
    first = topical_chat.load(split_file)[0]
    assert first.id == "t_00"
    assert [t.dia_id for t in first.turns] == ["D1:1", "D1:2", "D1:4"]  # the empty turn 3 is left out
    assert [t.memory_text for t in first.turns] == ["Ann: Hi there, chat 0!", "Ben: Hello! Do you like football?",
                                                    "Ann: Bye!"]
    # The names are speaker prefixes memex reads (agent_1 would not be).
    assert speaker(first.turns[1].memory_text) == "ben" and body(first.turns[1].memory_text).startswith("Hello")
    assert {t.session for t in first.turns} == {1}
    assert locomo_pairs.session_of(first.turns[0]) == "t_00-D1"


def test_the_set_is_the_first_chats_by_id_alternating_between_the_parts(split_file: Path) -> None:
    chats = topical_chat.load(split_file)
    assert [c.id for c in topical_chat.split(chats, "all", size=4)] == ["t_00", "t_01", "t_02", "t_03"]
    assert [c.id for c in topical_chat.split(chats, "choose", size=4)] == ["t_00", "t_02"]
    assert [c.id for c in topical_chat.split(chats, "report", size=4)] == ["t_01", "t_03"]
    # A folder holding the split file reads the same.
    assert [c.id for c in topical_chat.select(split_file.parent, "report", ["t_03"])] == ["t_03"]


def test_a_chat_held_back_from_the_set_is_reached_by_id(split_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(topical_chat, "SET_SIZE", 4)  # t_04 is beyond the set
    assert [c.id for c in topical_chat.split(topical_chat.load(split_file), "all")] == ["t_00", "t_01", "t_02", "t_03"]
    assert topical_chat.select(split_file, "choose", ["t_04"]) == []
    assert [c.id for c in topical_chat.select(split_file, "all", ["t_04"])] == ["t_04"]


def test_a_wrong_path_or_file_says_so(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match="does not exist"):
        topical_chat.load(tmp_path / "missing.json")
    with pytest.raises(SystemExit, match="no test_freq.json"):
        topical_chat.load(tmp_path)
    (tmp_path / "x.json").write_text("[]", encoding="utf-8")
    with pytest.raises(SystemExit, match="not a Topical-Chat split"):
        topical_chat.load(tmp_path / "x.json")
    with pytest.raises(SystemExit, match="unknown half"):
        topical_chat.split([], "middle")


def test_locomo_sessions_keep_their_names() -> None:
    import locomo

    turn = locomo.Turn("26", 3, "", "D3:1", "Caroline", "Hey Mel!", "")
    assert locomo_pairs.session_of(turn) == "locomo26-D3"


def test_the_labels_name_chats_and_turns_only() -> None:
    # Topical-Chat's data licence (CDLA-Sharing 1.0) is not memex's: no
    # chat text enters the repository.
    rows = [json.loads(line) for line in topical_chat_labels().read_text(encoding="utf-8").splitlines() if line]
    assert len(rows) > 100
    assert all(set(r) <= {"conversation", "a", "b", "label", "why", "by"} for r in rows)
    assert all(r["conversation"].startswith("t_") and r["a"].startswith("D1:") and r["b"].startswith("D1:")
               for r in rows)
    assert all(r["label"] in locomo_pairs.KINDS and len(r.get("why", "")) <= 40 for r in rows)


def topical_chat_labels() -> Path:
    return locomo_pairs.TOPICAL_LABELS


def test_the_second_choosing_block_is_the_chats_after_the_set(split_file: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    # A block read only to choose rules on: never the set's chats, never reported.
    monkeypatch.setattr(topical_chat, "SET_SIZE", 2)
    monkeypatch.setattr(topical_chat, "BLOCK2_SIZE", 2)
    chats = topical_chat.load(split_file)
    assert [c.id for c in topical_chat.split(chats, "choose2")] == ["t_02", "t_03"]
    assert [c.id for c in topical_chat.select(split_file, "choose2", ["t_03"])] == ["t_03"]
    assert not {c.id for c in topical_chat.split(chats, "choose2")} & {c.id for c in topical_chat.split(chats, "all")}


def test_the_third_choosing_block_is_the_first_chats_of_the_validation_split(
        split_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Another split file beside the first: its first chats by id, for choosing only.
    valid = {f"v_{k:02d}": chat(("agent_1", f"Hello, chat {k}."), ("agent_2", "Bye, take care!")) for k in (2, 0, 1)}
    (split_file.parent / "valid_freq.json").write_text(json.dumps(valid), encoding="utf-8")
    monkeypatch.setattr(topical_chat, "BLOCK3_SIZE", 2)
    for where in (split_file, split_file.parent, split_file.parent / "valid_freq.json"):
        assert [c.id for c in topical_chat.select(where, "choose3")] == ["v_00", "v_01"]
    assert [c.id for c in topical_chat.select(split_file, "choose3", ["v_01"])] == ["v_01"]
    # The labels' chats are found in either file.
    assert {c.id for c in topical_chat.load_all(split_file)} == {f"t_{k:02d}" for k in range(5)} | set(valid)


def test_the_third_block_says_when_its_file_is_missing(split_file: Path) -> None:
    with pytest.raises(SystemExit, match="no valid_freq.json beside"):
        topical_chat.select(split_file, "choose3")
    assert len(topical_chat.load_all(split_file)) == 5
