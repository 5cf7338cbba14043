""""No matches" is an answer (docs/search.md, "No matches"): the relevance floor.

The floor is in :func:`memex.search.fusion.relevant`; its figures on the eval
vaults (unrelated queries answered with nothing, real questions never
emptied) are in tests/test_search_convo_quality.py and docs/search.md.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from memex.cli import app
from memex.context import assemble
from memex.search.fusion import CALIBRATIONS, calibration_for, relevant
from memex.vault import Vault
from tests.fakes import HashEmbedder
from tests.hypokit import examples

MEMORIES = (
    "The staging cluster is rebuilt every night from the main branch.",
    "Docker 镜像统一推到公司内部的 Harbor 仓库，不要推到 Docker Hub。",
    "容器启动前必须先跑数据库迁移脚本。",
    "The user prefers short answers with code first, prose after.",
)


def _fill(vault: Vault) -> None:
    for body in MEMORIES:
        vault.add(body, scope="user")


@pytest.mark.model
def test_an_unrelated_query_finds_nothing(model_vault: Vault) -> None:
    _fill(model_vault)
    assert model_vault.search("xylophone orchestra") == []
    assert model_vault.search("木琴管弦乐团") == []
    assert model_vault.search("how do volcanoes form?") == []
    # Positive controls: related queries still find their memory first.
    assert model_vault.search("when is staging rebuilt?")[0].body == MEMORIES[0]
    assert model_vault.search("Docker 镜像推到哪里？")[0].body == MEMORIES[1]


@pytest.mark.model
def test_cli_says_no_matches_and_json_is_an_empty_list(model_vault: Vault, vault_root: Path) -> None:
    _fill(model_vault)
    runner = CliRunner()
    out = runner.invoke(app(), ["--vault", str(vault_root), "search", "xylophone orchestra"], catch_exceptions=False)
    assert out.exit_code == 0 and out.output.strip() == "no matches"
    out = runner.invoke(app(), ["--vault", str(vault_root), "search", "xylophone orchestra", "--json"],
                        catch_exceptions=False)
    assert out.exit_code == 0 and json.loads(out.stdout) == []
    out = runner.invoke(app(), ["--vault", str(vault_root), "search", "staging rebuilt", "--json"],
                        catch_exceptions=False)
    assert [h["body"] for h in json.loads(out.stdout)][:1] == [MEMORIES[0]]


@pytest.mark.model
def test_agent_recall_uses_the_floor_even_with_no_score_threshold(model_vault: Vault, vault_root: Path) -> None:
    """With ``recall_score_threshold = 0`` only the floor stands between a prompt and injection."""
    (vault_root / ".memex" / "config.toml").write_text("[recall]\nrecall_score_threshold = 0.0\n")
    with Vault(vault_root, embedder=model_vault.embedder) as vault:
        _fill(vault)
        out = assemble(vault, "s", [{"role": "user", "content": "Write a haiku about autumn leaves."}], 200_000)
        assert out["injected"] == []
        out = assemble(vault, "s", [{"role": "user", "content": "How often is the staging cluster rebuilt?"}], 200_000)
        assert len(out["injected"]) >= 1


class SignedHashEmbedder(HashEmbedder):
    """The fake embedder plus one signed dimension: +1.5 for texts about deploys,
    -1.5 for the rest, so a deploy query has negative cosines to everything else."""

    model_id = "test-signed-hash-64"

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = super().embed(texts)
        out[:, 0] = [1.5 if "deploy" in t else -1.5 for t in texts]
        return np.asarray(out / np.linalg.norm(out, axis=1, keepdims=True), dtype=np.float32)


GARDEN = (
    "Tomatoes on the balcony need water every morning",
    "Basil grows best in a sunny window box",
    "Repot the lemon tree before spring",
    "Compost goes in the green bin on Thursdays",
)


def test_scoped_search_never_returns_negative_scores(vault_root: Path) -> None:
    with Vault(vault_root, embedder=SignedHashEmbedder()) as vault:
        for body in GARDEN:
            vault.add(body, scope="project:garden")
        vault.add("the deploy pipeline runs on tuesdays", scope="user")
        hits = vault.search("deploy pipeline", scope="project:garden", limit=20)
        assert hits, "a scoped search over an unmeasured model keeps its vector hits"
        assert any(h.semantic is not None and h.semantic < 0 for h in hits), "the case needs negative cosines"
        assert all(h.score >= 0 for h in hits), [(h.score, h.semantic) for h in hits]


def test_floor_rules_on_words() -> None:
    minilm = CALIBRATIONS["all-MiniLM-L6-v2-int8"]
    # Two content words, one shared: not enough ("black hole" is not about "black").
    assert not relevant("what is a black hole", "ruff format and black disagree", 0.10, minilm)
    assert relevant("black hole radiation", "Hawking radiation leaks from a black hole", 0.10, minilm)
    # A cosine clearly above the unrelated range passes without shared words.
    assert relevant("how should I write dates?", "Use ISO 8601 everywhere", 0.55, minilm)
    # For Chinese the English model's cosine says nothing: one shared content bigram is needed.
    assert not relevant("熊猫吃什么", "中午吃什么？", 0.9, minilm)
    assert relevant("周会什么时候开？", "周会改到每周三上午十点", 0.1, minilm)
    # A model nobody measured: the floor never hides its vector hits.
    assert relevant("anything", "unrelated text", 0.01, calibration_for("some-new-model"))


def test_a_shared_word_lowers_the_cosine_bar_only_where_the_model_asks_for_it() -> None:
    e5 = CALIBRATIONS["multilingual-e5-small-q4"]
    query = "which database does the billing service use?"
    # 0.82: between the shared-word bar (0.805) and the plain bar (0.835).
    assert relevant(query, "Billing talks to Postgres 15 on the old cluster.", 0.82, e5)
    assert not relevant(query, "Lena signed up for a bouldering class.", 0.82, e5)
    assert relevant(query, "Lena signed up for a bouldering class.", 0.84, e5)
    # MiniLM has no such bar: a shared word alone (one of four) is not enough.
    minilm = calibration_for("all-MiniLM-L6-v2-int8")
    assert minilm.floor_shared_word is None
    assert not relevant(query, "Billing talks to Postgres 15 on the old cluster.", 0.2, minilm)


def test_a_keyword_matches_its_inflected_forms() -> None:
    """Found from outside: `memex search prefer` answered "no matches" for "The user
    prefers tabs over spaces" (full text stems the word; the floor compared it raw)."""
    minilm = calibration_for("all-MiniLM-L6-v2-int8")
    assert relevant("prefer", "The user prefers tabs over spaces", 0.10, minilm)
    assert relevant("price", "Lesson prices are stored in cents", 0.10, minilm)
    assert relevant("flaky test", "Playwright end-to-end tests were flaky on CI", 0.10, minilm)
    assert not relevant("flaky test", "The CI runner is flaky", 0.10, minilm)  # one of two words stays too few


