"""Confidence decay: computed when read, reset by a recall, per category."""

from __future__ import annotations

import datetime as dt
import json
import math
from pathlib import Path

import pytest
from click.testing import CliRunner

from memex import decay
from memex.cli import app
from memex.config import Config, load_config
from memex.errors import ConfigError
from memex.vault import Vault
from memex.decay import confidence_now

# Run on the SQLite and on the PostgreSQL index (docs/postgres.md).
pytestmark = pytest.mark.both_backends


def _iso(days_ago: float) -> str:
    moment = dt.datetime.now(dt.timezone.utc) - dt.timedelta(days=days_ago)
    return moment.replace(microsecond=0).isoformat().replace("+00:00", "Z")


def _write(vault: Vault, name: str, body: str, **meta: object) -> Path:
    folder = vault.root / "memories" / "user"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.md"
    head = "".join(f"{k}: {v}\n" for k, v in meta.items())
    path.write_text(f"---\nid: {name}\n{head}---\n{body}\n", encoding="utf-8")
    return path


def _set_last_access(vault: Vault, memory_id: str, days_ago: float) -> None:
    """A recall ``days_ago`` days back, recorded as ``Vault.record_access`` records one (at that stamp)."""
    stamp = _iso(days_ago)
    local = vault.local_store
    with local.write_txn():
        local.record_use([memory_id], stamp)
    vault.backend.record_use([memory_id], stamp)  # search reads usage from a shared index


def test_100_days_is_recalled_and_115_is_not(model_vault: Vault) -> None:
    # The schedule: 0.9 at 1%/day against a floor of 0.3.
    at_100 = 0.9 * (1 - 0.01) ** 100
    at_115 = 0.9 * (1 - 0.01) ** 115
    assert at_100 >= 0.3 > at_115
    _write(model_vault, "kept", "The staging cluster runs on spot instances", confidence=0.9, created=_iso(400))
    _write(model_vault, "faded", "The staging database runs on spot instances too", confidence=0.9, created=_iso(400))
    model_vault.reindex()
    _set_last_access(model_vault, "kept", 100)
    _set_last_access(model_vault, "faded", 115)

    hits = {h.id: h for h in model_vault.search("staging spot instances")}
    assert hits["kept"].effective_confidence == pytest.approx(at_100, rel=1e-3)
    assert hits["faded"].effective_confidence == pytest.approx(at_115, rel=1e-3)

    recalled = [h.id for h in model_vault.recall("staging spot instances")]
    assert "kept" in recalled
    assert "faded" not in recalled
    # Search still shows both: decay filters recall, it hides nothing else.
    assert {"kept", "faded"} <= set(hits)


def test_a_recall_resets_the_clock(vault: Vault) -> None:
    _write(vault, "m1", "The release checklist lives in docs/release.md", confidence=0.9, created=_iso(100))
    vault.reindex()
    before = confidence_now(vault.store, vault.config, "m1")
    assert before == pytest.approx(0.9 * 0.99**100, rel=1e-3)
    assert [h.id for h in vault.recall("release checklist")] == ["m1"]
    assert confidence_now(vault.store, vault.config, "m1") == pytest.approx(0.9, abs=1e-4)


def test_hand_written_file_with_old_created_decays_and_file_is_untouched(vault: Vault) -> None:
    path = _write(vault, "old", "The VPN config is in the ops wiki", created="2020-01-01")
    vault.reindex()
    raw = path.read_bytes()
    assert confidence_now(vault.store, vault.config, "old") < 0.01
    assert vault.recall("VPN config ops wiki") == []
    assert path.read_bytes() == raw  # decay is never written back


def test_hand_written_file_without_frontmatter_uses_its_mtime(vault: Vault) -> None:
    folder = vault.root / "memories" / "user"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "plain.md").write_text("Coffee machine is on the third floor\n", encoding="utf-8")
    vault.reindex()
    memory_id = vault.list()[0].id
    assert confidence_now(vault.store, vault.config, memory_id) == pytest.approx(0.8, abs=1e-3)


def test_constraints_do_not_decay_and_category_rates_come_from_config(vault: Vault) -> None:
    (vault.root / ".memex" / "config.toml").write_text(
        "[decay]\nrate = 0.02\n[decay.categories]\npreference = 0.001\n", encoding="utf-8"
    )
    vault.config = load_config(vault.root)
    _write(vault, "c", "Never force-push to main", category="constraint", confidence=0.9, created=_iso(1000))
    _write(vault, "p", "Prefers pytest over unittest", category="preference", confidence=0.9, created=_iso(80))
    _write(vault, "o", "The linter is ruff", category="observation", confidence=0.9, created=_iso(80))
    vault.reindex()
    assert confidence_now(vault.store, vault.config, "c") == pytest.approx(0.9)
    assert confidence_now(vault.store, vault.config, "p") == pytest.approx(0.9 * 0.999**80, rel=1e-3)
    assert confidence_now(vault.store, vault.config, "o") == pytest.approx(0.9 * 0.98**80, rel=1e-3)
    assert 0.9 * 0.98**80 < 0.3  # so the observation has faded; the others have not
    recalled = {h.id for h in vault.recall("force-push main pytest ruff")}
    assert recalled == {"c", "p"}


