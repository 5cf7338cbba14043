"""Turns that lean on the talk around them (memex/dedup/talk.py): a
question, and a turn said by someone that points with "that", "it", "she",
"they" or "the same", are carried only by the same words; and "the
weekend" is of the moment it is said in (memex/dedup/subject.py).

Chosen on REALTALK's choosing chats (docs/write-path.md, "Real
conversations"): one evening's talk about films said "I think that was a
good movie" of one film and "I think that was a really good and fun movie"
of another; "That was a waste of time and money" a week after "Seems like
it'd be a waste of time and money"; "do you have any recommendations?" on
another day than "any other recommendations?". The examples are written
here, in the shape of the turns that went wrong.
"""

from __future__ import annotations

import pytest

from memex.dedup import carries, subject, talk
from memex.vault import Vault
from tests.chat_helpers import add, grouped, write

# --- the checks themselves (no model) ----------------------------------------


@pytest.mark.parametrize(
    ("kept", "cand"),
    [
        ("Lea: I think that was a really nice and clever play", "Lea: I think that was a nice play"),
        ("Lea: It was maybe the best concert I've ever been to", "Lea: That was maybe the best concert ever"),
        ("Lea: Sounds like it'd be a waste of a Saturday", "Lea: That was a waste of a Saturday"),
        ("Lea: The last gig I saw live was the Pixies", "Lea: I also saw that Pixies gig live"),
        ("Lea: My sister loved the new bakery", "Lea: She loved the new bakery"),
    ],
)
def test_a_turn_that_points_at_the_talk_is_carried_only_by_the_same_words(kept: str, cand: str) -> None:
    assert subject.covers(kept, cand)  # the words alone would carry it
    assert talk.leans_on_talk(kept, cand) == "pointer"
    assert talk.leans_on_talk(cand, cand + "!") is None  # the same words, other signs


@pytest.mark.parametrize(
    ("kept", "cand"),
    [
        ("Lea: What are you doing tonight?", "Lea: What did you do tonight?"),
        ("Lea: any other tips?", "Lea: do you have any tips?"),
        ("Lea: Where are you going", "Lea: Where are you going now?"),
    ],
)
def test_a_question_is_carried_only_by_the_same_words(kept: str, cand: str) -> None:
    assert talk.leans_on_talk(kept, cand) == "question"
    assert talk.leans_on_talk(kept, kept.upper()) is None


def test_small_talk_and_notes_are_read_as_before() -> None:
    # A greeting that asks is small talk: read by its acts (memex.dedup.subject).
    assert talk.leans_on_talk("Lea: Hey, how's it going?", "Lea: Hi! How have you been?") is None
    # Thanks pointing with "it" is small talk too.
    assert talk.leans_on_talk("Lea: Thanks, I really appreciate your help", "Lea: Thanks, I appreciate it") is None
    # A note without a speaker points inside itself.
    assert talk.leans_on_talk("numpy stays below 2.0 because the ONNX wheels break with numpy 2",
                              "numpy stays below 2.0 because the ONNX wheels break with it") is None
    # No pointing word, no question: left to the other checks.
    assert talk.leans_on_talk("Lea: I fixed the old bike chain yesterday", "Lea: Fixed the bike chain yesterday") is None


def test_the_weekend_is_of_the_moment() -> None:
    assert subject.of_the_moment("Lea: At least it's the weekend")
    assert not subject.of_the_moment("Lea: I go climbing on weekends")


# --- the real model ----------------------------------------------------------


@pytest.mark.model
def test_two_turns_pointing_at_two_things_are_both_kept(model_vault: Vault) -> None:
    assert add(model_vault, "Lea: I think that was a really nice and clever play", session="day1").status == "created"
    assert add(model_vault, "Lea: I think that was a nice play", session="day1").status == "created"
    # The same words said again are the same remark.
    assert add(model_vault, "Lea: I think that was a nice play!", session="day1").status == "duplicate"


@pytest.mark.model
def test_a_question_asked_again_in_other_words_is_kept(model_vault: Vault) -> None:
    assert add(model_vault, "Lea: any other tips?", session="day1").status == "created"
    assert add(model_vault, "Lea: do you have any tips?", session="day4").status == "created"


@pytest.mark.model
def test_the_weekend_said_again_on_another_day_is_kept(model_vault: Vault) -> None:
    assert add(model_vault, "Lea: But at least it's almost the weekend", session="day1").status == "created"
    assert add(model_vault, "Lea: At least it's the weekend", session="day8").status == "created"


@pytest.mark.model
def test_consolidation_hides_no_turn_pointing_at_something_else(model_vault: Vault) -> None:
    write(model_vault, "first", "Lea: I think that was a really nice and clever play", 0)
    write(model_vault, "second", "Lea: I think that was a nice play", 5)
    write(model_vault, "other", "Max: The shelter closes at six on weekdays.", 2)
    model_vault.reindex()
    assert not grouped(model_vault, "first", "second")
    assert carries.stays_apart("Lea: I think that was a really nice and clever play",
                               "Lea: I think that was a nice play") == "pointer"


# --- a typographic apostrophe ------------------------------------------------


def test_a_typographic_apostrophe_reads_as_the_ascii_one() -> None:
    from memex.text import content_tokens, tokens

    assert tokens("I’ve been to Lisbon") == tokens("I've been to Lisbon") == ["i've", "been", "to", "lisbon"]
    assert content_tokens("Lea: I’ve been") == content_tokens("Lea: I've been")
    assert subject.wording("Lea: I’ve been to Lisbon twice") == subject.wording("Lea: I've been to Lisbon twice")
    # Not a word the turn adds.
    assert subject.keeps_apart("Lea: I've been to Lisbon twice", "Lea: I’ve been to Lisbon twice") is None


@pytest.mark.model
def test_the_same_turn_typed_with_a_typographic_apostrophe_is_a_duplicate(model_vault: Vault) -> None:
    assert add(model_vault, "Lea: I've been to Lisbon twice", session="day1").status == "created"
    assert add(model_vault, "Lea: I’ve been to Lisbon twice", session="day2").status == "duplicate"
