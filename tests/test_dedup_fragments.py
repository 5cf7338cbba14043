"""How people text: turns of one word of content, turns of signs only, a
bare "Morning!", questions without their question mark, "dang, that sucks",
and what happened "today" said again on another day (memex/dedup/subject.py,
memex/dedup/pipeline.py).

Chosen on REALTALK's choosing chats (docs/write-path.md, "Real
conversations"): people texting send pieces of a sentence ("Or like",
"So like"), a short remark after a longer one ("It's a cat!" after
"You should get her some good cat food"), an event said again on another
day ("Just woke up" after "I just woke up lol"), a lone emoji. Each such
piece says what it says through the turn it follows, not through its one
word, so a fuller turn that holds the word does not carry it; only the same
words do. The examples are written here, in the shape of the turns that
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
        ("Lea: Or like", "Lea: But like"),
        ("Lea: So like", "Lea: Like*"),
        ("Lea: I spent the whole weekend fixing the bike", "Lea: With the bike"),
        ("Lea: We could leave a bowl of water out for the dog", "Lea: It's a dog!"),
        ("Lea: I only just got up, ha", "Lea: Just got up"),
    ],
)
def test_a_turn_of_one_word_of_content_is_carried_only_by_the_same_words(kept: str, cand: str) -> None:
    assert subject.keeps_apart(kept, cand) == "fragment"
    assert subject.covers(cand, cand)  # the same words: the exact layer drops it


def test_the_same_words_in_other_case_and_signs_still_carry_a_fragment() -> None:
    assert subject.covers("Lea: so like", "Lea: So like...")


def test_a_turn_of_two_words_of_content_and_small_talk_are_read_as_before() -> None:
    assert subject.covers("Lea: I fixed the old bike chain yesterday", "Lea: Fixed the bike chain")
    # Thanks is small talk: a thanks of the speaker carries it, one word or not.
    assert subject.covers("Lea: Thanks for the tip, as always", "Lea: Thanks for the tip")


@pytest.mark.parametrize(("kept", "cand"), [("Lea: 😉", "Lea: 🙏"), ("Lea: *?", "Lea: 👍")])
def test_turns_of_signs_only_are_the_same_only_when_the_signs_are(kept: str, cand: str) -> None:
    assert subject.keeps_apart(kept, cand) == "reaction"
    assert subject.covers(kept, kept)


def test_a_bare_morning_greets() -> None:
    for text in ("Lea: Morning!", "Lea: 🌅 morning", "Lea: Good afternoon, how's your day?"):
        assert subject.acts(text) == {"greeting"}, text
    for text in ("Lea: I biked to work this morning", "Lea: Have a good evening!", "Lea: We had a good morning"):
        assert "greeting" not in subject.acts(text), text
    assert subject.covers("Lea: Good morning ☀️", "Lea: Morning!")


@pytest.mark.parametrize(
    "text",
    ["Lea: Do you ever go climbing", "Lea: oh nice which bakery do you go to", "Lea: Where can I park the van",
     "Lea: So what should I bring then"],
)
def test_a_question_without_its_question_mark_asks(text: str) -> None:
    assert subject.parts(text)[2]
    # Not carried by a statement with its words, nor carrying one.
    assert subject.keeps_apart("Lea: I go climbing every Sunday with my brother", text) is not None


@pytest.mark.parametrize("text", ["Lea: What a day", "Lea: What the heck", "Lea: What I like is the view.",
                                  "Lea: I do go climbing"])
def test_a_statement_or_a_cry_is_no_question(text: str) -> None:
    assert not subject.parts(text)[2]


@pytest.mark.parametrize(("kept", "cand"), [("Lea: Oh dang that sucks", "Lea: Dang that sucks"),
                                            ("Lea: Damn", "Lea: Oh that sucks")])
def test_sympathy_in_set_phrases_is_a_reaction(kept: str, cand: str) -> None:
    assert subject.keeps_apart(kept, cand) == "reaction"
    assert "suck" in subject.words("Lea: The new bus timetable sucks")


def test_a_statement_of_the_moment_is_told_apart_from_small_talk() -> None:
    assert subject.of_the_moment("Lea: It's freezing out today")
    assert subject.of_the_moment("Lea: I'm at the station right now")
    assert not subject.of_the_moment("Lea: Hi, how are you today?")  # greets
    assert not subject.of_the_moment("Lea: The station is freezing")


# --- the real model ----------------------------------------------------------


@pytest.mark.model
def test_two_pieces_of_sentences_are_both_kept(model_vault: Vault) -> None:
    assert add(model_vault, "Lea: Or like", session="day1").status == "created"
    assert add(model_vault, "Lea: But like", session="day5").status == "created"
    assert add(model_vault, "Lea: Just got up", session="day6").status == "created"
    assert add(model_vault, "Lea: I only just got up, ha", session="day7").status == "created"


@pytest.mark.model
def test_what_was_so_today_is_kept_when_said_again_on_another_day(model_vault: Vault) -> None:
    assert add(model_vault, "Lea: It's a really sunny day out today", session="day1").status == "created"
    assert add(model_vault, "Lea: It's a sunny day out today", session="day2").status == "created"
    # In the same session it is the same remark said again.
    assert add(model_vault, "Lea: It's a sunny day out today!", session="day2").status == "duplicate"


@pytest.mark.model
def test_consolidation_hides_no_question_behind_a_statement_with_its_words(model_vault: Vault) -> None:
    write(model_vault, "ask", "Lea: Do you play board games", 0)
    write(model_vault, "tell", "Lea: I play board games with my cousins every Friday night", 3)
    write(model_vault, "other", "Max: The shelter closes at six on weekdays.", 2)
    model_vault.reindex()
    assert not grouped(model_vault, "ask", "tell")


@pytest.mark.model
def test_consolidation_hides_no_one_word_remark_behind_a_turn_with_its_word(model_vault: Vault) -> None:
    write(model_vault, "food", "Lea: We could leave a bowl of water out for the dog", 0)
    write(model_vault, "dog", "Lea: It's a dog!", 4)
    write(model_vault, "other", "Max: The shelter closes at six on weekdays.", 2)
    model_vault.reindex()
    assert not grouped(model_vault, "food", "dog")
