"""scripts/msc.py rebuilds Multi-Session Chat's three-session episodes from a
local copy; the split is fixed by episode number and the valid split is
held back (refused). Tested on tiny episode files written here, in the
published third-session file's layout."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

import locomo_pairs  # noqa: E402
import msc  # noqa: E402

from memex.dedup.subject import body, speaker  # noqa: E402


def episode(n: int, split: str = "test") -> dict[str, Any]:
    def plain(*texts: str) -> list[dict[str, str]]:
        return [{"text": t} for t in texts]

    return {
        "personas": [["I keep bees."], ["I bake bread."]],
        "dialog": [
            {"text": "How are the bees?", "id": "48121", "convai2_id": f"{split}_{n}"},  # a worker number
            {"text": "  Calm,  since the rain. ", "id": "Speaker 2", "convai2_id": f"{split}_{n}"},
            {"text": "", "id": "Speaker 1", "convai2_id": f"{split}_{n}"},
            {"text": "Did the loaf rise?", "id": "Speaker 2", "convai2_id": f"{split}_{n}"},  # out of turn
        ],
        "metadata": {"initial_data_id": f"{split}_{n}", "session_id": 2},
        "previous_dialogs": [
            {"personas": [[], []], "dialog": plain("I keep bees.", "I bake bread."),
             "time_num": 2, "time_unit": "days", "time_back": "2 days 3 hours ago"},
            {"personas": [[], []], "dialog": plain("My hive swarmed!", "Oh no.", "Back now."),
             "time_num": 3, "time_unit": "hours", "time_back": "3 hours ago"},
        ],
        "init_personas": [[], []],
    }


def write(path: Path, numbers: list[int], split: str = "test") -> Path:
    path.write_text("".join(json.dumps(episode(n, split)) + "\n" for n in numbers), encoding="utf-8")
    return path


def test_each_turn_is_one_memory_of_its_session_named_by_its_speaker(tmp_path: Path) -> None:
    ep = msc.load(write(tmp_path / "session_3_test.txt", [4]))[0]
    assert ep.id == "test_4" and ep.speakers == ("Cam", "Dee") and ep.questions == ()
    assert [t.dia_id for t in ep.turns] == ["D1:1", "D1:2", "D2:1", "D2:2", "D2:3", "D3:1", "D3:2", "D3:4"]
    assert [t.session for t in ep.turns] == [1, 1, 2, 2, 2, 3, 3, 3]
    assert [t.memory_text for t in ep.turns] == [
        "Cam: I keep bees.", "Dee: I bake bread.", "Cam: My hive swarmed!", "Dee: Oh no.", "Cam: Back now.",
        "Cam: How are the bees?", "Dee: Calm, since the rain.", "Dee: Did the loaf rise?"]
    assert speaker(ep.turns[6].memory_text) == "dee" and body(ep.turns[6].memory_text) == "Calm, since the rain."
    assert [t.session_date for t in ep.turns[:3]] == ["2 days 3 hours ago", "2 days 3 hours ago", "3 hours ago"]
    assert locomo_pairs.session_of(ep.turns[5]) == "test_4-D3"


def test_the_halves_alternate_by_number_and_the_blocks_follow(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(msc, "SET_SIZE", 4)
    monkeypatch.setattr(msc, "BLOCK2_SIZE", 1)
    path = write(tmp_path / "session_3_test.txt", [10, 2, 7, 0, 3, 25])
    assert [c.id for c in msc.load(path)] == ["test_0", "test_2", "test_3", "test_7", "test_10", "test_25"]
    assert [c.id for c in msc.select(path, "choose2")] == ["test_10"]
    assert [c.id for c in msc.select(path, "choose3")] == ["test_25"]
    assert [c.id for c in msc.select(path, "choose")] == ["test_0", "test_3"]
    assert [c.id for c in msc.select(path, "report")] == ["test_2", "test_7"]
    assert [c.id for c in msc.select(path, "all")] == ["test_0", "test_2", "test_3", "test_7"]
    assert [c.id for c in msc.select(tmp_path, "choose", ["3"])] == ["test_3"]  # the folder reads the same
    assert msc.select(path, "choose", ["test_2"]) == []


def test_a_wrong_path_or_file_says_so(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match="does not exist"):
        msc.load(tmp_path / "missing")
    with pytest.raises(SystemExit, match="no session_3_test.txt"):
        msc.load(tmp_path)
    with pytest.raises(SystemExit, match="not a test episode"):
        msc.load(write(tmp_path / "valid.txt", [0], "valid"))
    (tmp_path / "s2.txt").write_text(json.dumps({**episode(0), "previous_dialogs": []}) + "\n", encoding="utf-8")
    with pytest.raises(SystemExit, match="not two previous sessions"):
        msc.load(tmp_path / "s2.txt")
    (tmp_path / "bad.txt").write_text("{ no\n", encoding="utf-8")
    with pytest.raises(SystemExit, match="not an MSC episode"):
        msc.load(tmp_path / "bad.txt")
    with pytest.raises(SystemExit, match="unknown half"):
        msc.split([], "report2")



def test_the_labels_name_episodes_and_turns_only() -> None:
    # MSC's terms are not stated beside the copy: no episode text enters the repository.
    path = locomo_pairs.MSC_LABELS
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    assert rows
    assert all(set(r) <= {"conversation", "a", "b", "label", "why", "by"} for r in rows)
    assert all(msc.episode_number(r["conversation"]) is not None for r in rows)
    assert all(r["label"] in locomo_pairs.KINDS and len(r.get("why", "")) <= 40 for r in rows)
