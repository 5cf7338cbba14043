"""Search plumbing: filters, limit, fusion arithmetic (fake embedder)."""

from __future__ import annotations

from collections import OrderedDict

import pytest

from memex.embedding import embed
from memex.search import hybrid as search_mod
from memex.errors import InvalidArgument
from memex.search.hybrid import Filters, Fusion, fuse
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
    where, params = Filters().sql()
    assert where == "m.status = 'active'" and params == []
    assert not Filters().narrowing
    assert Filters(scopes=("user",)).narrowing


def test_rrf_adds_reciprocal_ranks() -> None:
    lexical = {1: 9.0, 2: 5.0}
    semantic = {2: 0.9, 3: 0.8, 1: 0.1}
    scores = fuse(lexical, semantic, Fusion("rrf", rrf_k=60), use_vectors=True)
    assert scores[1] == pytest.approx(1 / 61 + 1 / 63)
    assert scores[2] == pytest.approx(1 / 62 + 1 / 61)
    assert scores[3] == pytest.approx(1 / 62)


def test_blend_weights_and_normalizations() -> None:
    lexical = {1: 10.0, 2: 5.0, 3: 2.5}
    semantic = {1: 0.2, 2: 0.8, 3: 0.5}
    maxed = fuse(lexical, semantic, Fusion("blend", 0.5, "max"), use_vectors=True)
    assert maxed[1] == pytest.approx(0.5 * 0.2 + 0.5 * 1.0)
    assert maxed[2] == pytest.approx(0.5 * 0.8 + 0.5 * 0.5)
    minmax = fuse(lexical, semantic, Fusion("blend", 0.0, "minmax"), use_vectors=True)
    assert minmax[3] == pytest.approx(0.0) and minmax[1] == pytest.approx(1.0)
    sat = fuse(lexical, semantic, Fusion("blend", 0.0, "sat"), use_vectors=True)
    assert sat[2] == pytest.approx(0.5)  # the median saturates to one half
    assert sat[1] == pytest.approx(10 / 15)


def test_cjk_queries_get_their_own_weight() -> None:
    fusion = Fusion("blend", 0.9, "max", cjk_semantic_weight=0.1)
    lexical, semantic = {1: 1.0}, {1: 0.0}
    assert fuse(lexical, semantic, fusion, True, "deploy")[1] == pytest.approx(0.1)
    assert fuse(lexical, semantic, fusion, True, "部署")[1] == pytest.approx(0.9)


def test_without_vectors_only_bm25_counts() -> None:
    scores = fuse({1: 4.0, 2: 2.0}, {}, Fusion("blend", 0.7, "max"), use_vectors=False)
    assert scores == {1: 1.0, 2: 0.5}


def test_lexical_only_vault(vault_root) -> None:  # type: ignore[no-untyped-def]
    with Vault(vault_root, embedder=None) as v:
        added = v.add("Use ruff for linting", scope="user")
        hits = v.search("ruff linting")
        assert [h.id for h in hits] == [added.id]
        assert hits[0].semantic is None


def test_search_is_read_only_and_remembers_query_vectors(vault: Vault, fake_embedder) -> None:  # type: ignore[no-untyped-def]
    vault.add("Use ruff for linting")
    cached = vault.conn.execute("SELECT count(*) FROM embedding_cache").fetchone()[0]
    vault.search("which linter do we use")
    calls = fake_embedder.calls
    vault.search("which linter do we use")
    assert fake_embedder.calls == calls  # the second time the vector came from the LRU
    assert vault.conn.execute("SELECT count(*) FROM embedding_cache").fetchone()[0] == cached


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

    hits = search_mod.search(vault.conn, QuerySide(), "staging rebuilt nightly")  # type: ignore[arg-type]
    assert asked == ["staging rebuilt nightly"]
    assert hits and "staging" in hits[0].body
