"""Replies that ask or react in no words of content (memex/dedup/subject.py).

Chosen on Topical-Chat's third choosing block (docs/write-path.md, "Real
conversations"): two bare questions back ("what was that?") after two
different "did you hear about ...?" ask about two different things, the
turns they answer; two cries of surprise ("are you serious?") react to two
different facts; "makes sense, I guess" agrees with the turn before it.
Each answers the turn before it, so (like "True!" or "You too.") no other
turn carries it, only the same words. The examples are written here, in
the shape of the turns that went wrong.
"""

from __future__ import annotations

import pytest

from memex.dedup import subject
from memex.vault import Vault
from tests.chat_helpers import add, grouped, write


# --- the checks themselves (no model) ----------------------------------------


@pytest.mark.parametrize(
    ("kept", "cand"),
    [
        ("Ana: I have not. What is that?", "Ana: Nope, for what?"),
        ("Ana: No, what's with that?", "Ana: No, what was that?"),
        ("Ana: Nope. Who is he?", "Ana: Really? Who was he?"),
    ],
)
def test_a_question_in_question_words_only_is_carried_by_no_other_turn(kept: str, cand: str) -> None:
    assert subject.keeps_apart(kept, cand) == "reaction"
    assert subject.keeps_apart(cand, kept) == "reaction"
    assert subject.covers(cand, cand)  # the same words: the exact layer drops it


def test_a_question_with_a_word_of_content_is_read_as_before() -> None:
    # "Where is the stadium?" asks about something named: not a reaction.
    assert subject.keeps_apart("Ana: Where is the stadium?", "Ana: So where is the stadium?") is None
    assert subject.keeps_apart("Ana: What is it?", "Ana: What is the stadium called?") == "question"


@pytest.mark.parametrize(
    ("kept", "cand"),
    [
        ("Ana: Wow, are you serious? That sounds wrong", "Ana: Nah, serious?"),
        ("Ana: Seriously? No way!", "Ana: Are you serious?"),
        ("Ana: Yeah, I guess that makes sense, I wonder when they began.", "Ana: I guess it makes sense"),
    ],
)
def test_surprise_and_agreement_in_set_phrases_are_reactions(kept: str, cand: str) -> None:
    assert subject.keeps_apart(kept, cand) in ("reaction", "answer")
    assert not subject.covers(kept, cand)


def test_a_hedge_frames_a_statement_and_is_no_word_of_its_own() -> None:
    # "I guess" and "it makes sense" say nothing about anyone: the two
    # reasons are what the turns say, and they differ.
    capture = "Well I guess it makes sense since trams were not that common back then"
    assert not subject.restates(capture, "Yeah I guess it makes sense since they have longer routes as well")
    assert subject.covers("Ana: I guess the trams were slow back then.", "Ana: The trams were slow back then.")


# --- the real model ----------------------------------------------------------


@pytest.mark.model
def test_two_bare_questions_answering_two_turns_are_both_kept(model_vault: Vault) -> None:
    first = add(model_vault, "Ana: No, what's with that?")
    second = add(model_vault, "Ana: No, what was that?")
    assert first.status == "created" and second.status == "created"
    assert add(model_vault, "Ana: No, what was that?").status == "duplicate"


@pytest.mark.model
def test_consolidation_hides_no_surprise_or_agreement_behind_a_fuller_turn(model_vault: Vault) -> None:
    write(model_vault, "serious", "Ana: No, serious?", 0)
    write(model_vault, "omg", "Ana: Wow, are you serious? That can't be right", 9)
    write(model_vault, "sense", "Ana: I guess it makes sense", 2)
    write(model_vault, "wonder", "Ana: yeah, I guess that makes sense, I wonder when they began doing it.", 5)
    write(model_vault, "other", "Ben: The stadium holds about seventy thousand people.", 3)
    model_vault.reindex()
    assert not grouped(model_vault, "serious", "omg")
    assert not grouped(model_vault, "sense", "wonder")
