"""Small talk in captured conversations: what a reaction, a farewell or a
question says, and what may stand for it (memex/dedup/subject.py).

Decided on the choosing halves of the real conversations (LoCoMo and the
Topical-Chat set, docs/write-path.md "Real conversations"): a turn with no
word of content and no greeting, thanks, offer or farewell in it ("True!",
"You too.", "Good for them!", "for sure!") reacts to the turn before it, so
no other turn carries it; a question is carried only by one that asks no
more; taking leave by how the talk was ("Good talking to you!") is a
farewell. The examples are written here, in the shape of the turns that
went wrong.
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
        ("Ana: Haha, that is hilarious! What a thing to do!", "Ana: You too!"),
        ("Ana: That is true. In Lisbon they call it futebol.", "Ana: True!"),
        ("Ana: Maybe it is some kind of strategy.", "Ana: Good for them!"),
        ("Ana: You too, I learned a lot about trains today.", "Ana: You too."),
        ("Ana: Hi, how are you?", "Ana: for sure!"),
        ("Ana: I do not either.", "Ana: Of course not"),
    ],
)
def test_a_reaction_in_no_words_of_content_is_carried_by_no_other_turn(kept: str, cand: str) -> None:
    assert subject.keeps_apart(kept, cand) == "reaction"
    assert not subject.covers(kept, cand)
    assert not subject.restates(kept.replace("Ana: ", ""), cand.replace("Ana: ", ""))
    assert subject.covers(cand, cand)  # the same words: the exact layer drops it


@pytest.mark.parametrize(
    "farewell",
    ["Ana: Good talking to you!", "Ana: It was great chatting with you.", "Ana: Thanks for the chat!",
     "Ana: Enjoy the rest of your day.", "Ana: Same here, good night.", "Ana: Cheers"],
)
def test_taking_leave_by_how_the_talk_was_is_a_farewell(farewell: str) -> None:
    assert "farewell" in subject.acts(farewell)
    assert subject.keeps_apart("Ana: I do. What about you?", farewell) is not None
    # ... and one farewell still stands for another of the same speaker.
    assert subject.covers("Ana: Thanks! Nice chatting with you! Have a good one!", farewell)


def test_a_question_is_not_carried_by_one_that_asks_more() -> None:
    broad, narrow = "Ana: Sure, do you have a favorite team?", "Ana: Yes! Do you have a favorite college football team?"
    assert subject.keeps_apart(narrow, broad) == "question"
    assert subject.keeps_apart(broad, narrow) == "question"
    # The same question in other words is still one question.
    assert subject.covers("Ana: Wow! What inspired you to paint it?", "Ana: What inspired you to paint it?")


def test_thanks_and_farewells_keep_their_duplicates() -> None:
    assert subject.covers("Ana: Thanks, Ben! Your support means a lot. I really appreciate it.",
                          "Ana: Thanks, Ben. I really appreciate it.")
    assert subject.covers("Ana: Have a good one!", "Ana: see ya")
    assert subject.covers("Ana: Thanks, Ben! Your help is appreciated. Let me know if anyone can join.",
                          "Ana: Thanks, Ben. I definitely will!")


# --- the real model ----------------------------------------------------------


@pytest.mark.model
def test_a_farewell_is_not_dropped_against_a_question_of_the_same_speaker(model_vault: Vault) -> None:
    asked = add(model_vault, "Ana: I do. What about you?")
    bye = add(model_vault, "Ana: Good talking to you!")
    assert asked.status == "created" and bye.status == "created"
    # A farewell again in the same session still says nothing new.
    again = add(model_vault, "Ana: It was good talking to you!")
    assert (again.status, again.existing_id) == ("duplicate", bye.id)


@pytest.mark.model
def test_a_reaction_is_not_dropped_against_another_reaction(model_vault: Vault) -> None:
    add(model_vault, "Ben: Ha, that's hilarious! What a brilliant prank!")
    assert add(model_vault, "Ben: You too!").status == "created"
    add(model_vault, "Ann: Agreed, enjoy your day! Great chat!")
    assert add(model_vault, "Ann: haha, that one was good!").status == "created"


@pytest.mark.model
def test_consolidation_hides_no_reaction_or_farewell_behind_another_turn(model_vault: Vault) -> None:
    write(model_vault, "not", "Ben: Of course not", 0)
    write(model_vault, "bye", "Ben: Same here, this was fun. Take care, goodbye", 9)
    write(model_vault, "sure", "Ann: for sure!", 2)
    write(model_vault, "hard", "Ann: Maybe he is a little, but he trains hard for it!", 4)
    write(model_vault, "one", "Ben: Have a good one!", 10)
    write(model_vault, "later", "Ben: see ya", 11)
    model_vault.reindex()
    assert not grouped(model_vault, "not", "bye")
    assert not grouped(model_vault, "sure", "hard")
    assert all(model_vault.get(n).status == "active" for n in ("not", "bye", "sure", "hard"))


@pytest.mark.model
def test_consolidation_keeps_a_broader_question_beside_a_narrower_one(model_vault: Vault) -> None:
    write(model_vault, "team", "Ben: I agree haha, do you have a favorite team?", 0)
    write(model_vault, "college", "Ben: Sure. Do you have a favorite college football team?", 6)
    write(model_vault, "other", "Ann: The stadium holds about seventy thousand people.", 3)
    model_vault.reindex()
    assert not grouped(model_vault, "team", "college")
