"""The rare-word prior (memex/search/rarity.py; docs/search.md, "Rare words"):
the store's document counts, the factor, and search ranking an answer above a
turn that only echoes the question."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

import pytest

from memex.erase.steps import erase
from memex.search import fusion
from memex.search.fusion import DEFAULT_FUSION, MULTILINGUAL_FUSION, Fusion, apply_priors
from memex.search.rarity import FULL_STRENGTH_AT, Rarity, rarity_for
from memex.store.terms import TermCounts
from memex.vault import Vault

RULE = Fusion("blend", 0.7, "sat", rare_penalty=0.9, rare_floor=0.8)


def counts_from(table: dict[str, int], total: int) -> tuple[list[list[str]], object]:
    asked: list[list[str]] = []

    def counts_of(words: Sequence[str]) -> TermCounts:
        asked.append(list(words))
        return TermCounts({w: table.get(w, 0) for w in words}, total)

    return asked, counts_of


@pytest.mark.both_backends
def test_term_counts_are_the_memories_holding_a_word_as_full_text_stems_it(vault: Vault) -> None:
    vault.add("I spent the whole weekend bouldering again.", scope="project:a")
    gone = vault.add("The bouldering gym opens late on Fridays.", scope="project:b")
    vault.add("We deploy on Tuesdays after the standup.", scope="project:c")
    found = vault.store.term_counts(["bouldering", "boulder", "deploy", "fridays", "xylophone", "node.js"])
    assert found.total == 3
    assert found.counts == {"bouldering": 2, "boulder": 2, "deploy": 1, "fridays": 1, "xylophone": 0, "node.js": 0}
    erase(vault, gone.id, reason="test")
    found = vault.store.term_counts(["bouldering", "fridays"])
    assert found == TermCounts({"bouldering": 1, "fridays": 0}, 2)
    assert vault.store.term_counts([]) == TermCounts({}, 2)
    # Counts kept by this connection follow another connection's write (memex/store/terms.py).
    with Vault(vault.root, embedder=vault.embedder) as other:
        other.add("Bouldering again on Friday night.", scope="project:d")
    assert vault.store.term_counts(["bouldering", "fridays", "night"]) == TermCounts(
        {"bouldering": 2, "fridays": 1, "night": 1}, 3)


def test_a_memory_that_adds_only_common_words_loses() -> None:
    common = {"tomás": 300, "lena": 250, "still": 400, "need": 500, "talk": 300, "let's": 450, "park": 200,
              "language": 20, "kestrel": 1, "swift": 2, "codebase": 3, "feeds": 9}
    asked, counts_of = counts_from(common, 1000)
    rarity = Rarity("Which language did Kestrel use?", RULE, counts_of)
    factors = rarity.factors({
        1: "Tomás: We still need to talk about language for Kestrel, let's park it for now.",
        2: "Lena: Kestrel is a Swift codebase that pulls in partner feeds.",
    })
    # The echo's new words are all common: log(1000/200) / log(1000) = 0.233 -> 1 - 0.9 * (0.8 - 0.233) / 0.8
    assert factors[1] == pytest.approx(1 - 0.9 * (0.8 - 0.2330) / 0.8, abs=1e-3)
    # "partner" and "pulls" are held by no memory here (0): the rarest possible, so nothing lost.
    assert factors[2] == 1.0
    # The query's own words are never new: "kestrel" (held by 1) does not save the echo.
    assert "kestrel" not in rarity.new_words("Kestrel, let's talk")
    # A memory the query holds whole is what was asked for, not an echo.
    assert rarity.factors({4: "Which language? Kestrel."}) == {4: 1.0}
    # Counts are read once per word.
    rarity.factors({3: "Lena: Kestrel is a Swift codebase."})
    assert sorted(w for batch in asked for w in batch) == sorted(set(w for batch in asked for w in batch))


def test_a_word_no_other_memory_holds_is_rare_in_a_vault_of_any_size() -> None:
    """Counted with this memory itself (n >= 1), so a vault of two memories
    does not lower a memory for its own words; a vault of one lowers nothing."""
    body = {1: "Deploys go through the staging cluster first"}
    for total in (2, 3, 10_000):
        _asked, counts_of = counts_from({"go": 1, "first": 1}, total)
        assert Rarity("How do deploys reach the staging cluster?", RULE, counts_of).factors(body) == {1: 1.0}
    _asked, counts_of = counts_from({"go": 2, "first": 2}, 2)
    # Both words in both memories: as common as can be, but two memories say little (strength ln 2 / ln 100).
    strength = math.log(2) / math.log(FULL_STRENGTH_AT)
    assert Rarity("How do deploys reach the staging cluster?", RULE, counts_of).factors(body)[1] == pytest.approx(
        1 - 0.9 * strength)
    _asked, counts_of = counts_from({"go": 1, "first": 1}, 1)
    assert Rarity("How do deploys reach the staging cluster?", RULE, counts_of).factors(body) == {1: 1.0}


def test_the_factor_is_graded_and_only_lowers() -> None:
    assert RULE.rarity_factor(0.8) == 1.0 and RULE.rarity_factor(1.0) == 1.0
    assert RULE.rarity_factor(0.4) == pytest.approx(0.55)
    assert RULE.rarity_factor(0.0) == pytest.approx(0.1)
    assert Fusion("blend").rarity_factor(0.0) == 1.0


def test_the_prior_is_off_for_bare_keywords_and_rules_without_it() -> None:
    _asked, counts_of = counts_from({}, 10)
    assert rarity_for("helm chart atlas", RULE, counts_of) is None
    assert rarity_for("Which chart deploys Atlas?", Fusion("blend"), counts_of) is None
    assert rarity_for("Which chart deploys Atlas?", RULE, counts_of) is not None


def test_minilm_has_the_prior_and_the_multilingual_rule_does_not() -> None:
    """Measured per model (docs/search.md): it pays with MiniLM, not with multilingual-e5."""
    assert DEFAULT_FUSION.rare_penalty > 0
    assert MULTILINGUAL_FUSION.rare_penalty == 0


def test_the_lazy_walk_applies_the_prior_as_the_full_pass_does() -> None:
    bodies = {1: "ok let's talk later", 2: "Kestrel is written in Swift", 3: "let's talk about Kestrel later",
              4: "talk later", 5: "Swift is fine"}
    common = {"let's": 800, "talk": 900, "later": 900, "ok": 900, "written": 200, "swift": 1, "fine": 300}
    scores = {1: 0.9, 2: 0.5, 3: 0.8, 4: 0.7, 5: 0.2}
    _asked, counts_of = counts_from(common, 1000)
    lazy = apply_priors(scores, RULE, lambda rowids: {r: bodies[r] for r in rowids}, keep=2, batch=1,
                        rarity=Rarity("What is Kestrel written in?", RULE, counts_of))
    full = Rarity("What is Kestrel written in?", RULE, counts_of).factors(bodies)
    exact = {r: s * full[r] for r, s in scores.items()}
    # Without the prior the top two were 1 and 3 (small talk); with it, the turns holding "swift".
    assert sorted(lazy, key=lambda r: -lazy[r])[:2] == sorted(exact, key=lambda r: -exact[r])[:2] == [2, 5]


@pytest.mark.both_backends
def test_search_ranks_the_answer_above_a_turn_that_echoes_the_question(
    vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Everyday turns, each unlike the others, that make the echo's other words common in this vault.
    # A vault past FULL_STRENGTH_AT memories: below it the counts say little and the prior is weaker.
    talk = ("Maya: I still need coffee before the standup.", "Jonas: Let's talk after lunch.",
            "Priya: We need to park the car first.", "Aiko: Still raining here, let's wait.",
            "Ravi: Can we talk tomorrow instead?", "Maya: Park that thought, I need a minute.",
            "Jonas: Still on the train, talk soon.", "Priya: Let's park this until Monday.")
    for n in range(FULL_STRENGTH_AT):
        vault.add(f"{talk[n % len(talk)][:-1]}, ticket{n}.", scope=f"project:f{n}")
    echo = vault.add("Tomás: We still need to talk about the language for Kestrel, let's park it for now.",
                     scope="project:echo").id
    answer = vault.add("Lena: Kestrel is a Swift codebase from the partner feeds team.", scope="project:answer").id
    question = "Which language does Kestrel use?"
    ranked = [h.id for h in vault.search(question)]
    assert ranked.index(answer) < ranked.index(echo)
    # The same search with the rule minus the prior: the echo first (it holds two of the question's words).
    monkeypatch.setattr(fusion, "DEFAULT_FUSION", replace(DEFAULT_FUSION, rare_penalty=0.0))
    without = [h.id for h in vault.search(question)]
    assert without.index(echo) < without.index(answer)


def test_a_small_vault_trusts_its_counts_less() -> None:
    """Found from outside: in a vault of three memories about one editor, the exact
    answer to "does the user prefer dark mode" adds "editor" (held by all three),
    lost 90%, fell under the recall threshold, and an agent was shown nothing."""
    body = {1: "The user prefers dark mode in the editor"}
    question = "does the user prefer dark mode"
    factors = []
    for total in (3, 10, 50, FULL_STRENGTH_AT, 10_000):
        _asked, counts_of = counts_from({"editor": total, "prefers": total}, total)
        factors.append(Rarity(question, RULE, counts_of).factors(body)[1])
    assert factors[0] > 0.75  # at most ln 3 / ln 100 of the 90%
    assert factors == sorted(factors, reverse=True)  # the more memories, the more the counts are trusted
    assert factors[-2] == factors[-1] == pytest.approx(0.1)
