"""The save-side pipeline layer by layer (fast: fake or table embedders)."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from memex.errors import ConfigError
from memex.text import normalize
from memex.vault import Vault

# Run on the SQLite and on the PostgreSQL index (docs/postgres.md).
pytestmark = pytest.mark.both_backends

ANSWER_KEYS = {"status", "id", "path", "method", "existing_id", "similarity", "similar_facts"}


def memory_files(vault: Vault) -> list[Path]:
    return sorted((vault.root / "memories").rglob("*.md"))


def set_dedup_config(root: Path, **settings: object) -> None:
    """Put keys into the vault's [dedup] table."""
    path = root / ".memex" / "config.toml"
    lines = "".join(
        f"{k} = {v!r}\n" if not isinstance(v, (list, tuple)) else f"{k} = {list(v)!r}\n".replace("'", '"')
        for k, v in settings.items()
    )
    path.write_text(path.read_text(encoding="utf-8").replace("[dedup]\n", "[dedup]\n" + lines, 1), encoding="utf-8")


class TableEmbedder:
    """Vectors chosen by the test for given texts; anything else is a random direction."""

    model_id = "test-table-16"
    dim = 16

    def __init__(self, table: dict[str, Sequence[float]]) -> None:
        self.table = {normalize(k): np.asarray(v, dtype=np.float32) for k, v in table.items()}

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            vec = self.table.get(normalize(text))
            if vec is None:
                seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "little")
                vec = np.random.default_rng(seed).normal(size=self.dim).astype(np.float32)
            out[i] = vec / np.linalg.norm(vec)
        return out


def unit(*pairs: tuple[int, float]) -> list[float]:
    vec = [0.0] * TableEmbedder.dim
    for index, value in pairs:
        vec[index] = value
    return vec


# -- layer 1: exact ----------------------------------------------------------------


def test_same_body_from_two_writers_is_one_memory(vault: Vault) -> None:
    first = vault.add("Use FTS5 external-content tables.", source="claude-code", session="s1", source_ref="t.jsonl#L4")
    again = vault.add(
        "[hm session:gw-9 src:keyword event:UserPromptSubmit] Use FTS5 external-content tables.",
        source="openclaw", session="s2", source_ref="gw.log#L88",
    )
    assert first.status == "created"
    assert set(again.as_dict()) == ANSWER_KEYS
    assert (again.status, again.method, again.existing_id, again.id) == ("duplicate", "exact", first.id, first.id)
    assert again.similarity == 1.0 and again.path == first.path
    assert len(memory_files(vault)) == 1
    assert vault.get(first.id).access_count == 1  # the duplicate counted as a use


def test_injected_recall_block_is_never_stored_again(vault: Vault) -> None:
    first = vault.add("The deploy key lives in 1Password.")
    echo = vault.add(
        "<relevant-memories>\n- Use FTS5 external-content tables.\n</relevant-memories>\n"
        "The deploy key lives in 1Password."
    )
    assert (echo.status, echo.method, echo.existing_id) == ("duplicate", "exact", first.id)
    assert "relevant-memories" not in memory_files(vault)[0].read_text(encoding="utf-8")


def test_exact_check_covers_the_whole_scope_and_only_the_scope(vault: Vault) -> None:
    first = vault.add("Grip force 12.5N works best.", scope="project:arm")
    for n in range(30):
        vault.add(f"Unrelated note number {n} about topic {n * 7}", scope="project:arm")
    assert vault.add("grip force 12.5n works best.", scope="project:arm").existing_id == first.id
    other = vault.add("Grip force 12.5N works best.", scope="project:other")
    assert other.status == "created"


# -- layer 2: Jaccard (runs without a model) -----------------------------------------


def test_without_a_model_jaccard_still_catches_a_near_copy(vault_root: Path) -> None:
    with Vault(vault_root, embedder=None) as v:
        first = v.add("Run the test suite with pytest before every commit.")
        near = v.add("Run the whole test suite with pytest before every single commit!")
        similar = v.add("Run the test suite with pytest and coverage on every pull request.")
    assert (near.status, near.method, near.existing_id) == ("duplicate", "jaccard", first.id)
    assert near.similarity is not None and near.similarity > 0.70
    assert similar.status == "created"
    assert [f.id for f in similar.similar_facts] == [first.id]
    assert 0.40 <= similar.similar_facts[0].similarity <= 0.70


def test_two_texts_without_a_word_are_not_alike(vault_root: Path) -> None:
    # Found from outside: `memex add "..."` then `memex add "—"` reported the
    # first as similar at 1.00 (two empty word sets had Jaccard 1.0).
    from memex.text import jaccard

    assert jaccard("...", "—") == 0.0
    with Vault(vault_root, embedder=None) as v:
        v.add("...")
        dash = v.add("—")
        again = v.add("...")
    assert (dash.status, dash.similar_facts) == ("created", [])
    assert (again.status, again.method) == ("duplicate", "exact")


