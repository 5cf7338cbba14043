"""Search plumbing: filters, limit, the rule's arithmetic, ranking's facts (fake embedder)."""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import replace

import pytest

from memex.embedding import embed
from memex.search import hybrid as search_mod
from memex.errors import InvalidArgument
from memex.search.hybrid import Filters, Fusion, fuse, fusion_for, rank
from memex.store.facts import Facts
from memex.store.sqlite.filters import where as sqlite_where
from memex.vault import Vault
from memex.meta_edit import update_meta

# Run on the SQLite and on the PostgreSQL index (docs/postgres.md).
pytestmark = pytest.mark.both_backends


@pytest.fixture
def filled(vault: Vault) -> dict[str, str]:
    """A few memories about deploys across scopes, sources and sessions."""
    ids = {}
    for key, text, scope, source, session in (
        ("user", "Deploy on Tuesdays after the standup", "user", "user", "s1"),
        ("atlas", "Deploy Atlas with the helm chart in deploy/", "project:atlas", "claude-code", "s1"),
        ("memex", "Deploy memex by tagging a release on main", "project:memex", "codex", "s2"),
        ("agent", "Deploy notes kept by the review agent", "agent:reviewer", "tool", "s3"),
    ):
        ids[key] = vault.add(text, scope=scope, source=source, session=session).id
    return ids


def _ids(hits: list[search_mod.Hit]) -> set[str]:
    return {h.id for h in hits}


def test_no_filter_finds_all(vault: Vault, filled: dict[str, str]) -> None:
    assert _ids(vault.search("deploy")) == set(filled.values())


def test_one_scope(vault: Vault, filled: dict[str, str]) -> None:
    hits = vault.search("deploy", scope="project:atlas")
    assert _ids(hits) == {filled["atlas"]}
    assert hits[0].scope == "project:atlas"


def test_several_scopes(vault: Vault, filled: dict[str, str]) -> None:
    hits = vault.search("deploy", scope=["user", "project:memex"])
    assert _ids(hits) == {filled["user"], filled["memex"]}


def test_unknown_scope_finds_nothing(vault: Vault, filled: dict[str, str]) -> None:
    assert vault.search("deploy", scope="project:nope") == []


def test_source_filter(vault: Vault, filled: dict[str, str]) -> None:
    assert _ids(vault.search("deploy", source="codex")) == {filled["memex"]}


def test_session_filter(vault: Vault, filled: dict[str, str]) -> None:
    assert _ids(vault.search("deploy", session="s1")) == {filled["user"], filled["atlas"]}


def test_filters_combine(vault: Vault, filled: dict[str, str]) -> None:
    assert _ids(vault.search("deploy", session="s1", source="claude-code")) == {filled["atlas"]}
    assert vault.search("deploy", session="s2", scope="user") == []


def test_superseded_hidden_unless_asked(vault: Vault, filled: dict[str, str]) -> None:
    update_meta(vault, filled["user"], {"superseded_by": filled["memex"]})
    assert filled["user"] not in _ids(vault.search("deploy tuesdays standup"))
    shown = vault.search("deploy tuesdays standup", include_superseded=True)
    old = next(h for h in shown if h.id == filled["user"])
    assert old.status == "superseded"
    assert old.superseded_by == filled["memex"]


def test_a_superseded_memory_never_outranks_its_replacement(vault: Vault, filled: dict[str, str]) -> None:
    """The old memory matches the query best, yet its replacement comes first (docs/search.md)."""
    update_meta(vault, filled["user"], {"superseded_by": filled["memex"]})
    ids = [h.id for h in vault.search("deploy tuesdays standup", include_superseded=True)]
    assert filled["user"] in ids and filled["memex"] in ids
    assert ids.index(filled["memex"]) < ids.index(filled["user"])
    hits = {h.id: h for h in vault.search("deploy tuesdays standup", include_superseded=True)}
    assert hits[filled["memex"]].score > hits[filled["user"]].score


def test_limit(vault: Vault, filled: dict[str, str]) -> None:
    assert len(vault.search("deploy", limit=2)) == 2
    assert len(vault.search("deploy", limit=1)) == 1
    with pytest.raises(InvalidArgument):
        vault.search("deploy", limit=0)


def test_empty_query_is_an_error(vault: Vault) -> None:
    with pytest.raises(InvalidArgument, match="query"):
        vault.search("   ")


@pytest.mark.parametrize("query", ["?!", "...", "？！", " - ", "🚀"])
def test_a_query_without_words_is_an_error_and_recalls_nothing(
    vault: Vault, filled: dict[str, str], query: str
) -> None:
    """Found from outside: `memex search "?!"` answered with weak hits (the
    model's noise for a string of punctuation, over a memory ending in '?')."""
    from memex.agents import mcp_server

    vault.add("Really? the deploy moved again?!")
    with pytest.raises(InvalidArgument, match="query: has no words to search for"):
        vault.search(query, floor=False)
    with pytest.raises(InvalidArgument, match="has no words"):  # the MCP tool's answer is that error
        mcp_server.Tools(vault).memory_search(query=query)
    assert vault.recall(query) == []  # an agent's "?!" prompt: nothing to recall, not an error
    assert vault.search("deploy?!")  # words with punctuation still search


