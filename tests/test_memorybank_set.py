"""scripts/memorybank.py rebuilds MemoryBank's users talking with an AI
companion, day by day, from a local copy; the split is fixed by first name.
Tested on tiny memory banks written here, in the published file's layout."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

import locomo_pairs  # noqa: E402
import memorybank  # noqa: E402

from memex.dedup.subject import body, speaker  # noqa: E402


def user(name: str) -> dict[str, Any]:
    return {
        "name": name,
        "summary": {},
        "personality": {},
        "history": {
            # Days out of order in the file: read in date order.
            "2023-04-29": [{"query": "Back from the lake.", "response": "  How  was it? "}],
            "2023-04-27": [
                {"query": "Hi, I keep bees.", "response": "Hello! Bees are wonderful."},
                {"query": "", "response": "Anything else?"},
            ],
        },
    }


def write(path: Path, names: list[str]) -> Path:
    path.write_text(json.dumps({n: user(n) for n in names}), encoding="utf-8")
    return path


def test_each_turn_is_one_memory_of_its_day_named_by_its_speaker(tmp_path: Path) -> None:
    conv = memorybank.load(write(tmp_path / "memory_bank_en.json", [" John Zhang "]))[0]
    assert conv.id == "John" and conv.speakers == ("John", "Companion") and conv.questions == ()
    assert [t.dia_id for t in conv.turns] == ["D1:1", "D1:2", "D1:4", "D2:1", "D2:2"]
    assert [t.session for t in conv.turns] == [1, 1, 1, 2, 2]
    assert [t.memory_text for t in conv.turns] == [
        "John: Hi, I keep bees.", "Companion: Hello! Bees are wonderful.", "Companion: Anything else?",
        "John: Back from the lake.", "Companion: How was it?"]
    assert speaker(conv.turns[0].memory_text) == "john" and body(conv.turns[4].memory_text) == "How was it?"
    assert [t.session_date for t in conv.turns[2:4]] == ["2023-04-27", "2023-04-29"]
    assert locomo_pairs.session_of(conv.turns[3]) == "John-D2"


def test_the_halves_alternate_by_first_name(tmp_path: Path) -> None:
    path = write(tmp_path / "memory_bank_en.json", ["Luna", " Ivy ", "Emily", "Gary", "Frank"])
    assert [c.id for c in memorybank.load(path)] == ["Emily", "Frank", "Gary", "Ivy", "Luna"]
    assert [c.id for c in memorybank.select(path, "choose")] == ["Emily", "Gary", "Luna"]
    assert [c.id for c in memorybank.select(path, "report")] == ["Frank", "Ivy"]
    assert [c.id for c in memorybank.select(tmp_path, "all")] == ["Emily", "Frank", "Gary", "Ivy", "Luna"]
    assert [c.id for c in memorybank.select(path, "choose", ["Gary"])] == ["Gary"]
    assert memorybank.select(path, "choose", ["Frank"]) == []


def test_a_wrong_path_or_file_says_so(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match="does not exist"):
        memorybank.load(tmp_path / "missing")
    with pytest.raises(SystemExit, match="no memory_bank_en.json"):
        memorybank.load(tmp_path)
    (tmp_path / "bad.json").write_text("{ no", encoding="utf-8")
    with pytest.raises(SystemExit, match="is not JSON"):
        memorybank.load(tmp_path / "bad.json")
    (tmp_path / "list.json").write_text("[]", encoding="utf-8")
    with pytest.raises(SystemExit, match="not a memory bank"):
        memorybank.load(tmp_path / "list.json")
    (tmp_path / "twice.json").write_text(json.dumps({"Ann": user("Ann Lee"), "Ann B": user("Ann Bell")}))
    with pytest.raises(SystemExit, match="share a first name"):
        memorybank.load(tmp_path / "twice.json")
    (tmp_path / "nohist.json").write_text(json.dumps({"Ann": {"name": "Ann"}}))
    with pytest.raises(SystemExit, match="no history"):
        memorybank.load(tmp_path / "nohist.json")
    with pytest.raises(SystemExit, match="unknown half"):
        memorybank.split([], "choose2")


def test_the_labels_name_users_and_turns_only() -> None:
    # Only ids enter the repository, as for the other sets.
    rows = [json.loads(line) for line in locomo_pairs.MEMORYBANK_LABELS.read_text(encoding="utf-8").splitlines()
            if line.strip()]
    assert rows
    assert all(set(r) <= {"conversation", "a", "b", "label", "why", "by"} for r in rows)
    assert all(re.fullmatch(r"[A-Za-z]+", r["conversation"]) for r in rows)
    assert all(re.fullmatch(r"D\d+:\d+", r[k]) for r in rows for k in ("a", "b"))
    assert all(r["label"] in locomo_pairs.KINDS and len(r.get("why", "")) <= 40 for r in rows)
    assert len({(r["conversation"], r["a"], r["b"]) for r in rows}) == len(rows)