def test_sharing_a_category_word_alone_is_not_similar(vault_root: Path) -> None:
    with Vault(vault_root, embedder=None) as v:
        v.add("Decision: preference for tabs")
        other = v.add("Decision: preference for Postgres")
    assert other.status == "created" and other.similar_facts == []


# -- layer 4: value changes ------------------------------------------------------------


def test_a_changed_value_is_kept_and_the_old_one_suggested_for_supersede(vault: Vault) -> None:
    old = vault.add("grip force 12.5N works best")
    new = vault.add("grip force 15N works best")
    assert new.status == "created" and new.id != old.id
    assert [(f.id, f.suggestion) for f in new.similar_facts] == [(old.id, "supersede")]
    assert len(memory_files(vault)) == 2


def test_a_negated_statement_is_not_a_duplicate(vault: Vault) -> None:
    vault.add("Commit the generated lock file to the repository")
    flipped = vault.add("Never commit the generated lock file to the repository")
    assert flipped.status == "created"
    assert flipped.similar_facts[0].suggestion == "supersede"


# Issue 12 item 10: the same words with two roles exchanged (Jaccard 1.0)
# were swallowed as duplicates. Five kinds: owners, days, from/to,
# dependency direction, values per environment.
ROLE_SWAPS = [
    ("Alice owns billing and Bob owns auth", "Bob owns billing and Alice owns auth"),
    ("never deploy on Fridays; fine on Mondays", "never deploy on Mondays; fine on Fridays"),
    ("Migrate the orders table from MySQL to Postgres", "Migrate the orders table from Postgres to MySQL"),
    ("The web service depends on the auth service", "The auth service depends on the web service"),
    ("Staging listens on port 8080 and production on port 9090",
     "Staging listens on port 9090 and production on port 8080"),
]


@pytest.mark.parametrize(("first", "second"), ROLE_SWAPS)
def test_swapped_roles_are_a_new_fact_with_a_supersede_suggestion(vault: Vault, first: str, second: str) -> None:
    old = vault.add(first)
    new = vault.add(second)
    assert new.status == "created" and new.id != old.id
    assert [(f.id, f.suggestion) for f in new.similar_facts] == [(old.id, "supersede")]
    assert len(memory_files(vault)) == 2


def test_a_reordered_paraphrase_with_the_same_words_is_still_a_duplicate(vault: Vault) -> None:
    old = vault.add("Run the unit tests before committing")
    again = vault.add("Before committing, run the unit tests")
    assert (again.status, again.existing_id) == ("duplicate", old.id)


# -- layer 3: cosine and same-session cosine -----------------------------------------------


def test_cosine_duplicate_and_similar_bands(vault_root: Path) -> None:
    # The paraphrase says nothing the first does not (memex/dedup/subject.py)
    # and shares too few words for the Jaccard layer: cosine decides.
    table = {
        "The reporting service reads from a replica in Frankfurt": unit((0, 1.0)),
        "Reporting service uses the replica": unit((0, 0.9), (1, 0.3)),  # cosine ~0.95
        "Nightly reports are emailed to finance": unit((0, 0.6), (2, 0.8)),  # cosine 0.6
    }
    with Vault(vault_root, embedder=TableEmbedder(table)) as v:
        first = v.add("The reporting service reads from a replica in Frankfurt")
        para = v.add("Reporting service uses the replica")
        near = v.add("Nightly reports are emailed to finance")
    assert (para.status, para.method, para.existing_id) == ("duplicate", "cosine", first.id)
    assert para.similarity == pytest.approx(0.9487, abs=1e-3)
    assert near.status == "created"
    assert near.similar_facts[0].id == first.id
    assert near.similar_facts[0].similarity == pytest.approx(0.6, abs=1e-3)


def test_same_session_threshold_applies_only_within_the_session(vault_root: Path) -> None:
    set_dedup_config(vault_root, cosine_duplicate=0.95, session_cosine_duplicate=0.75)
    # Both later texts say nothing the first does not (memex/dedup/subject.py)
    # and share too few words with it (or each other) for the Jaccard layer.
    first_text = "Cache user profiles in Redis with a short expiry to spare the database"
    table = {
        first_text: unit((0, 1.0)),
        "Cache profiles in Redis": unit((0, 0.8), (1, 0.6)),  # cosine 0.8
        "A short expiry spares the database": unit((0, 0.8), (2, 0.6)),  # cosine 0.8
    }
    with Vault(vault_root, embedder=TableEmbedder(table)) as v:
        first = v.add(first_text, session="s1")
        same = v.add("Cache profiles in Redis", session="s1")
        other = v.add("A short expiry spares the database", session="s2")
    assert (same.status, same.method, same.existing_id) == ("duplicate", "session_cosine", first.id)
    assert other.status == "created"


