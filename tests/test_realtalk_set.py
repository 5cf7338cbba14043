"""scripts/realtalk.py rebuilds REALTALK's multi-session chats from a local
copy; the split is fixed by chat and one chat is held back from every half.
Tested on tiny chat files written here, in the published files' layout."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

import locomo_pairs  # noqa: E402
import realtalk  # noqa: E402

from memex.dedup.subject import body, speaker  # noqa: E402


def turn(who: str, text: str, dia: str) -> dict[str, Any]:
    return {"clean_text": text, "speaker": who, "date_time": "02.03.2024, 10:00:00", "img_file": [],
            "img_url": [], "dia_id": dia}


def chat_file(folder: Path, n: int, a: str = "Rosa Lind", b: str = "tomas") -> Path:
    data: dict[str, Any] = {
        "name": {"speaker_1": a, "speaker_2": b},
        "session_1": [turn(a, "Morning! Did the bakery open?", "D1:1"), turn(b, "  It did,  on Friday. ", "D1:2"),
                      turn(a, "", "D1:3")],  # a picture alone
        "events_session_1": {},
        "session_1_date_time": "02.03.2024, 10:00:00",
        # Ids do not restart with the session: it goes on from D1:4.
        "session_2": [turn(b, "Back from the hike, my feet hurt", "D1:4"), turn(a, "Rest them, bye!", "D2:1")],
        "events_session_2": {},
        "session_2_date_time": "03.03.2024, 18:30:00",
        "qa": [{"question": "When did the bakery open?", "answer": "Friday", "evidence": ["D1:2"], "category": 2},
               {"question": "What hurt?", "answer": "feet", "evidence": ["D1:1-D1:2; D 1:4", "D2:1."],
                "category": 1}],
    }
    path = folder / f"Chat_{n}_{a.split()[0]}_{b.capitalize()}.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    for n in (2, 3, 5, 10):
        chat_file(tmp_path, n)
    # The held-back chat: not even valid JSON, so reading it would fail.
    (tmp_path / "Chat_1_Held_Back.json").write_text("{ never read", encoding="utf-8")
    return tmp_path


def test_each_turn_is_one_memory_of_its_session_named_by_the_speakers_first_name(folder: Path) -> None:
    chat = realtalk.load(folder)[0]
    assert chat.id == "Chat_2_Rosa_Tomas"
    assert [t.dia_id for t in chat.turns] == ["D1:1", "D1:2", "D1:4", "D2:1"]  # the empty D1:3 left out
    assert [t.session for t in chat.turns] == [1, 1, 2, 2]  # the session, not the id's number
    assert [t.memory_text for t in chat.turns] == [
        "Rosa: Morning! Did the bakery open?", "Tomas: It did, on Friday.",
        "Tomas: Back from the hike, my feet hurt", "Rosa: Rest them, bye!"]
    assert speaker(chat.turns[1].memory_text) == "tomas" and body(chat.turns[1].memory_text) == "It did, on Friday."
    assert chat.turns[2].session_date == "03.03.2024, 18:30:00"
    assert chat.speakers == ("Rosa", "Tomas")
    assert locomo_pairs.session_of(chat.turns[2]) == "Chat_2_Rosa_Tomas-D2"


def test_evidence_is_read_in_every_spelling_and_ranges_are_spelled_out(folder: Path) -> None:
    chat = realtalk.load(folder)[0]
    assert [q.evidence for q in chat.questions] == [("D1:2",), ("D1:1", "D1:2", "D1:4", "D2:1")]
    assert len(chat.retrieval_questions) == 2
    assert realtalk.evidence(["D17;39", "D3:5-D4:2"]) == ("D17:39", "D3:5", "D4:2")


def test_the_halves_are_fixed_by_chat_and_never_hold_the_held_back_chat(folder: Path) -> None:
    assert [c.id.split("_")[1] for c in realtalk.load(folder)] == ["2", "3", "5", "10"]
    assert [c.id.split("_")[1] for c in realtalk.select(folder, "choose")] == ["3", "5", "10"]
    assert [c.id.split("_")[1] for c in realtalk.select(folder, "report")] == ["2"]
    assert [c.id.split("_")[1] for c in realtalk.select(folder, "all")] == ["2", "3", "5", "10"]
    assert [c.id for c in realtalk.select(folder, "choose", ["5"])] == ["Chat_5_Rosa_Tomas"]
    assert realtalk.select(folder, "choose", ["Chat_2_Rosa_Tomas"]) == []
    assert realtalk.HELD_BACK not in realtalk.CHOOSE + realtalk.REPORT
    # A clone's root reads the same (its chats are under data/).
    (folder / "data").mkdir()
    chat_file(folder / "data", 8)
    assert [c.id.split("_")[1] for c in realtalk.select(folder / "data", "choose")] == ["8"]


def test_the_held_back_chat_is_refused_by_name(folder: Path) -> None:
    with pytest.raises(SystemExit, match="held back"):
        realtalk.load(folder / "Chat_1_Held_Back.json")
    with pytest.raises(SystemExit, match="held back"):
        realtalk.files(folder / "Chat_1_Held_Back.json")
    assert realtalk.chat_number("Chat_10_A_B.json") == 10 and realtalk.chat_number("Chat_1_A_B.json") == 1


def test_a_clash_of_ids_renames_every_turn_holding_it_and_drops_its_evidence(tmp_path: Path) -> None:
    path = chat_file(tmp_path, 4)
    data = json.loads(path.read_text(encoding="utf-8"))
    data["session_2"][1]["dia_id"] = "D1:2"  # now two turns say D1:2
    path.write_text(json.dumps(data), encoding="utf-8")
    chat = realtalk.load(path)[0]
    assert [t.dia_id for t in chat.turns] == ["D1:1", "S1:2", "D1:4", "S2:2"]
    assert [q.evidence for q in chat.questions] == [(), ("D1:1", "D1:4", "D2:1")]


def test_a_wrong_path_or_file_says_so(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match="does not exist"):
        realtalk.load(tmp_path / "missing")
    with pytest.raises(SystemExit, match="no Chat_N"):
        realtalk.load(tmp_path)
    (tmp_path / "notes.json").write_text("{}", encoding="utf-8")
    with pytest.raises(SystemExit, match="not a REALTALK chat file"):
        realtalk.load(tmp_path / "notes.json")
    (tmp_path / "Chat_3_A_B.json").write_text("{}", encoding="utf-8")
    with pytest.raises(SystemExit, match="no session_N"):
        realtalk.load(tmp_path)
    with pytest.raises(SystemExit, match="unknown half"):
        realtalk.split([], "choose2")


def test_the_labels_name_chats_and_turns_only() -> None:
    # REALTALK states no licence: no chat text enters the repository, and
    # the held-back chat is never labelled.
    rows = [json.loads(line) for line in locomo_pairs.REALTALK_LABELS.read_text(encoding="utf-8").splitlines()
            if line.strip()]
    assert all(set(r) <= {"conversation", "a", "b", "label", "why", "by"} for r in rows)
    assert all(realtalk.chat_number(r["conversation"] + ".json") in realtalk.CHOOSE + realtalk.REPORT for r in rows)
    assert all(r["label"] in locomo_pairs.KINDS and len(r.get("why", "")) <= 40 for r in rows)
