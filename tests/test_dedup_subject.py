"""Captured conversations lose no statement that says something new
(docs/write-path.md, "Real conversations"; memex/dedup/subject.py).

The texts are written here in the shape of the failures found on real
conversations (no benchmark text): each of the real-model tests failed
before the subject- and information-aware checks.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from memex.consolidation.consolidate import consolidate
from memex.dedup import subject
from memex.vault import Vault


def write(vault: Vault, name: str, body: str, created: str, session: str = "chat") -> None:
    """A captured turn as a memory file (consolidation reads files)."""
    folder = vault.root / "memories" / "user"
    folder.mkdir(parents=True, exist_ok=True)
    meta: dict[str, Any] = {"session": session, "confidence": 0.8, "created": created}
    head = "".join(f"{k}: {json.dumps(v)}\n" for k, v in meta.items())
    (folder / f"{name}.md").write_text(f"---\nid: {name}\n{head}---\n{body}\n", encoding="utf-8")


def groups_of(vault: Vault, session: str) -> set[frozenset[str]]:
    report = consolidate(vault, session)
    return {frozenset([g.representative, *g.superseded]) for g in report.groups}


# --- dedup, real model -------------------------------------------------------


@pytest.mark.model
def test_another_speakers_statement_on_the_same_topic_is_kept(model_vault: Vault) -> None:
    # One recommends a tour, the other has taken it (cosine 0.87): the fact
    # that Emi has been there was dropped as a duplicate of Elise's advice.
    advice = model_vault.add(
        "Elise: A lot of people take a helicopter tour over the Grand Teton, the views are breathtaking.",
        scope="user", source="import", session="chat-1",
    )
    been = model_vault.add(
        "Emi: Oh, I've taken a helicopter tour over the Grand Teton, the views are breathtaking!",
        scope="user", source="import", session="chat-2",
    )
    assert been.status == "created"
    similar = {f.id: f for f in been.similar_facts}
    # Listed as similar, but not as an older value of this one.
    assert advice.id in similar and similar[advice.id].suggestion is None


@pytest.mark.model
def test_an_answer_is_not_a_duplicate_of_its_question(model_vault: Vault) -> None:
    # Same session, cosine 0.88: the answer (what the drawing means) was
    # dropped against the question that asked it.
    model_vault.add("Lena: That's so cool, Noor! You drew this yourself? What does it mean to you?",
                    scope="user", source="import", session="chat")
    answer = model_vault.add("Noor: Thanks, Lena! Yes, I drew it myself. To me it means freedom and being true to who I am.",
                             scope="user", source="import", session="chat")
    assert answer.status == "created"


@pytest.mark.model
def test_a_turn_that_adds_a_date_and_a_companion_is_kept_and_may_supersede(model_vault: Vault) -> None:
    first = model_vault.add("Sam: I went to the climbing gym and it was so much fun.", scope="user", source="import",
                            session="chat")
    more = model_vault.add("Sam: I went to the climbing gym yesterday with my sister and it was so much fun.",
                           scope="user", source="import", session="chat")
    assert more.status == "created"
    assert [(f.id, f.suggestion) for f in more.similar_facts if f.id == first.id] == [(first.id, "supersede")]


@pytest.mark.model
def test_the_same_speaker_repeating_thanks_is_still_a_duplicate(model_vault: Vault) -> None:
    first = model_vault.add("Ana: Thanks, Ben! Your support means a lot to me.", scope="user", source="import",
                            session="chat-1")
    again = model_vault.add("Ana: Thanks, Ben. I really appreciate your support.", scope="user", source="import",
                            session="chat-2")
    assert (again.status, again.existing_id) == ("duplicate", first.id)
    bye = model_vault.add("Ana: Take care, bye!", scope="user", source="import", session="chat-1")
    assert model_vault.add("Ana: Bye for now, take care!", scope="user", source="import",
                           session="chat-3").existing_id == bye.id


@pytest.mark.model
@pytest.mark.parametrize(("session", "status"), [("chat", "duplicate"), ("chat-2", "created")])
def test_a_restatement_in_the_same_session_is_a_duplicate_below_the_cross_session_bar(
    model_vault: Vault, session: str, status: str
) -> None:
    # Cosine 0.82, Jaccard 0.50: the same speaker taking leave twice in one
    # session says nothing new (the session bar is 0.70); in another session
    # the pair stays below the 0.85 bar and both are stored.
    first = model_vault.add("Ravi: Thanks, Lou! It was great catching up, talk soon!", scope="user", source="import",
                            session="chat")
    again = model_vault.add("Ravi: Thanks, Lou! Talk to you later.", scope="user", source="import", session=session)
    assert again.status == status
    if status == "duplicate":
        assert (again.method, again.existing_id) == ("session_cosine", first.id)
    else:
        assert first.id in {f.id for f in again.similar_facts}


# --- consolidation, real model -----------------------------------------------


@pytest.mark.model
def test_consolidation_does_not_hide_a_greeting_behind_another_statement(model_vault: Vault) -> None:
    write(model_vault, "hello", "Priya: Hey Tom! Good to see you! How have you been?", "2026-11-30T10:00:00Z")
    write(model_vault, "later", "Priya: Totally, Tom. Relaxing and being creative is key for us. Well, I'm off to go do "
                                "some research.", "2026-11-30T10:09:00Z")
    write(model_vault, "other", "Tom: The bakery on the corner closes at six on weekdays.", "2026-11-30T10:05:00Z")
    model_vault.reindex()
    groups = groups_of(model_vault, "chat")
    assert not any({"hello", "later"} <= g for g in groups)
    assert model_vault.get("hello").status == "active"


@pytest.mark.model
def test_consolidation_keeps_the_turn_that_says_when(model_vault: Vault) -> None:
    # The only turn that says when she went was hidden behind one that
    # does not say it (and a question about the date needs exactly it).
    write(model_vault, "went", "Priya: I went to a grief support group yesterday and it was so powerful.",
          "2026-11-30T10:00:00Z")
    write(model_vault, "stories", "Priya: The stories there were so inspiring! I was so happy and thankful for all the "
                                  "support.", "2026-11-30T10:02:00Z")
    write(model_vault, "felt", "Priya: The support group has made me feel accepted and given me courage to open up.",
          "2026-11-30T10:04:00Z")
    model_vault.reindex()
    groups_of(model_vault, "chat")
    assert model_vault.get("went").status == "active"
    assert model_vault.get("stories").status == "active"


@pytest.mark.model
def test_consolidation_never_hides_one_speaker_behind_another(model_vault: Vault) -> None:
    write(model_vault, "tom", "Tom: Wow, love that drawing! So cool you found such a helpful group. What's it done for "
                              "you?", "2026-11-30T10:00:00Z")
    write(model_vault, "priya", "Priya: Wow, Tom! The colors really blend nicely. Drawing looks like a great outlet for "
                                "expressing yourself.", "2026-11-30T10:03:00Z")
    write(model_vault, "other", "Tom: The bakery on the corner closes at six on weekdays.", "2026-11-30T10:05:00Z")
    model_vault.reindex()
    groups = groups_of(model_vault, "chat")
    assert not any({"tom", "priya"} <= g for g in groups)
    assert model_vault.get("tom").status == "active" and model_vault.get("priya").status == "active"


# --- the checks themselves (no model) ----------------------------------------


def test_a_speaker_prefix_names_who_speaks_a_label_does_not() -> None:
    assert subject.speaker("Emi: I've been there") == "emi"
    assert subject.speaker("孙浩：我去过") == "孙浩"
    assert subject.speaker("Note: use tabs") is None and subject.speaker("Decision: Postgres") is None
    assert subject.speaker("ATL-2211: fix the build") is None and subject.speaker("use tabs") is None
    assert subject.body("Emi: I've been there") == "I've been there"


@pytest.mark.parametrize(
    ("kept", "cand", "reason"),
    [
        ("Elise: the tour is great", "Emi: the tour is great", "speaker"),
        ("I painted the fence", "You painted the fence", "person"),
        ("I moved to Lisbon", "Marta moved to Lisbon", "person"),
        ("You drew it? What does it mean?", "I drew it. It means freedom.", "person"),
        ("Did she draw it? What does it mean?", "She drew it. It means freedom.", "question"),
        ("The band played jazz.", "Did you see the band?", "question"),
        ("What pet do you have?", "What are their names?", "question"),
        ("I went to the gym", "I went to the gym yesterday", "adds"),
        ("We deploy on Fridays", "We deploy on Fridays because traffic is low", "adds"),
        ("Thanks, Evan! Your support means a lot.", "Thanks for always being there, Evan.", "adds"),
    ],
)
def test_what_keeps_two_statements_apart(kept: str, cand: str, reason: str) -> None:
    assert subject.keeps_apart(kept, cand) == reason


@pytest.mark.parametrize(
    ("kept", "cand"),
    [
        ("Ana: Thanks, Ben! Your support means a lot to me.", "Ana: Thanks, Ben. I really appreciate it."),
        ("Ana: Hey Ben! Good to see you! How have you been?", "Ana: Hey Ben! What's up? Anything new?"),
        ("Run the test suite with pytest before every commit.", "Run the whole test suite with pytest before every "
                                                                "single commit!"),
        ("I went to the gym yesterday with my sister", "I went to the gym"),  # says less: nothing lost
        ("Never commit API keys to the repository", "API keys must never be committed to the repo"),
        ("The staging server is at staging.example.com.", "The staging server is at staging.example.com."),
    ],
)
def test_what_says_nothing_new_is_covered(kept: str, cand: str) -> None:
    assert subject.keeps_apart(kept, cand) is None and subject.covers(kept, cand)


def test_cjk_text_is_left_to_the_other_layers() -> None:
    assert subject.keeps_apart("部署在东京", "部署在新加坡，因为延迟更低") is None


def test_an_agent_restating_a_capture_in_its_own_words_is_an_echo() -> None:
    hook = "I want all API handlers to return problem+json errors with a trace id"
    agent = "User wants API handlers to return errors as problem+json including trace id field"
    assert subject.restates(hook, agent)
    assert not subject.restates("Sam: I went to the gym", "Ana: I went to the gym")
    assert not subject.restates("We deploy on Fridays", "We deploy on Fridays from the release branch after the "
                                                        "smoke tests pass")


def test_labelled_real_pairs_are_keyed_by_turn_ids_only() -> None:
    # LoCoMo is CC BY-NC 4.0: its text never enters the repository; the
    # labels name turns by conversation and dialogue id.
    path = Path(__file__).resolve().parent.parent / "scripts" / "data" / "locomo_labels.jsonl"
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    assert len(rows) > 1000
    allowed = {"conversation", "a", "b", "label", "why", "by"}
    assert all(set(r) <= allowed and r["label"] in ("same", "a_covers", "b_covers", "different") for r in rows)
    assert all(len(r["why"]) <= 40 for r in rows)
