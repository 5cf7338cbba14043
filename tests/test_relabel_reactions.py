"""scripts/relabel_reactions.py applies the labelling rule's reading of a
reaction (an answer to the turn it reacts to, a duplicate only of the same
words) to labelled pairs; tested on turns written here."""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

import relabel_reactions as rr  # noqa: E402

from memex.dedup import subject  # noqa: E402


def row(label: str) -> dict[str, str]:
    return {"conversation": "1", "a": "D1:1", "b": "D1:5", "label": label, "why": "read", "by": "read"}


def test_a_reaction_is_not_carried_by_a_fuller_turn_of_its_speaker() -> None:
    kept, reaction = "Sam: Looking forward to the trip next week!", "Sam: Agreed!"
    new = rr.relabel(row("a_covers"), kept, reaction)
    assert new is not None and new["label"] == "different"
    assert new["why"] == "reaction_was_a_covers" and new["by"] == "reaction_rule"
    # Either side may be the reaction, and "same" goes too.
    assert rr.relabel(row("b_covers"), reaction, kept) is not None
    assert rr.relabel(row("same"), "Sam: Agreed!", "Sam: True!") is not None
    # memex's own test calls it a reaction, so the labels and the code read it alike.
    assert subject.keeps_apart(kept, reaction) == "reaction"


def test_other_labels_stand() -> None:
    assert rr.relabel(row("same"), "Sam: Agreed!", "Sam: agreed.") is None  # the same words
    assert rr.relabel(row("different"), "Sam: I like tea", "Sam: True!") is None
    # No reaction on either side: a statement carried by a fuller one.
    assert rr.relabel(row("a_covers"), "Sam: I moved to Lisbon in May", "Sam: I moved to Lisbon") is None
    # Thanks and farewells are acts, not reactions: the small-talk rule decides them.
    assert rr.relabel(row("a_covers"), "Sam: Thanks so much, Ana!", "Sam: Thanks!") is None
    assert not rr.is_reaction("Sam: Bye, see you soon!")
    assert rr.is_reaction("Sam: ;)") and rr.is_reaction("Sam: You too!")



def test_a_question_in_question_words_only_reads_as_a_reaction_too() -> None:
    # "What is it?" asks about the turn it answers: the rule and the code read it alike.
    assert rr.is_reaction("Sam: No, what was it?") and rr.is_reaction("Sam: I did not. What is it?")
    assert rr.relabel(row("same"), "Sam: No, what was it?", "Sam: No, for what?") is not None
    assert subject.keeps_apart("Sam: No, what was it?", "Sam: No, for what?") == "reaction"
    assert not rr.is_reaction("Sam: What is the stadium called?")


def test_relabelled_rows_say_what_they_were() -> None:
    path = ROOT / "scripts" / "data" / "locomo_labels.jsonl"
    rows = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]
    done = [r for r in rows if r["by"] == "reaction_rule"]
    assert len(done) == 23
    assert all(r["label"] == "different" and r["why"] in {f"reaction_was_{k}" for k in rr.COVERING} for r in done)
