"""memex installs under a name of its own (``memex-vault``: ``memex`` on the
package registry is another project), every install hint names it, and the
two README commands say what they do, how long it takes and what they
download (README.md, "Two commands" and "Install")."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner

from memex import distribution, health
from memex.cli import app
from memex.distribution import DISTRIBUTION
from memex.embedding import e5weights
from memex.errors import ConfigError
from memex.vault import Vault

ROOT = Path(__file__).resolve().parent.parent
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def _texts() -> dict[str, str]:
    """Every file a user reads an install hint in: README, docs, the vault
    template, memex's own source (the messages it prints)."""
    files = [ROOT / "README.md", *(ROOT / "docs").glob("*.md"), *(ROOT / "vault-template").rglob("*"),
             *(ROOT / "memex").rglob("*.py"), *(ROOT / "scripts").glob("*.sh")]
    return {str(f.relative_to(ROOT)): f.read_text(encoding="utf-8") for f in files if f.is_file()}


def test_the_distribution_is_not_the_registrys_other_memex() -> None:
    assert PROJECT["name"] == DISTRIBUTION == "memex-vault"
    assert list(PROJECT["scripts"]) == ["memex"]  # the command keeps its name


def test_every_install_hint_names_the_distribution() -> None:
    wrong = {where: hits for where, text in _texts().items()
             if (hits := re.findall(r"pip install[^\n`]*?\bmemex(?:\[[^\]]*\])?['\s`]", text))}
    assert wrong == {}
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    # What works from the registry and what from a checkout.
    for command in ("pip install memex-vault", "pip install 'memex-vault[multilingual]'", "pip install -e ."):
        assert command in readme


def test_hints_fit_how_memex_was_installed(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    assert distribution.checkout_root() == ROOT  # the tests run from the checkout
    here = distribution.install_hint("multilingual")
    assert f"pip install -e '{ROOT}[multilingual]'" in here and "pip install 'memex-vault[multilingual]'" in here
    monkeypatch.setattr(distribution, "checkout_root", lambda: None)  # an installed wheel
    assert distribution.install_hint("postgres") == "pip install 'memex-vault[postgres]'"


def test_doctor_and_the_model_error_name_the_distribution(vault: Vault, monkeypatch: pytest.MonkeyPatch) -> None:
    for i in range(6):
        vault.add(f"数据库第{i}号使用 SQLite，开启 WAL 模式以便多个进程共享写入")
    hint = health.model_hint(vault)
    assert hint is not None and "memex-vault[multilingual]" in hint
    monkeypatch.setattr(e5weights.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ConfigError, match=re.escape("memex-vault[multilingual]")):
        e5weights.locate()


def test_version_comes_from_the_installed_distribution() -> None:
    result = CliRunner().invoke(app(), ["--version"])
    assert result.exit_code == 0 and result.output.startswith("memex, version ")
    from memex.agents.mcp_start import version

    assert version() == PROJECT["version"]


def test_no_tracked_symlink_points_outside_the_checkout() -> None:
    tracked = subprocess.run(["git", "ls-files", "-s"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    links = [line.split("\t", 1)[1] for line in tracked.splitlines() if line.startswith("120000")]
    outside = [p for p in links if not (ROOT / p).resolve().is_relative_to(ROOT)]
    assert outside == []


# -- the README's two commands --------------------------------------------------------


def test_the_test_script_shows_skip_reasons_and_says_what_it_downloads() -> None:
    script = (ROOT / "scripts" / "test.sh").read_text(encoding="utf-8")
    pytest_line = next(line for line in script.splitlines() if "-m pytest" in line)
    assert re.search(r"\s-r\w*s", pytest_line), pytest_line
    for said in ("minutes", "MB of Python wheels", "Node wheel", "npm packages", "MEMEX_TEST_NO_NODE=1"):
        assert said in script
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    two = readme.split("## Two commands", 1)[1].split("\n## ", 1)[0]
    assert re.search(r"about \d+ minutes on an idle 2-core machine", two), two
    for said in ("525 MB", "Node", "npm", "openclaw", "MEMEX_TEST_NO_NODE=1", "100 MB",
                 "MEMEX_TEST_NO_CLIENTS=1", "Claude Code and Codex"):
        assert said in two, said
    assert "only Python 3.11+ and access to PyPI" not in readme


@pytest.mark.skipif(sys.platform == "win32", reason="bash script")
def test_the_demo_script_announces_each_step(tmp_path: Path) -> None:
    """demo.sh on a checkout whose .venv is installed already: it says so,
    runs the demo and says when it is done, each step with its time."""
    copy = tmp_path / "checkout"
    (copy / "scripts").mkdir(parents=True)
    (copy / "scripts" / "demo.sh").write_text((ROOT / "scripts" / "demo.sh").read_text())
    (copy / "pyproject.toml").write_text("[project]\nname = 'memex-vault'\n")
    bin_dir = copy / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "python").symlink_to(sys.executable)
    (bin_dir / "memex").write_text("#!/bin/sh\necho demo ran \"$@\"\n")
    (bin_dir / "memex").chmod(0o755)
    import hashlib

    (copy / ".venv" / ".memex-demo-installed").write_text(
        hashlib.sha256((copy / "pyproject.toml").read_bytes()).hexdigest() + "\n")
    done = subprocess.run(["bash", "scripts/demo.sh", "--keep"], cwd=copy, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "demo ran demo --keep\n"
    steps = done.stderr.splitlines()
    assert all(re.match(r"\[demo\.sh +\d+s\] ", s) for s in steps), steps
    assert "up to date" in steps[0] and "running memex demo" in steps[1] and steps[-1].endswith("done")