def test_cli_finds_a_memory_by_an_inflected_keyword(vault_root: Path) -> None:
    runner = CliRunner()
    (vault_root / ".memex" / "config.toml").write_text('[embedding]\nmodel = "none"\n')
    assert runner.invoke(app(), ["--vault", str(vault_root), "add", "The user prefers tabs over spaces"]).exit_code == 0
    assert runner.invoke(app(), ["--vault", str(vault_root), "add", "We deploy the shop on Fridays"]).exit_code == 0
    out = runner.invoke(app(), ["--vault", str(vault_root), "search", "prefer", "--json"])
    assert out.exit_code == 0, out.output
    assert [h["body"] for h in json.loads(out.output)] == ["The user prefers tabs over spaces"]


PROJECT_NOTES = (
    "The frontend uses pnpm, not npm; running npm install breaks the lockfile.",
    "API responses are cached in Redis for five minutes.",
    "We deploy to Fly.io from the main branch after CI passes.",
    "Invoices are kept for seven years because of the tax rules.",
    "The checkout page must load in under two seconds on 4G.",
    "Sentry collects errors from both the API and the web app.",
)


@pytest.mark.model
def test_no_matches_names_the_nearest_memory_below_the_floor(model_vault: Vault, vault_root: Path) -> None:
    """Found from outside: "which package manager for the frontend" answered
    a bare "no matches" while the vault says "The frontend uses pnpm": the
    cosine (0.24) sits where unrelated queries sit too, and one of the three
    content words is shared, so the floor drops it; the person is now told
    where the nearest memory is, and --no-floor shows it. Agents (--json)
    still get nothing."""
    for body in PROJECT_NOTES:
        model_vault.add(body, scope="project:shop")
    pnpm = next(m.id for m in model_vault.list() if "pnpm" in m.body)
    runner, where = CliRunner(), ["--vault", str(vault_root)]
    done = runner.invoke(app(), [*where, "search", "which package manager for the frontend"])
    assert done.exit_code == 0, done.output
    assert done.stdout.strip() == "no matches"  # the floor itself is unchanged
    assert f"the nearest is {pnpm} (The frontend uses pnpm" in done.stderr
    shown = runner.invoke(app(), [*where, "search", "which package manager for the frontend", "--no-floor"])
    assert shown.exit_code == 0 and pnpm in shown.stdout
    as_json = runner.invoke(app(), [*where, "search", "which package manager for the frontend", "--json"])
    assert json.loads(as_json.stdout) == []
    # A query that clears the floor gets its hits and no note.
    found = runner.invoke(app(), [*where, "search", "how long do we keep invoices"])
    assert "Invoices are kept" in found.stdout and "note:" not in found.stderr


@settings(max_examples=examples(300), deadline=None)
@given(st.text(alphabet=st.characters(max_codepoint=127), max_size=80))
def test_ascii_text_tokenizes_as_the_general_path_does(body: str) -> None:
    """The floor tokenizes hits on every search; ASCII text skips NFKC and the CJK
    checks, and must give the very tokens the general path gives."""
    import unicodedata

    from memex import text

    general = []
    for match in text._TOKEN.finditer(unicodedata.normalize("NFKC", body).casefold()):
        general.append(match.group(0))
    assert text.tokens(body) == general
    assert text.tokens(body + " 汉字") == general + ["汉字"]  # the general path, for comparison
