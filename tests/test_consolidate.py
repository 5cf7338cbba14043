"""Session consolidation with the real model: paraphrases fold, facts stay apart."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from memex.cli import app
from memex.consolidation.consolidate import Item, complete_link, consolidate, consolidate_all, representative, unsupersede
from memex.errors import InvalidArgument
from memex.dedup.values import conflict_reason
from memex.vault import Vault

pytestmark = pytest.mark.both_backends

DATA = Path(__file__).parent / "data" / "consolidate_facts.jsonl"
FACTS = [json.loads(line) for line in DATA.read_text(encoding="utf-8").splitlines() if line.strip()]


def texts_of(fact: str) -> list[str]:
    return [r["text"] for r in FACTS if r["fact"] == fact]


def write(vault: Vault, name: str, body: str, session: str = "s1", **meta: Any) -> Path:
    """A memory file as an agent session would leave it (bypasses add-time dedup)."""
    meta = {"session": session, "category": "observation", "confidence": 0.8,
            "created": "2026-11-30T10:00:00Z", **meta}
    scope = str(meta.get("scope", "user"))
    folder = vault.root / "memories" / Path(*scope.replace(":", "/").split("/"))
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.md"
    head = "".join(f"{k}: {json.dumps(v) if isinstance(v, str) else v}\n" for k, v in meta.items())
    path.write_text(f"---\nid: {name}\n{head}---\n{body}\n", encoding="utf-8")
    return path


def superseded_by(vault: Vault, memory_id: str) -> str | None:
    value = vault.get(memory_id).meta.get("superseded_by")
    return None if value is None else str(value)


def test_paraphrases_collapse_to_one_representative(model_vault: Vault) -> None:
    uv = texts_of("git-hooks")
    lock = texts_of("build-lock")
    assert len(uv) == 3 and len(lock) == 3
    for k, body in enumerate(uv):
        write(model_vault, f"uv{k}", body, created=f"2026-11-30T10:0{k}:00Z")
    for k, body in enumerate(lock):
        write(model_vault, f"lock{k}", body, created=f"2026-11-30T11:0{k}:00Z")
    write(model_vault, "other", "The frontend bundle is built with Vite")
    model_vault.reindex()

    report = consolidate(model_vault, "s1")

    assert report.candidates == 7
    assert report.merged_groups == 2
    assert report.superseded_count == 3
    assert report.compression_ratio == pytest.approx(7 / 4, abs=1e-3)
    assert 0.75 <= report.avg_similarity <= 1.0
    groups = {frozenset([g.representative, *g.superseded]) for g in report.groups}
    # "...means the lockfile has to be rebuilt" words it in a way neither
    # other note carries (a representative must say what it hides): it stays.
    assert groups == {frozenset({"uv0", "uv1", "uv2"}), frozenset({"lock0", "lock1"})}
    # The representative carries every member it hides; among members that
    # carry all the others (here each carries the rest), the newest is kept.
    reps = {g.representative for g in report.groups}
    assert reps == {"uv2", "lock1"}
    for mid in ("uv0", "uv1"):
        assert superseded_by(model_vault, mid) == "uv2"
        assert model_vault.get(mid).status == "superseded"
    assert superseded_by(model_vault, "other") is None
    # Hidden from search, still there as files and with --include-superseded.
    visible = {h.id for h in model_vault.search("pre-commit hook runs ruff and mypy")}
    assert "uv2" in visible and not visible & {"uv0", "uv1"}
    hidden = {h.id for h in model_vault.search("pre-commit hook runs ruff and mypy", include_superseded=True)}
    assert {"uv0", "uv1"} <= hidden
    # A second run finds nothing more to do.
    assert consolidate(model_vault, "s1").superseded_count == 0


def test_a_differing_value_stays_separate(model_vault: Vault) -> None:
    write(model_vault, "t30", "The HTTP client timeout is 30 seconds")
    write(model_vault, "t60", "The HTTP client timeout is 60 seconds")
    write(model_vault, "t30b", "HTTP client requests time out after 30 seconds")
    write(model_vault, "py", "The project targets Python 3.11")
    model_vault.reindex()
    report = consolidate(model_vault, "s1")
    assert report.candidates == 4
    assert [sorted([g.representative, *g.superseded]) for g in report.groups] == [["t30", "t30b"]]
    assert superseded_by(model_vault, "t60") is None


def test_swapped_word_stays_separate(model_vault: Vault) -> None:
    write(model_vault, "dark", "The user likes a dark theme in the editor")
    write(model_vault, "light", "The user likes a light theme in the editor")
    write(model_vault, "tabs", "The user prefers tabs for indentation in Python files")
    write(model_vault, "spaces", "The user prefers spaces for indentation in Python files")
    model_vault.reindex()
    assert consolidate(model_vault, "s1").merged_groups == 0
    assert conflict_reason("The user likes a dark theme in the editor", "The user likes a light theme in the editor")
    assert conflict_reason("The user prefers tabs for indentation", "The user prefers spaces for indentation")
    assert conflict_reason("The cache is cleared on every deploy", "The cache is cleared on each deploys") is None


def test_protected_memories_stay(model_vault: Vault) -> None:
    uv = texts_of("git-hooks")
    write(model_vault, "c0", "Never commit secrets to the repository", category="constraint")
    write(model_vault, "c1", "Secrets must never be committed to the repository", category="constraint")
    write(model_vault, "g0", "Never commit secrets to the repository", category="gotcha")
    write(model_vault, "sure", uv[0], confidence=0.95)
    write(model_vault, "a", uv[1])
    write(model_vault, "b", uv[2])
    write(model_vault, "x", "The frontend bundle is built with Vite")
    model_vault.reindex()
    report = consolidate(model_vault, "s1")
    assert report.candidates == 3  # a, b, x
    assert [sorted([g.representative, *g.superseded]) for g in report.groups] == [["a", "b"]]
    for mid in ("c0", "c1", "g0", "sure"):
        assert model_vault.get(mid).status == "active"


def test_protected_categories_are_configurable(model_vault: Vault) -> None:
    (model_vault.root / ".memex" / "config.toml").write_text(
        '[consolidate]\nprotected_categories = ["observation"]\n', encoding="utf-8"
    )
    from memex.config import load_config

    model_vault.config = load_config(model_vault.root)
    for k, body in enumerate(texts_of("git-hooks")):
        write(model_vault, f"uv{k}", body)
    model_vault.reindex()
    report = consolidate(model_vault, "s1")
    assert report.candidates == 0 and report.merged_groups == 0


def test_fewer_than_three_candidates_is_skipped(model_vault: Vault) -> None:
    uv = texts_of("git-hooks")
    write(model_vault, "a", uv[0])
    write(model_vault, "b", uv[1])
    write(model_vault, "c", uv[2], scope="project:other")
    model_vault.reindex()
    report = consolidate(model_vault, "s1")
    assert report.merged_groups == 0
    assert {s["scope"]: s["candidates"] for s in report.skipped} == {"user": 2, "project:other": 1}
    assert model_vault.get("a").status == "active"


def test_scopes_and_categories_are_never_mixed(model_vault: Vault) -> None:
    uv = texts_of("git-hooks")
    write(model_vault, "u0", uv[0])
    write(model_vault, "u1", uv[1], category="decision")
    write(model_vault, "u2", uv[2])
    write(model_vault, "p0", uv[0], scope="project:x")
    write(model_vault, "p1", uv[1], scope="project:x")
    write(model_vault, "p2", "The frontend bundle is built with Vite", scope="project:x")
    model_vault.reindex()
    report = consolidate(model_vault, "s1")
    groups = sorted(sorted([g.representative, *g.superseded]) for g in report.groups)
    assert groups == [["p0", "p1"], ["u0", "u2"]]
    assert {g.scope for g in report.groups} == {"user", "project:x"}


def test_representative_prefers_confidence_then_recalls_then_newest() -> None:
    def item(mid: str, conf: float, count: int, created: str) -> Item:
        return Item(0, mid, "x", "user", None, conf, created, count)

    old, new = "2026-11-01T00:00:00Z", "2026-11-30T00:00:00Z"
    assert representative([item("a", 0.9, 0, old), item("b", 0.8, 9, new)]).id == "a"
    assert representative([item("a", 0.8, 3, old), item("b", 0.8, 1, new)]).id == "a"
    assert representative([item("a", 0.8, 1, old), item("b", 0.8, 1, new)]).id == "b"


def test_representative_uses_recall_counts_from_the_index(model_vault: Vault) -> None:
    for k, body in enumerate(texts_of("git-hooks")):
        write(model_vault, f"uv{k}", body, created=f"2026-11-30T10:0{k}:00Z")
    model_vault.reindex()
    model_vault.record_access(["uv0"])
    report = consolidate(model_vault, "s1")
    assert [g.representative for g in report.groups] == ["uv0"]


def test_clusters_are_complete_link() -> None:
    # A~B and B~C, but A and C are not similar: never one cluster of three.
    inf = -np.inf
    score = np.array([[inf, 0.9, inf], [0.9, inf, 0.8], [inf, 0.8, inf]])
    assert sorted(complete_link(score)) == [[0, 1], [2]]
    # All similar: one cluster; the weakest pair decides the link.
    full = np.array([[inf, 0.9, 0.8], [0.9, inf, 0.85], [0.8, 0.85, inf]])
    assert complete_link(full) == [[0, 1, 2]]


def test_dry_run_changes_nothing(model_vault: Vault) -> None:
    paths = [write(model_vault, f"uv{k}", body) for k, body in enumerate(texts_of("git-hooks"))]
    model_vault.reindex()
    before = [p.read_bytes() for p in paths]
    report = consolidate(model_vault, "s1", dry_run=True)
    assert report.dry_run and report.superseded_count == 2
    assert [p.read_bytes() for p in paths] == before
    assert all(model_vault.get(f"uv{k}").status == "active" for k in range(3))


def test_unsupersede_reverses_one(model_vault: Vault) -> None:
    for k, body in enumerate(texts_of("git-hooks")):
        write(model_vault, f"uv{k}", body, created=f"2026-11-30T10:0{k}:00Z")
    model_vault.reindex()
    consolidate(model_vault, "s1")
    path = model_vault.root / model_vault.get("uv0").path
    restored = unsupersede(model_vault, "uv0")
    assert restored.status == "active"
    assert "superseded_by" not in path.read_text(encoding="utf-8")
    assert "uv0" in {h.id for h in model_vault.search("pre-commit ruff mypy")}
    with pytest.raises(InvalidArgument, match="not superseded"):
        unsupersede(model_vault, "uv0")


def test_backfill_all_sessions_in_a_scope(model_vault: Vault) -> None:
    uv, lock = texts_of("git-hooks"), texts_of("build-lock")
    for k, body in enumerate(uv):
        write(model_vault, f"a{k}", body, session="s-a")
    for k, body in enumerate(lock):
        write(model_vault, f"b{k}", body, session="s-b")
    for k, body in enumerate(uv):
        write(model_vault, f"c{k}", body, session="s-c", scope="project:x")
    for k, body in enumerate(uv):  # hand-written, no session: never touched
        path = write(model_vault, f"h{k}", body)
        path.write_text(path.read_text().replace('session: "s1"\n', ""))
    model_vault.reindex()
    report = consolidate_all(model_vault, scope="user")
    data = report.as_dict()
    assert data["sessions_seen"] == 2
    assert data["superseded_count"] == 3  # 2 of s-a, 1 of s-b (b2 words it its own way)
    assert model_vault.get("c0").status == "active"
    assert all(model_vault.get(f"h{k}").status == "active" for k in range(3))
    everything = consolidate_all(model_vault).as_dict()
    assert everything["superseded_count"] == 2  # only s-c was left


def test_cli_consolidate_and_unsupersede(model_vault: Vault) -> None:
    for k, body in enumerate(texts_of("git-hooks")):
        write(model_vault, f"uv{k}", body, created=f"2026-11-30T10:0{k}:00Z")
    model_vault.reindex()
    model_vault.close()
    main = app()  # the memex group with every command, as users run it
    runner = CliRunner()
    base = ["--vault", str(model_vault.root)]
    out = runner.invoke(main, [*base, "consolidate", "--session", "s1", "--dry-run", "--json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert {"merged_groups", "superseded_count", "compression_ratio", "avg_similarity", "groups"} <= set(data)
    assert data["dry_run"] is True and data["superseded_count"] == 2
    out = runner.invoke(main, [*base, "consolidate", "--session", "s1"])
    assert out.exit_code == 0, out.output
    assert "uv2" in out.output
    out = runner.invoke(main, [*base, "unsupersede", "uv0", "--json"])
    assert out.exit_code == 0, out.output
    assert json.loads(out.output)["status"] == "active"
    out = runner.invoke(main, [*base, "consolidate"])
    assert out.exit_code == 1 and "exactly one of --session S or --all" in out.output
    out = runner.invoke(main, [*base, "consolidate", "--all", "--json"])
    assert out.exit_code == 0 and json.loads(out.output)["sessions_seen"] == 1


def test_without_a_model_jaccard_alone_still_consolidates(vault_root: Path) -> None:
    with Vault(vault_root, embedder=None) as v:
        write(v, "a", "Release wheels are built in a manylinux container")
        write(v, "b", "Release wheels are built in a manylinux container image")
        write(v, "c", "The frontend bundle is built with Vite")
        v.reindex()
        report = consolidate(v, "s1")
        assert report.method == "lexical"
        assert [sorted([g.representative, *g.superseded]) for g in report.groups] == [["a", "b"]]


def test_empty_session_name_is_refused(model_vault: Vault) -> None:
    with pytest.raises(InvalidArgument, match="session"):
        consolidate(model_vault, " ")


def test_template_documents_the_defaults_in_code() -> None:
    import re
    import tomllib

    from memex.config import Config
    from memex.consolidation.consolidate import Settings, load_settings
    from memex.decay import DecayPolicy, load_policy

    template = Path(__file__).parent.parent / "vault-template" / ".memex" / "config.toml"
    setting_line = re.compile(r"^# ((?:[a-z_]+ = .+)|(?:\[[a-z_.]+\]))$")
    text = "\n".join(
        m.group(1) if (m := setting_line.match(line)) else line
        for line in template.read_text(encoding="utf-8").splitlines()
    )
    config = Config(raw=tomllib.loads(text))
    assert {"protected_categories", "protected_confidence", "min_candidates"} <= set(config.section("consolidate"))
    assert "rate" in config.section("decay") and "min_confidence" in config.section("recall")
    assert load_settings(config) == Settings()
    assert load_policy(config) == DecayPolicy()


def test_a_file_erased_after_the_plan_is_skipped_not_fatal(model_vault: Vault, monkeypatch: pytest.MonkeyPatch) -> None:
    import memex.consolidation.consolidate as mod

    for k, body in enumerate(texts_of("git-hooks")):
        write(model_vault, f"uv{k}", body, created=f"2026-11-30T10:0{k}:00Z")
    model_vault.reindex()
    real_plan = mod.plan

    def plan_then_erase(*args: Any, **kwargs: Any) -> Any:
        report = real_plan(*args, **kwargs)
        (model_vault.root / model_vault.get("uv0").path).unlink()
        model_vault.reindex()
        return report

    monkeypatch.setattr(mod, "plan", plan_then_erase)
    report = consolidate(model_vault, "s1")
    assert report.superseded_count == 1
    assert [g.superseded for g in report.groups] == [["uv1"]]
    assert any(s.get("id") == "uv0" for s in report.skipped)


def test_noisy_session_through_add_folds_only_what_a_representative_carries(model_vault: Vault) -> None:
    # Through the one write path: dedup may already fold some at add time;
    # consolidation at session end folds the rest, but only into a memory
    # that says everything the hidden one says.
    from memex.dedup.subject import covers

    facts = {"git-hooks": texts_of("git-hooks"), "build-lock": texts_of("build-lock"),
             "db-migrations": texts_of("db-migrations")}
    added = 0
    for bodies in facts.values():
        for body in bodies:
            model_vault.add(body, session="noisy", category="observation")
            added += 1
    model_vault.add("The frontend bundle is built with Vite", session="noisy", category="observation")
    consolidate(model_vault, "noisy")
    visible = model_vault.list(session="noisy")
    everything = model_vault.list(session="noisy", include_superseded=True)
    assert len(visible) < added + 1  # add-time dedup and consolidation folded some
    shown = {h.id: h.body for h in visible}
    hidden = [h for h in everything if h.status == "superseded"]
    # Every hidden one points at a visible representative that carries it.
    assert all(h.superseded_by in shown and covers(shown[h.superseded_by], h.body) for h in hidden)
    assert "The frontend bundle is built with Vite" in shown.values()


def test_the_robot_session_folds_only_what_the_most_confident_carries(model_vault: Vault) -> None:
    """Issue 17's worked example, with the rule of issue 28: ways of saying
    12.5N suits cups fold into the most confident one; a note about
    cylinders or about what is *best* says more and stays visible; the 15N
    observation (a changed value) and the constraint (protected) stay
    untouched."""
    write(model_vault, "cups", "grip_force=12.5N works for cups", confidence=0.9)
    write(model_vault, "copy", "grip force 12.5N works for cups", confidence=0.7, created="2026-11-30T10:01:00Z")
    write(model_vault, "reworded", "for cups, a grip_force of 12.5N works", confidence=0.8,
          created="2026-11-30T10:01:30Z")
    write(model_vault, "cylinders", "12.5N grip force optimal for cylinders", confidence=0.7,
          created="2026-11-30T10:01:00Z")
    write(model_vault, "grasp", "force 12.5N best for cup grasping", confidence=0.8, created="2026-11-30T10:02:00Z")
    write(model_vault, "red", "red objects need 15N force", confidence=0.8, created="2026-11-30T10:03:00Z")
    write(model_vault, "limit", "Never exceed 20N grip force on glass", category="constraint",
          created="2026-11-30T10:04:00Z")
    model_vault.reindex()
    report = consolidate(model_vault, "s1")
    assert [(g.representative, sorted(g.superseded)) for g in report.groups] == [("cups", ["copy", "reworded"])]
    assert superseded_by(model_vault, "copy") == "cups" and superseded_by(model_vault, "reworded") == "cups"
    assert all(model_vault.get(m).status == "active" for m in ("cylinders", "grasp", "red", "limit"))


def test_explain_gives_every_candidate_pair_a_score_and_a_reason(model_vault: Vault) -> None:
    write(model_vault, "cups", "grip_force=12.5N works for cups", confidence=0.9)
    write(model_vault, "copy", "grip force 12.5N works for cups")
    write(model_vault, "grasp", "force 12.5N best for cup grasping")
    write(model_vault, "cups15", "grip_force=15N works for cups")
    write(model_vault, "vite", "The frontend bundle is built with Vite")
    model_vault.reindex()
    report = consolidate(model_vault, "s1", dry_run=True, explain=True)
    pairs = {frozenset((p.a, p.b)): p for p in report.pairs}
    merged = pairs[frozenset(("cups", "copy"))]
    assert merged.merged and merged.reason is None and merged.score >= report.merge_threshold
    # Close enough to merge by score, but each says something the other
    # does not ("best", "grasping" / "works"): kept apart, and said why.
    adds = pairs[frozenset(("cups", "grasp"))]
    assert not adds.merged and adds.reason == "adds" and adds.score >= report.merge_threshold
    changed = pairs[frozenset(("cups", "cups15"))]
    assert not changed.merged and changed.reason == "value" and changed.score >= report.merge_threshold
    assert all(p.reason == "below threshold" for key, p in pairs.items() if "vite" in key)
    assert not consolidate(model_vault, "s1", dry_run=True).pairs  # only when asked


def test_retired_threshold_keys_are_refused_with_the_replacement(model_vault: Vault) -> None:
    from memex.config import load_config
    from memex.errors import ConfigError

    path = model_vault.root / ".memex" / "config.toml"
    path.write_text(path.read_text().replace("[consolidate]\n", "[consolidate]\ncosine_threshold = 0.8\n", 1))
    model_vault.config = load_config(model_vault.root)
    with pytest.raises(ConfigError, match="merge_threshold"):
        consolidate(model_vault, "s1")


def test_cli_explain_shows_each_pair_with_its_reason(model_vault: Vault) -> None:
    write(model_vault, "cups", "grip_force=12.5N works for cups", confidence=0.9)
    write(model_vault, "copy", "grip force 12.5N works for cups")
    write(model_vault, "cups15", "grip_force=15N works for cups")
    model_vault.reindex()
    model_vault.close()
    main = app()  # the memex group with every command, as users run it
    runner = CliRunner()
    base = ["--vault", str(model_vault.root), "consolidate"]
    out = runner.invoke(main, [*base, "--session", "s1", "--dry-run", "--explain"], terminal_width=200)
    assert out.exit_code == 0, out.output
    assert "merged" in out.output and "kept apart: value" in out.output
    data = json.loads(runner.invoke(main, [*base, "--session", "s1", "--dry-run", "--explain", "--json"]).output)
    reasons = {frozenset((p["a"], p["b"])): p["reason"] for p in data["pairs"]}
    assert reasons[frozenset(("cups", "cups15"))] == "value" and reasons[frozenset(("cups", "copy"))] is None
    out = runner.invoke(main, [*base, "--all", "--dry-run", "--explain"], terminal_width=200)
    assert out.exit_code == 0, out.output  # the --all table had no avg_similarity (KeyError)
    assert "kept apart: value" in out.output


def test_merge_threshold_from_the_config_overrides_the_profile(model_vault: Vault) -> None:
    from memex.config import load_config

    for k, body in enumerate(texts_of("git-hooks")):
        write(model_vault, f"uv{k}", body)
    model_vault.reindex()
    assert consolidate(model_vault, "s1", dry_run=True).superseded_count == 2
    path = model_vault.root / ".memex" / "config.toml"
    path.write_text(path.read_text().replace("[consolidate]\n", "[consolidate]\nmerge_threshold = 1.0\n", 1))
    model_vault.config = load_config(model_vault.root)
    report = consolidate(model_vault, "s1", dry_run=True)
    assert report.merge_threshold == 1.0 and report.superseded_count == 0