@pytest.mark.parametrize("name", ["session", "source"])
@pytest.mark.parametrize("value", ["", "  "])
def test_an_empty_session_or_source_filter_is_an_error(
    vault: Vault, filled: dict[str, str], name: str, value: str
) -> None:
    """Found from outside: `memex list --session ""` listed every memory (an
    empty filter read as no filter)."""
    with pytest.raises(InvalidArgument, match=f"{name}: must not be empty"):
        vault.list(**{name: value})
    with pytest.raises(InvalidArgument, match=f"{name}: must not be empty"):
        vault.search("deploy", **{name: value})


def test_results_are_best_first(vault: Vault, filled: dict[str, str]) -> None:
    hits = vault.search("helm chart atlas")
    assert hits[0].id == filled["atlas"]
    scores = [h.score for h in hits]
    assert scores == sorted(scores, reverse=True)


def test_narrow_scope_outside_the_nearest_neighbours_is_still_found(
    vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A scope whose memories are not among the k nearest overall still gets its vector hits."""
    monkeypatch.setattr(search_mod, "CANDIDATES", 4)
    for i in range(60):
        vault.add(f"Kubernetes cluster node pool number {i} runs the batch workers", scope="user")
    lonely = vault.add("Batch jobs of the billing service", scope="project:billing")
    hits = vault.search("kubernetes cluster node pool workers", scope="project:billing", limit=1)
    assert [h.id for h in hits] == [lonely.id]
    assert hits[0].semantic is not None  # scored by the vector side, not only BM25


def test_filters_sql_status_only_by_default() -> None:
    where, params = sqlite_where(Filters())
    assert where == "m.status = 'active'" and params == []
    assert not Filters().narrowing
    assert Filters(scopes=("user",)).narrowing


def test_the_blend_divides_bm25_by_the_best_and_weighs_the_cosine() -> None:
    lexical = {1: 10.0, 2: 5.0, 3: 2.5}
    semantic = {1: 0.2, 2: 0.8, 3: -0.5, 4: 0.6}
    blend = fuse(lexical, semantic, Fusion(0.5), use_vectors=True)
    assert blend[1] == pytest.approx(0.5 * 0.2 + 0.5 * 1.0)
    assert blend[2] == pytest.approx(0.5 * 0.8 + 0.5 * 0.5)
    assert blend[3] == pytest.approx(0.5 * 0.25)  # a negative cosine counts as zero
    assert blend[4] == pytest.approx(0.5 * 0.6)  # found by the vectors alone
    assert fuse(lexical, semantic, Fusion(0.2), use_vectors=True)[2] == pytest.approx(0.2 * 0.8 + 0.8 * 0.5)


def test_a_compressed_cosine_is_scaled_over_the_candidates() -> None:
    blend = fuse({}, {1: 0.80, 2: 0.90, 3: 0.85}, Fusion(1.0, "minmax"), use_vectors=True)
    assert blend == pytest.approx({1: 0.0, 2: 1.0, 3: 0.5})


def test_without_vectors_only_bm25_counts() -> None:
    scores = fuse({1: 4.0, 2: 2.0}, {}, Fusion(0.7), use_vectors=False)
    assert scores == {1: 1.0, 2: 0.5}


def test_a_question_keeps_part_of_its_score_and_a_turn_gains_from_the_turns_beside_it() -> None:
    blend = {1: 0.8, 2: 0.4, 3: 0.1, 4: 0.5}
    facts = {1: Facts(True, None, 2), 2: Facts(False, 1, 3), 3: Facts(False, 2, 99), 4: Facts(False, None, None)}
    scores = rank(blend, facts, Fusion(0.5, question_penalty=0.3, context_weight=0.25))
    assert scores[1] == pytest.approx(0.8 * 0.7 + 0.25 * 0.4)  # asks; its answer beside it lends
    assert scores[2] == pytest.approx(0.4 + 0.25 * 0.8)  # the question before it lends its whole blend
    assert scores[3] == pytest.approx(0.1 + 0.25 * 0.4)  # 99 is no candidate: it lends nothing
    assert scores[4] == pytest.approx(0.5)  # no session, no neighbours
    assert rank(blend, facts, Fusion(0.5)) == blend


def _created(vault: Vault, memory_id: str, minute: int) -> None:
    update_meta(vault, memory_id, {"created": f"2026-01-01T10:{minute:02d}:00Z"})


def test_a_turn_right_after_a_match_is_lifted_by_it(vault: Vault) -> None:
    """The answer to a question is often the next turn, which shares none of its words."""
    turns = [("s1", "Where did the offsite happen this year?"), ("s1", "It was in Lisbon, by the river."),
             ("s2", "The printer on floor two is jammed again."), ("s2", "Porto this time, by the sea.")]
    ids = []
    for minute, (session, body) in enumerate(turns):
        ids.append(vault.add(body, scope="user", session=session).id)
        _created(vault, ids[-1], minute)
    rule = fusion_for(vault.embedder.model_id if vault.embedder else None)

    def ranked(fusion: Fusion) -> list[str]:
        hits = search_mod.search(vault.store, vault.embedder, "offsite this year", 4,
                                 qvec=vault.embed_query("offsite this year"), fusion=fusion, floor=False)
        return [h.id for h in hits]

    assert ranked(rule)[:2] == [ids[0], ids[1]]
    # Without the context it is only the turn that shares the word "this" with the question.
    alone = ranked(replace(rule, context_weight=0.0))
    assert alone.index(ids[3]) < alone.index(ids[1])


def test_a_question_ranks_below_the_same_words_said(vault: Vault) -> None:
    asked = vault.add("Deploy the billing service on Fridays?", scope="project:billing").id
    said = vault.add("Deploy the billing service on Fridays.", scope="user").id
    hits = vault.search("deploy billing fridays", limit=2)
    assert [h.id for h in hits] == [said, asked]
    assert hits[1].score == pytest.approx(0.7 * hits[0].score, rel=1e-4)


def test_facts_follow_the_session_order(vault: Vault) -> None:
    """Neighbours are the memories before and after one in its session, by
    created time, whatever the order they were added in; other sessions and
    memories without a session have none."""
    texts = {
        "b": ("Which database did we pick?", "s1", "2026-01-01T10:02:00Z"),
        "a": ("Let us talk about storage.", "s1", "2026-01-01T10:01:00Z"),
        "c": ("SQLite, with WAL on.", "s1", "2026-01-01T10:03:00Z"),
        "x": ("Unrelated, in another session.", "s2", "2026-01-01T10:02:30Z"),
        "n": ("No session at all.", None, "2026-01-01T10:02:40Z"),
    }
    ids = {}
    for key, (body, session, created) in texts.items():
        ids[key] = vault.add(body, scope="user", session=session).id
        update_meta(vault, ids[key], {"created": created})
    rowid = vault.store.rowids_by_ids(list(ids.values()))
    key_of = {r: k for k, r in ((k, rowid[ids[k]]) for k in ids)}
    facts = vault.store.facts(list(rowid.values()))

    def named(r: int | None) -> str | None:
        return None if r is None else key_of[r]

    seen = {key_of[r]: (f.asks, named(f.before), named(f.after)) for r, f in facts.items()}
    assert seen == {"a": (False, None, "b"), "b": (True, "a", "c"), "c": (False, "b", None),
                    "x": (False, None, None), "n": (False, None, None)}


def test_lexical_only_vault(vault_root) -> None:  # type: ignore[no-untyped-def]
    with Vault(vault_root, embedder=None) as v:
        added = v.add("Use ruff for linting", scope="user")
        hits = v.search("ruff linting")
        assert [h.id for h in hits] == [added.id]
        assert hits[0].semantic is None


def test_search_is_read_only_and_remembers_query_vectors(vault: Vault, fake_embedder) -> None:  # type: ignore[no-untyped-def]
    vault.add("Use ruff for linting")
    cached = vault.local_store.stats().cached_embeddings  # where a query vector would be written
    vault.search("which linter do we use")
    calls = fake_embedder.calls
    vault.search("which linter do we use")
    assert fake_embedder.calls == calls  # the second time the vector came from the LRU
    assert vault.local_store.stats().cached_embeddings == cached


def test_search_without_a_query_vector_embeds_the_question_on_the_query_side(
    vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    """e5 models need "query: " on questions; search() used to embed them as stored text."""
    # Query vectors are remembered per process by model id: start from none,
    # so this run (one per backend) asks the model itself.
    monkeypatch.setattr(embed, "_query_lru", OrderedDict())
    vault.add("The staging cluster is rebuilt every night.", scope="user")
    embedder = vault.embedder
    assert embedder is not None
    asked: list[str] = []

    class QuerySide:
        model_id, dim = embedder.model_id, embedder.dim

        def embed(self, texts: list[str]) -> object:
            return embedder.embed(texts)

        def embed_query(self, texts: list[str]) -> object:
            asked.extend(texts)
            return embedder.embed(texts)

    hits = search_mod.search(vault.backend.lookup, QuerySide(), "staging rebuilt nightly")  # type: ignore[arg-type]
    assert asked == ["staging rebuilt nightly"]
    assert hits and "staging" in hits[0].body
