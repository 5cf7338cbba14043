"""`memex init --model`: a vault for Chinese (or any) memories in one command."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner

from memex.cli import main
from memex.config import load_config, with_embedding_model
from memex.errors import InvalidArgument
from memex.layout import CONFIG_RELPATH
from memex.vault import Vault, init_vault, template_dir


def _template() -> str:
    return (template_dir() / CONFIG_RELPATH).read_text(encoding="utf-8")


def test_the_templates_commented_default_becomes_the_setting() -> None:
    text = _template()
    out = with_embedding_model(text, "multilingual")
    raw = tomllib.loads(out)
    assert raw["embedding"] == {"model": "multilingual"}
    # Only that line changed: the comments explaining it and every other table stay.
    changed = [(a, b) for a, b in zip(text.splitlines(), out.splitlines()) if a != b]
    assert changed == [('# model = "auto"', 'model = "multilingual"')]
    assert {k: v for k, v in raw.items() if k != "embedding"} == {
        k: v for k, v in tomllib.loads(text).items() if k != "embedding"
    }


def test_a_model_folder_with_awkward_characters_reads_back_as_written() -> None:
    folder = 'C:\\models\\my "mini" 模型'
    assert tomllib.loads(with_embedding_model(_template(), folder))["embedding"]["model"] == folder


def test_a_file_without_the_table_gains_it_and_an_existing_setting_is_replaced() -> None:
    assert tomllib.loads(with_embedding_model('[vault]\ndefault_scope = "user"\n', "none")) == {
        "vault": {"default_scope": "user"},
        "embedding": {"model": "none"},
    }
    text = '[embedding]\nmodel = "auto"\n\n[dedup]\n# model = "x" is not this table\n'
    out = with_embedding_model(text, "none")
    assert tomllib.loads(out) == {"embedding": {"model": "none"}, "dedup": {}}
    assert '# model = "x" is not this table' in out


def test_init_with_a_model_writes_it_and_the_vault_uses_it(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["init", "--no-git", "--model", "none", str(tmp_path / "v")])
    assert result.exit_code == 0, result.output
    assert "Embedding model: none" in result.output
    assert load_config(tmp_path / "v").embedding_model == "none"
    with Vault(tmp_path / "v") as vault:
        assert vault.embedder is None
        vault.add("The user prefers tabs over spaces", scope="user")
        assert [h.body for h in vault.search("tabs")] == ["The user prefers tabs over spaces"]


def test_init_without_a_model_says_which_one_it_uses(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["init", "--no-git", str(tmp_path / "v")])
    assert result.exit_code == 0, result.output
    assert "reads English" in result.output and "--model multilingual" in result.output
    assert tomllib.loads((tmp_path / "v" / CONFIG_RELPATH).read_text(encoding="utf-8"))["embedding"] == {}


@pytest.mark.parametrize("make", ["missing", "empty"])
def test_a_model_that_cannot_load_stops_init_before_anything_is_created(tmp_path: Path, make: str) -> None:
    folder = tmp_path / "models" / "mine"
    if make == "empty":
        folder.mkdir(parents=True)
    result = CliRunner().invoke(main, ["init", "--model", str(folder), str(tmp_path / "v")])
    assert result.exit_code != 0
    assert "--model" in result.output and str(folder) in result.output
    assert "Traceback" not in result.output and isinstance(result.exception, SystemExit)
    assert not (tmp_path / "v").exists()
    with pytest.raises(InvalidArgument) as caught:
        init_vault(tmp_path / "v", git=False, model=str(folder))
    assert caught.value.argument == "--model"


@pytest.mark.model
def test_init_multilingual_gives_a_vault_that_reads_chinese(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["init", "--no-git", "--model", "multilingual", str(tmp_path / "v")])
    assert result.exit_code == 0, result.output
    with Vault(tmp_path / "v") as vault:
        assert vault.embedder is not None and "multilingual" in vault.embedder.model_id
        for text in ("孙浩：我老家是厦门的。", "孙浩：周末我又去下围棋了。", "刘洋：支付网关部署在杭州的机房。"):
            vault.add(text, scope="user")
        # "Where is Sun Hao from?" shares no word with the answer ("my hometown is Xiamen").
        assert vault.search("孙浩是哪里人？")[0].body == "孙浩：我老家是厦门的。"
