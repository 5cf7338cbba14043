"""Short answers and short restatements in captured conversations
(memex/dedup/subject.py), decided on Topical-Chat's second choosing block
(docs/write-path.md, "Real conversations"):

- a turn that opens with a yes or a no and says a word or two more
  ("Yes, and Lee too") answers the turn before it, as a reaction does: a
  statement that answers nothing does not carry it;
- the turn-echo guard lets a turn of fewer than four content words through
  when it brings a new one ("I like golf" after "I like tennis"): so short
  a turn has no framing to restate with.

The examples are written here, in the shape of the turns that went wrong.
"""

from __future__ import annotations

import pytest

from memex.dedup import subject
from memex.vault import Vault
from tests.chat_helpers import add


# --- the checks themselves (no model) ----------------------------------------


@pytest.mark.parametrize(
    ("kept", "cand"),
    [
        ("Ana: I follow a few players, Lee Jones among them", "Ana: Yes and Lee Jones"),
        ("Ana: The stadium is far from the city", "Ana: No, far from the city"),
        ("Ana: Yes, the stadium is far", "Ana: No, the stadium"),
    ],
)
def test_a_short_yes_or_no_is_carried_only_by_the_same_answer(kept: str, cand: str) -> None:
    assert subject.keeps_apart(kept, cand) == "answer"
    assert not subject.covers(kept, cand)


def test_a_short_answer_still_has_its_duplicates_and_a_long_one_is_read_as_before() -> None:
    assert subject.short_answer("Ana: Yeah, Lee Jones") == "yes"
    assert subject.covers("Ana: Yes, I saw Lee Jones play", "Ana: Yeah, Lee Jones")
    # Three words of content or more: the answer is no longer most of it.
    assert subject.short_answer("Ana: Yes, Lee Jones played in Lisbon") is None
    assert subject.covers("Ana: Lee Jones played in Lisbon last spring", "Ana: Yes, Lee Jones played in Lisbon")
    # A question is not an answer.
    assert subject.short_answer("Ana: Yes, and Lee Jones?") is None
    # Nor is taking leave after a yes: one farewell still carries the other.
    assert subject.short_answer("Ana: Yeah. Anyway, thanks for your time! Nice chatting with you!") is None
    assert subject.covers("Ana: Agreed. Thanks for your time! It was nice chatting with you.",
                          "Ana: Yeah. Anyway, thanks for your time! It was nice chatting with you!")


@pytest.mark.parametrize(
    ("capture", "cand"),
    [
        ("Hi, yes I like tennis. What about you?", "Oh nice. Yes, I like golf. What about you?"),
        ("I like him as a player", "I dislike him as a coach"),
    ],
)
def test_a_short_turn_with_a_new_word_is_no_restatement(capture: str, cand: str) -> None:
    assert not subject.restates(capture, cand)


def test_thanks_with_a_new_word_is_still_a_restatement_of_the_same_thanks() -> None:
    # Small talk: the thanks is what it says; the words around it frame it.
    assert subject.restates("Ana: Thanks, Ben. I'll keep you posted!",
                            "Ana: Thanks, Ben. I'll keep you posted on my progress!")


def test_a_longer_restatement_with_a_framing_word_is_still_one() -> None:
    assert subject.restates("Deploy the api service to staging before the release review",
                            "User wants to deploy the api service to staging before the release review")


# --- the real model ----------------------------------------------------------


@pytest.mark.model
def test_a_short_answer_is_not_dropped_against_a_statement_of_the_same_speaker(model_vault: Vault) -> None:
    first = add(model_vault, "Ana: Him among some others like Lee Jones")
    answer = add(model_vault, "Ana: Yes and Lee Jones")
    assert first.status == "created" and answer.status == "created"


@pytest.mark.model
def test_the_echo_guard_lets_a_short_turn_with_a_new_word_through(model_vault: Vault) -> None:
    add(model_vault, "Hi, yes I like tennis. What about you?", source="user")
    assert add(model_vault, "Oh nice. Yes, I like golf. What about you?", source="agent").status == "created"