def test_min_confidence_is_configurable(vault: Vault) -> None:
    _write(vault, "m", "The cache lives in /var/cache/app", confidence=0.9, created=_iso(30))
    vault.reindex()
    assert 0.9 * 0.99**30 < 0.7
    vault.config = Config(raw={"recall": {"min_confidence": 0.7}})
    assert vault.recall("cache var app") == []
    vault.config = Config()
    assert [h.id for h in vault.recall("cache var app")] == ["m"]


@pytest.mark.parametrize(
    "raw, needle",
    [
        ({"decay": {"rate": 1.5}}, "[decay] rate"),
        ({"decay": {"rate": "fast"}}, "rate must be float"),
        ({"decay": {"categories": {"note": "x"}}}, "[decay.categories] note"),
        ({"decay": {"categories": 3}}, "[decay.categories] must be a table"),
        ({"recall": {"min_confidence": 2.0}}, "min_confidence"),
    ],
)
def test_bad_settings_name_the_key(raw: dict[str, object], needle: str) -> None:
    with pytest.raises(ConfigError, match=None) as info:
        decay.load_policy(Config(raw=raw))
    assert needle in str(info.value)


def test_arithmetic_and_schedule() -> None:
    policy = decay.DecayPolicy()
    now = dt.datetime(2026, 11, 30, tzinfo=dt.timezone.utc)
    value = decay.effective_confidence(0.8, None, None, "2026-10-31T00:00:00Z", policy, now)
    assert value == pytest.approx(0.8 * 0.99**30)
    # The last access wins over created; a future time means no decay.
    assert decay.effective_confidence(0.8, None, "2026-11-30T00:00:00Z", "2020-01-01", policy, now) == 0.8
    assert decay.effective_confidence(0.8, None, None, "2027-01-01", policy, now) == 0.8
    # An unreadable date never hides a memory.
    assert decay.effective_confidence(0.8, None, None, "last tuesday", policy, now) == 0.8
    days = decay.days_until(0.9, None, policy)
    assert days is not None and 109 < days < 110
    assert decay.days_until(0.9, "constraint", policy) is None


def test_show_and_search_json_include_effective_confidence(vault: Vault) -> None:
    _write(vault, "m", "The on-call rota is in PagerDuty", confidence=0.9, created=_iso(10))
    vault.reindex()
    main = app()  # the memex group with every command, as users run it
    runner = CliRunner()
    out = runner.invoke(main, ["--vault", str(vault.root), "show", "m", "--json"])
    assert out.exit_code == 0, out.output
    assert json.loads(out.output)["effective_confidence"] == pytest.approx(0.9 * 0.99**10, rel=1e-3)
    out = runner.invoke(main, ["--vault", str(vault.root), "search", "on-call rota", "--json"])
    assert out.exit_code == 0, out.output
    assert json.loads(out.output)[0]["effective_confidence"] == pytest.approx(0.9 * 0.99**10, rel=1e-3)


def test_fading_lists_the_schedule(vault: Vault) -> None:
    _write(vault, "gone", "The old build server was jenkins-01", confidence=0.9, created=_iso(200))
    _write(vault, "soon", "The staging URL is staging.example.org", confidence=0.9, created=_iso(100))
    _write(vault, "fresh", "The release manager this month is Dana", confidence=0.9, created=_iso(1))
    _write(vault, "rule", "Never deploy on Fridays", category="constraint", confidence=0.9, created=_iso(900))
    vault.reindex()
    policy = decay.load_policy(vault.config)
    plan = {f.id: f for f in decay.schedule(vault.store, policy)}
    assert plan["gone"].faded
    # 0.9 x 0.99^100 today; days until x 0.99^d falls to 0.3.
    expected = math.log(0.3 / (0.9 * 0.99**100)) / math.log(0.99)
    assert 8 < expected < 10
    assert plan["soon"].days_left == pytest.approx(expected, abs=0.05)
    assert plan["rule"].days_left is None
    main = app()  # the memex group with every command, as users run it
    out = CliRunner().invoke(main, ["--vault", str(vault.root), "fading", "--within", "30", "--json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert [m["id"] for m in data["memories"]] == ["gone", "soon"]
    assert data["memories"][0]["faded"] is True
    assert data["policy"]["min_confidence"] == 0.3


def test_list_json_includes_effective_confidence(vault: Vault) -> None:
    _write(vault, "m", "The design doc is in docs/design.md", confidence=0.5, created=_iso(20))
    vault.reindex()
    [hit] = vault.list()
    assert hit.effective_confidence == pytest.approx(0.5 * 0.99**20, rel=1e-3)
