"""Consolidation hides a memory only behind one that carries it (issue 28:
"a group's representative carries the group's information, or the group is
not merged"), read more strictly than dedup reads a duplicate
(memex/dedup/carries.py ``stays_apart``): superseding hides a turn at the
end of a session, where dedup only declines to write the same turn twice.

Chosen on REALTALK's choosing chats (docs/write-path.md, "Real
conversations"): a remark of two words of content ("Just took a test")
hidden behind a longer turn that holds both words and says something else
with them, and a turn whose "that", "it", "they" or "the same" names
something its representative does not point at. The examples are written
here, in the shape of those turns.
"""

from __future__ import annotations

import pytest

from memex.dedup import carries, subject, talk
from memex.vault import Vault
from tests.chat_helpers import write, grouped

# --- the checks themselves (no model) ----------------------------------------


@pytest.mark.parametrize(
    ("kept", "cand"),
    [
        ("Lea: I finally finished the exam and it went badly", "Lea: Finished the exam"),
        ("Lea: We watched the old pirate films last night, the pirates say ahoy", "Lea: Ahoy pirates"),
        ("Lea: We eat pasta with tomato sauce and cheese on Fridays", "Lea: I don't eat pasta"),
        ("Lea: We can still hike next month when the weather is warmer", "Lea: I guess I'll hike some other month"),
    ],
)
def test_a_remark_of_two_words_is_carried_only_by_the_same_words(kept: str, cand: str) -> None:
    assert subject.covers(kept, cand)  # dedup reads it as before
    # Said by someone, two words are a statement (memex.dedup.talk); in a
    # note without a speaker they are a remark too short to be carried
    # (or said by someone else: "I finished" against "Finished").
    assert carries.stays_apart(kept, cand) == "statement"
    assert carries.stays_apart(kept.removeprefix("Lea: "), cand.removeprefix("Lea: ")) in ("short", "person")
    assert carries.carries(cand, cand)
    assert carries.carries("Lea: finished the exam!", "Lea: Finished the exam")


@pytest.mark.parametrize(
    ("kept", "cand"),
    [
        ("Lea: I think people read the train timetable badly", "Lea: That's what I think people read"),
        ("Lea: I slept badly so now I am feeling tired all morning long", "Lea: Feeling the same as when I slept badly"),
        ("Lea: I told my neighbour about the party because I wanted her to come along",
         "Lea: But they told the neighbour about the party"),
    ],
)
def test_a_turn_pointing_with_a_word_its_representative_lacks_is_not_carried(kept: str, cand: str) -> None:
    assert subject.covers(kept, cand)  # dedup reads it as before
    assert carries.stays_apart(kept, cand) == "statement"
    assert carries.stays_apart(kept.removeprefix("Lea: "), cand.removeprefix("Lea: ")) == "pointer"


def test_a_longer_note_points_inside_itself() -> None:
    # Four words of content and more, no speaker: "it" names what the note
    # names. A turn said by someone points at the talk at any length
    # (tests/test_dedup_talk.py).
    assert carries.carries("The bike shop fixed my old bike chain and cleaned the gears",
                           "The bike shop fixed the old chain and cleaned it")
    assert not carries.carries("Lea: The bike shop fixed my old bike chain and cleaned the gears",
                               "Lea: The bike shop fixed the old chain and cleaned it")


def test_pointing_words_are_read_in_their_plain_form() -> None:
    assert talk.pointers("Lea: thats what she said, it's theirs") == {"that", "she", "it"}
    assert talk.pointers("Lea: That’s her bike and they're fixing it") == {"that", "she", "they", "it"}
    assert talk.pointers("Lea: I fixed the bike") == frozenset()
    # The same pointing word on both sides of a note: carried as before.
    assert carries.carries("I think that the bike shop on the corner is good value for money",
                           "I think that the bike shop is good value")


def test_small_talk_questions_and_longer_turns_are_read_as_dedup_reads_them() -> None:
    assert carries.carries("Lea: Thanks so much for the help yesterday", "Lea: Thanks")
    # Small talk pointing at whom it thanks: the small-talk rule decides.
    assert carries.carries("Lea: Thanks, Max! Appreciate it, talk soon!", "Lea: Thanks, your support means a lot.")
    assert carries.stays_apart("Lea: I go climbing every Sunday", "Lea: Do you go climbing?") == "question"
    assert carries.carries("For lunch I'd pick rice, beans or noodles, rice first",
                           "For lunch I'd pick rice or noodles")
    # Said by someone, it is a statement of its own (memex.dedup.talk).
    assert carries.stays_apart("Lea: For lunch I'd pick rice, beans or noodles, rice first",
                               "Lea: For lunch I'd pick rice or noodles") == "statement"


# --- the real model ----------------------------------------------------------


@pytest.mark.model
def test_consolidation_hides_no_two_word_remark_behind_a_turn_with_its_words(model_vault: Vault) -> None:
    write(model_vault, "long", "Lea: I finally finished the exam and it went badly, I failed it", 0)
    write(model_vault, "short", "Lea: Finished the exam", 4)
    write(model_vault, "other", "Max: The shelter closes at six on weekdays.", 2)
    model_vault.reindex()
    assert not grouped(model_vault, "long", "short")


@pytest.mark.model
def test_consolidation_hides_no_turn_pointing_at_something_else(model_vault: Vault) -> None:
    write(model_vault, "long", "Lea: I slept badly so now I am feeling tired all morning long", 0)
    write(model_vault, "same", "Lea: Feeling the same as when I slept badly", 4)
    write(model_vault, "other", "Max: The shelter closes at six on weekdays.", 2)
    model_vault.reindex()
    assert not grouped(model_vault, "long", "same")
