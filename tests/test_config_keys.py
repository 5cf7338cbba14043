"""A typo in .memex/config.toml is named (doctor), not silently ignored."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from memex.cli import app
from memex.config import known_keys, unknown_keys
from memex.config_trust import MACHINE_ONLY, machine_only
from memex.context.settings import load_settings
from memex.errors import ConfigError
from memex.layout import CONFIG_LOCAL_RELPATH, CONFIG_RELPATH
from memex.vault import Vault, template_dir
from tests.hook_helpers import lexical_only


def _template() -> str:
    return (template_dir() / CONFIG_RELPATH).read_text(encoding="utf-8")


def _local_template() -> str:
    return (template_dir() / CONFIG_LOCAL_RELPATH).read_text(encoding="utf-8")


def _uncommented(template: str) -> dict[str, Any]:
    text = re.sub(r"^# ([a-z_]+ = .*)$", r"\1", template, flags=re.M)
    return tomllib.loads(text.replace("# [decay.categories]", "[decay.categories]"))


def test_every_key_the_template_documents_is_known() -> None:
    """Uncommenting every default of the templates leaves nothing unknown."""
    raw = _uncommented(_template())
    assert raw["recall"]["recall_limit"] == 6 and raw["decay"]["categories"] == {"constraint": 0.0}
    known = known_keys(_template(), _local_template())
    assert unknown_keys(raw, known) == []
    assert unknown_keys(_uncommented(_local_template()), known) == []


def test_the_local_template_documents_exactly_the_settings_only_this_machine_may_set() -> None:
    """The shared template holds none of them; the local one all of them, and nothing else."""
    shared, local = _uncommented(_template()), _uncommented(_local_template())
    assert [(t, k) for t, keys in shared.items() for k, v in keys.items() if machine_only(t, k, v)] == []
    documented = {(t, k) for t, keys in local.items() for k, v in keys.items() if machine_only(t, k, v)}
    assert documented == {(t, k) for t, keys in MACHINE_ONLY.items() for k in keys} | {("embedding", "model")}
    assert {(t, k) for t, keys in local.items() for k in keys} == documented


def test_a_typo_is_named_with_the_nearest_key() -> None:
    raw = {
        "recall": {"recal_limit": 3, "bogus_key": 1},
        "embeding": {"model": "multilingual"},
        "consolidate": {"merge_threshold": 0.9},  # named in the template's prose only
        "decay": {"categories": {"decision": 0.02}},  # the user's own category names
    }
    assert unknown_keys(raw, known_keys(_template())) == [
        "unknown key [recall] recal_limit; did you mean recall_limit?",
        "unknown key [recall] bogus_key",
        "unknown table [embeding]; did you mean [embedding]?",
    ]


def test_doctor_names_an_unknown_key_and_stays_clean(vault_root: Path) -> None:
    """Found from outside: `bogus_key` in [recall] was ignored without a word."""
    lexical_only(vault_root)
    config = vault_root / CONFIG_RELPATH
    config.write_text(config.read_text(encoding="utf-8").replace("[recall]", "[recall]\nrecal_limit = 3", 1),
                      encoding="utf-8")
    runner = CliRunner()
    done = runner.invoke(app(), ["--vault", str(vault_root), "doctor"])
    assert done.exit_code == 0, done.output
    assert "config: .memex/config.toml: unknown key [recall] recal_limit; did you mean recall_limit?" in done.stdout
    as_json = json.loads(runner.invoke(app(), ["--vault", str(vault_root), "doctor", "--json"]).stdout)
    assert as_json["config"] == [
        ".memex/config.toml: unknown key [recall] recal_limit; did you mean recall_limit?; memex ignores it"
    ]
    assert as_json["clean"] is True


@pytest.mark.parametrize("key", ["recall_score_threshold", "recall_cosine_threshold"])
def test_a_recall_threshold_out_of_range_is_a_config_error(vault_root: Path, key: str) -> None:
    """Found from outside: recall_score_threshold = 7 was accepted (and recalled nothing)."""
    lexical_only(vault_root)
    config = vault_root / CONFIG_RELPATH
    config.write_text(config.read_text(encoding="utf-8").replace("[recall]", f"[recall]\n{key} = 7", 1),
                      encoding="utf-8")
    with Vault(vault_root) as vault, pytest.raises(ConfigError, match=f"{key} must be from 0 to 1, got 7"):
        load_settings(vault)


def test_a_config_nested_too_deeply_is_a_config_error_naming_it(vault_root: Path) -> None:
    """Found from outside: `.memex/config.toml` (shared through git: a teammate
    can push any bytes) with an array nested 100,000 deep made every command
    print a RecursionError traceback from tomllib."""
    config = vault_root / CONFIG_RELPATH
    config.write_text(config.read_text(encoding="utf-8") + "\nx = " + "[" * 100_000 + "]" * 100_000 + "\n",
                      encoding="utf-8")
    with pytest.raises(ConfigError, match="nested too deeply") as caught:
        Vault(vault_root)
    assert str(config) in str(caught.value)
    result = CliRunner().invoke(app(), ["--vault", str(vault_root), "list"])
    assert result.exit_code == 1 and "Traceback" not in result.output and "nested too deeply" in result.output
