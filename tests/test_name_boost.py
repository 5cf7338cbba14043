"""The proper-name bonus (docs/search.md): a memory that mentions the person
or project a question names outranks one that only carries the name as its speaker."""

from __future__ import annotations

from memex.search.fusion import DEFAULT_FUSION, MULTILINGUAL_FUSION, Fusion, add_name_bonus, name_share, query_names
from memex.vault import Vault


def test_query_names_are_capitalised_words_after_the_first() -> None:
    assert query_names("Which broker does whatever Tomás maintains use?") == {"tomás"}
    assert query_names("Last week, what did we land on for Quarry?") == {"quarry"}
    assert query_names("what is ATL-2211 about?") == {"atl", "2211"}
    assert query_names("where is the staging server?") == set()
    assert query_names("孙浩养了什么宠物？") == set()


def test_a_speaker_prefix_is_not_a_mention() -> None:
    names = {"tomás"}
    assert name_share(names, "Tomás: I need a holiday.", "mention") == 0.0
    assert name_share(names, "Tomás: I need a holiday.", "any") == 1.0
    assert name_share(names, "Aiko: Tomás is taking ownership of Quarry.", "mention") == 1.0
    assert name_share({"tomás", "quarry"}, "Aiko: Tomás is off today.", "mention") == 0.5
    assert name_share({"孙浩"}, "赵敏：孙浩今天请假。", "mention") == 0.0  # inside a CJK run a name is no whole token
    assert name_share({"atl", "2211"}, "ATL-2211: rounding of invoices", "mention") == 1.0


def test_the_bonus_is_added_only_where_the_query_names_something() -> None:
    rule = Fusion("blend", 0.7, "sat", name_boost=0.2, name_mode="mention")
    bodies = {1: "Aiko: Tomás owns Quarry.", 2: "Tomás: lunch?", 3: "Aiko: nothing here."}
    scores = {1: 0.5, 2: 0.5, 3: 0.5}
    boosted = add_name_bonus(scores, "What does Tomás own?", rule, lambda rowids: bodies)
    assert boosted == {1: 0.7, 2: 0.5, 3: 0.5}
    assert add_name_bonus(scores, "what does he own?", rule, lambda rowids: bodies) == scores
    assert add_name_bonus(scores, "What does Tomás own?", Fusion("blend"), lambda rowids: bodies) == scores


def test_both_models_rules_carry_the_bonus() -> None:
    assert DEFAULT_FUSION.name_boost > 0 and DEFAULT_FUSION.name_mode == "mention"
    assert MULTILINGUAL_FUSION.name_boost > 0 and MULTILINGUAL_FUSION.name_mode == "mention"


def test_search_puts_the_turn_that_mentions_the_person_first(vault: Vault) -> None:
    # Same words, so BM25 and the embedder tie; the older memory wins a tie
    # on its id, so without the bonus the speaker turn came first. (Two
    # scopes: within one, dedup would take the second for the first.)
    speaker = vault.add("Tomás: Aiko is taking ownership of Quarry from now on.", scope="project:a").id
    mention = vault.add("Aiko: Tomás is taking ownership of Quarry from now on.", scope="project:b").id
    hits = vault.search("Which service does Tomás maintain now?")
    assert [h.id for h in hits[:2]] == [mention, speaker]
    assert hits[0].score > hits[1].score
    hits = vault.search("Which service does Aiko maintain now?")
    assert [h.id for h in hits[:2]] == [speaker, mention]