def test_cosine_never_decides_for_chinese_text(vault_root: Path) -> None:
    # The bundled model is English-only: Chinese sentences often embed alike.
    table = {"备份保留90天": unit((0, 1.0)), "日志保留90天": unit((0, 1.0))}
    with Vault(vault_root, embedder=TableEmbedder(table)) as v:
        v.add("备份保留90天")
        other = v.add("日志保留90天")
    assert other.status == "created"


# -- config ----------------------------------------------------------------------------------


def test_thresholds_come_from_the_config(vault_root: Path) -> None:
    set_dedup_config(vault_root, jaccard_duplicate=0.5, jaccard_similar=0.2)
    with Vault(vault_root, embedder=None) as v:
        first = v.add("Run the test suite with pytest and coverage on every pull request.")
        loose = v.add("Run the test suite with pytest before every commit.")
    assert (loose.status, loose.existing_id) == ("duplicate", first.id)


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"cosine_duplicate": 1.5}, "cosine_duplicate must be from 0 to 1"),
        ({"jaccard_similar": 0.9}, "jaccard_similar must not exceed jaccard_duplicate"),
        ({"echo_window_seconds": -1}, "echo_window_seconds must not be negative"),
        ({"echo_jaccard": "high"}, "echo_jaccard must be float"),
    ],
)
def test_bad_dedup_settings_name_the_key(vault_root: Path, settings: dict[str, object], message: str) -> None:
    set_dedup_config(vault_root, **settings)
    with Vault(vault_root, embedder=None) as v, pytest.raises(ConfigError, match=message) as err:
        v.add("anything at all")
    assert "[dedup]" in str(err.value)


@pytest.mark.model
def test_the_in_process_vector_copy_gives_the_same_decisions_as_sqlite_vec(
    model_vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A long-lived process dedups against its loaded vector copy; a one-shot
    add against sqlite-vec. Both must decide alike on the labelled pairs."""
    import json

    from memex.dedup import pipeline
    from memex.store.sqlite import vecmatrix

    vault = model_vault
    if vault.backend.shared:
        pytest.skip("the in-process copy is of the SQLite index, which search on PostgreSQL does not load")
    lines = (Path(__file__).parent / "data" / "dedup_pairs.jsonl").read_text(encoding="utf-8").splitlines()
    pairs = [json.loads(line) for line in lines]
    pairs = [p for p in pairs if p["lang"] == "en"][:80]
    for a in dict.fromkeys(p["a"] for p in pairs):
        vault.add(a)
    vault.search("warm up")
    vault.search("the copy loads on the second search of an unchanged index")
    assert vecmatrix.for_connection(vault.backend.conn, may_load=False) is not None
    assert vault.embedder is not None

    def decide(body: str) -> tuple[str, str | None, str | None, list[str]]:
        cand = pipeline.Candidate(body, "user", "test", None, qvec=vault.embedder.embed([body])[0])  # type: ignore[union-attr]
        d = pipeline.check(vault.backend.lookup, vault.config, vault.embedder, cand, cache=vault.local_store)
        return d.status, d.method, d.existing_id, [f.id for f in d.similar_facts]

    with_copy = [decide(p["b"]) for p in pairs]
    monkeypatch.setattr(vecmatrix, "for_connection", lambda conn, may_load=True: None)
    with_sqlite = [decide(p["b"]) for p in pairs]
    assert with_copy == with_sqlite
    assert sum(d[1] in ("cosine", "session_cosine") for d in with_copy) >= 5  # the cosine layer decides some
    assert sum(bool(d[3]) for d in with_copy) >= 10  # and reports similar facts


@pytest.mark.model
def test_dedup_reads_the_loaded_vector_copy_through_the_store(model_vault: Vault) -> None:
    """The in-process copy is the SQLite store's own: ``body_search`` answers
    from it once this process has loaded it, else from the index, alike."""
    from memex.store.bodies import StoredBodies

    vault = model_vault
    assert vault.embedder is not None
    for body in ("The deploy runs from the main branch", "Tests use a real database", "Logs rotate daily"):
        vault.add(body)
    store = vault.local_store
    assert isinstance(store.body_search(), StoredBodies)  # a one-shot process loads nothing for a check
    vault.search("warm up")
    vault.search("the copy loads on the second search of an unchanged index")
    if vault.backend.shared:  # PostgreSQL answers from its index; search does not load SQLite's copy
        assert isinstance(vault.store.body_search(), StoredBodies)
        assert isinstance(store.body_search(), StoredBodies)
        return
    copy = store.body_search()
    assert not isinstance(copy, StoredBodies)
    qvec = vault.embedder.embed(["deploys go out from main"])[0]
    stored = StoredBodies(store)
    near = stored.nearest_bodies(qvec, 2)
    assert copy.nearest_bodies(qvec, 2).keys() == near.keys()
    rowids = sorted(copy.nearest_bodies(qvec, 3))
    assert copy.body_cosines(qvec, rowids) == pytest.approx(stored.body_cosines(qvec, rowids), abs=1e-5)
