"""Plug-ins (memex/plugins.py, docs/plugins.md): a package adds an import
format, an embedding model or an agent integration with one module and an
entry point, without touching memex.

The example package of docs/plugins.md (tests/plugin_example) is installed
here for real (pip, offline, into a folder put on PYTHONPATH: the test venv
itself is left as it was) and used through the ``memex`` program; so is a
package broken in every way memex must survive (tests/plugin_broken).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from memex import plugins
from memex.embedding import embed
from memex.errors import PluginError
from memex.importers import import_path
from memex.vault import Vault, init_vault

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
FACTS = "# what the team agreed\nDeploys go out on Fridays\nThe staging database listens on port 5433\n"


def _install(package: str, target: Path) -> Path:
    """``pip install`` the package folder ``tests/<package>`` into ``target``, offline."""
    done = subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--no-build-isolation",
         "--disable-pip-version-check", "--target", str(target), str(TESTS / package)],
        capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return target


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _install("plugin_example", tmp_path_factory.mktemp("example"))


@pytest.fixture(scope="module")
def broken(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _install("plugin_broken", tmp_path_factory.mktemp("broken"))


def memex(tmp_path: Path, *args: str, path: tuple[Path, ...] = (), stdin: str = "",
          env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """The ``memex`` program in a new process that finds the packages in ``path``."""
    full = {k: v for k, v in os.environ.items() if k not in ("MEMEX_VAULT", "PYTHONPATH", "MEMEX_PLUGINS")}
    full.update(HOME=str(tmp_path / "home"), MEMEX_WARM="0", MEMEX_HOOK_SYNC="1", **(env or {}))
    if path:
        full["PYTHONPATH"] = os.pathsep.join(str(p) for p in path)
    (tmp_path / "home").mkdir(exist_ok=True)
    return subprocess.run([sys.executable, "-c", "from memex.console import run; run()", *args], input=stdin,
                          capture_output=True, text=True, env=full, cwd=tmp_path, timeout=300)


def test_memex_own_entries_are_those_its_pyproject_registers() -> None:
    """memex's own are found without package metadata (BUILTIN); the installed
    metadata says the same, in the same order."""
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["entry-points"]
    assert {group: list(table.items()) for group, table in declared.items()} == {
        group: list(table.items()) for group, table in plugins.BUILTIN.items()}
    for group in plugins.GROUPS:
        for entry in plugins.entries(group):
            assert entry.load() is not None, entry  # each names a real object of the right shape


def test_memex_own_are_used_without_reading_any_package_metadata(tmp_path: Path) -> None:
    """Importing importlib.metadata and scanning the installed packages costs a
    process tens of milliseconds: a search, a hook handler or an import that
    uses only memex's own never loads it, and an add (whose id library
    imports importlib.metadata) never scans."""
    vault = init_vault(tmp_path / "vault", git=False)
    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "from memex import plugins\n"
        "from memex.vault import Vault\n"
        "from memex.importers import candidates\n"
        "from memex.agents import integrations\n"
        f"v = Vault({str(vault)!r})\n"
        "v.search('deploys'); candidates(Path(sys.argv[1]), 'claude-md'); integrations.hook_handler('codex')\n"
        "print('importlib.metadata' in sys.modules, v.embedder is not None)\n"
        "v.add('Deploys go out on Fridays')\n"
        "print(plugins._FOUND == {})\n"
    )
    rules = tmp_path / "CLAUDE.md"
    rules.write_text("- Always run the tests before pushing.\n", encoding="utf-8")
    done = subprocess.run([sys.executable, "-c", code, str(rules)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "True", "True"]


def test_the_example_is_the_one_docs_plugins_md_shows() -> None:
    page = (ROOT / "docs" / "plugins.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```(\w+)\n(.*?)```", page, re.S)
    shown = {lang: text for lang, text in blocks}
    assert shown["python"] == (TESTS / "plugin_example" / "memex_example.py").read_text(encoding="utf-8")
    assert shown["toml"] == (TESTS / "plugin_example" / "pyproject.toml").read_text(encoding="utf-8")
    module_lines = [line for line in shown["python"].splitlines() if line.strip()]
    assert len(module_lines) <= 50  # a page's worth: three plug-ins in one short module


def test_a_format_from_a_plugin_imports_like_memex_own(tmp_path: Path, example: Path) -> None:
    vault = init_vault(tmp_path / "vault", git=False, model="none")
    facts = tmp_path / "team.lines"
    facts.write_text(FACTS, encoding="utf-8")
    listed = memex(tmp_path, "import", "--help", path=(example,))
    assert "lines" in listed.stdout  # --format's choices name it
    done = memex(tmp_path, "--vault", str(vault), "import", str(facts), "--json", path=(example,))
    assert done.returncode == 0 and done.stderr.count("\n") <= 1, done.stderr  # the progress line only
    report = json.loads(done.stdout)
    assert (report["format"], report["source"], report["created"]) == ("lines", "import:lines", 2)
    assert [i["source_ref"] for i in report["items"]] == [f"{facts}#2", f"{facts}#3"]
    again = memex(tmp_path, "--vault", str(vault), "import", str(facts), "--format", "lines", "--json",
                  path=(example,))
    assert json.loads(again.stdout)["duplicate"] == 2  # the same write path: dedup
    # Without the package, the name is unknown and memex says which it knows.
    gone = memex(tmp_path, "--vault", str(vault), "import", str(facts), "--format", "lines")
    assert gone.returncode == 2 and "'lines' is not one of" in gone.stderr and "claude-md" in gone.stderr


def test_a_model_from_a_plugin_serves_a_vault(tmp_path: Path, example: Path) -> None:
    root = tmp_path / "vault"
    made = memex(tmp_path, "init", str(root), "--no-git", "--model", "toy", path=(example,))
    assert made.returncode == 0, made.stderr
    facts = tmp_path / "team.lines"
    facts.write_text(FACTS, encoding="utf-8")
    assert memex(tmp_path, "--vault", str(root), "import", str(facts), path=(example,)).returncode == 0
    stats = json.loads(memex(tmp_path, "--vault", str(root), "stats", "--json", path=(example,)).stdout)
    assert stats["model"] == "toy-hashed-words (64 dimensions)" and stats["embedded"] == 2
    found = memex(tmp_path, "--vault", str(root), "search", "staging port", "--json", path=(example,))
    assert json.loads(found.stdout)[0]["body"].startswith("The staging database")
    # Without the package, the vault's setting names a model memex does not know: one line says so.
    bare = memex(tmp_path, "--vault", str(root), "stats")
    assert bare.returncode == 1 and bare.stderr.splitlines() == [
        "Error: [embedding] model: 'toy' is not 'auto', 'multilingual', 'none', an installed model plug-in "
        "(`memex plugins`) or a model folder"]


def test_an_agent_from_a_plugin_installs_answers_and_uninstalls(tmp_path: Path, example: Path) -> None:
    vault = init_vault(tmp_path / "vault", git=False, model="none")
    with Vault(vault, embedder=None) as v:
        v.add("The staging database listens on port 5433")
    listed = memex(tmp_path, "install", "--help", path=(example,))
    assert "notebook" in listed.stdout and "claude-code" in listed.stdout
    done = memex(tmp_path, "--vault", str(vault), "install", "notebook", "--json", path=(example,))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["status"] == "installed"
    hooks = json.loads((tmp_path / "home" / ".notebook" / "hooks.json").read_text())
    assert hooks["on_prompt"][-4:] == ["--vault", str(vault.resolve()), "hook", "notebook"]
    again = memex(tmp_path, "--vault", str(vault), "install", "notebook", "--json", path=(example,))
    assert json.loads(again.stdout)["status"] == "unchanged"
    answer = memex(tmp_path, *hooks["on_prompt"][1:], stdin=json.dumps({"prompt": "which port for staging?"}),
                   path=(example,))
    assert answer.returncode == 0 and answer.stderr == "", answer.stderr
    assert json.loads(answer.stdout) == {"memories": ["The staging database listens on port 5433"]}
    removed = memex(tmp_path, "uninstall", "notebook", "--json", path=(example,))
    assert json.loads(removed.stdout)["removed"] == 1
    assert not (tmp_path / "home" / ".notebook" / "hooks.json").exists()


def test_memex_plugins_lists_every_entry_and_where_it_comes_from(tmp_path: Path, example: Path) -> None:
    done = memex(tmp_path, "plugins", "--json", path=(example,))
    assert done.returncode == 0, done.stderr
    rows = {(r["group"], r["name"]): r for r in json.loads(done.stdout)}
    assert rows[("memex.importers", "lines")]["from"] == "memex-example 0.1.0"
    assert rows[("memex.models", "toy")]["status"] == rows[("memex.agents", "notebook")]["status"] == "ok"
    assert rows[("memex.models", "auto")]["from"] == "memex"
    off = json.loads(memex(tmp_path, "plugins", "--json", path=(example,), env={"MEMEX_PLUGINS": "0"}).stdout)
    assert {r["from"] for r in off} == {"memex"}


def test_a_broken_plugin_is_one_line_and_never_stops_memex_own(tmp_path: Path, example: Path, broken: Path) -> None:
    both = (example, broken)
    vault = init_vault(tmp_path / "vault", git=False, model="none")
    facts = tmp_path / "team.lines"
    facts.write_text(FACTS, encoding="utf-8")
    rules = tmp_path / "CLAUDE.md"
    rules.write_text("- Always run the tests before pushing.\n", encoding="utf-8")
    # memex's own format keeps its name (the plug-in taking it is ignored), and the good plug-in works.
    for path, fmt, made in ((rules, "claude-md", 1), (facts, "lines", 2)):
        done = memex(tmp_path, "--vault", str(vault), "import", str(path), "--json", path=both)
        assert done.returncode == 0 and json.loads(done.stdout)["format"] == fmt, done.stderr
        assert json.loads(done.stdout)["created"] == made
        assert "Traceback" not in done.stderr
        said = [line for line in done.stderr.splitlines() if line.startswith("memex: ")]
        assert "memex: plug-in 'claude-md' (memex.importers, from memex-broken 0.1.0) is ignored: " \
               "'claude-md' is memex's own" in said
        assert any(line.startswith("memex: plug-in 'gone' (memex.importers, from memex-broken 0.1.0) cannot be "
                                   "loaded (ModuleNotFoundError") for line in said), said
        assert len(said) == len(set(said))  # each once
    into = ("--vault", str(vault))
    failing = {
        (*into, "import", str(facts), "--format", "sneaky"): "plug-in 'sneaky' (memex.importers, from "
                                                              "memex-broken 0.1.0) failed reading",
        (*into, "import", str(facts), "--format", "noread"): "is not an import format",
        ("init", str(tmp_path / "v2"), "--model", "failing"): "failed to build its model (RuntimeError: the toy "
                                                               "weights are gone)",
        ("init", str(tmp_path / "v3"), "--model", "shapeless"): "built a model without model_id",
        ("install", "grumpy"): "plug-in 'grumpy' (memex.agents, from memex-broken 0.1.0) failed to install "
                               "(OSError: grumpy cannot write its settings)",
        ("uninstall", "grumpy"): "uninstall returned str, not a dict",
        ("install", "ghost"): "plug-in 'ghost' (memex.agents, from memex-broken 0.1.0) cannot be loaded",
    }
    for args, why in failing.items():
        done = memex(tmp_path, *args, path=both)
        assert done.returncode != 0 and why in done.stderr and "Traceback" not in done.stderr, (args, done.stderr)
        assert not (tmp_path / "v2").exists() and not (tmp_path / "v3").exists()
    assert json.loads(memex(tmp_path, "--vault", str(vault), "stats", "--json").stdout)["memories"] == 3
    # A hook never fails its agent: one line, exit 0.
    for agent, why in (("grumpy", "failed to answer (ValueError: grumpy will not answer)"),
                       ("ghost", "cannot be loaded (AttributeError")):
        done = memex(tmp_path, "--vault", str(vault), "hook", agent, stdin="{}", path=both)
        assert done.returncode == 0 and done.stdout == "", done.stderr
        [line] = [x for x in done.stderr.splitlines() if x.startswith(f"memex hook {agent}: ")]
        assert why in line and line.endswith("(memex skipped; the agent continues)")
    listed = memex(tmp_path, "plugins", "--json", path=both)
    status = {r["name"]: r["status"] for r in json.loads(listed.stdout)}
    assert listed.returncode == 1 and status["lines"] == status["claude-md"] == "ok"
    assert status["gone"].startswith("cannot be loaded (ModuleNotFoundError")


def test_a_plugin_found_in_process(monkeypatch: pytest.MonkeyPatch, example: Path, tmp_path: Path) -> None:
    """The library API too: the registry reads a package put on the path (after forget())."""
    monkeypatch.syspath_prepend(str(example))
    plugins.forget()
    try:
        assert plugins.find(plugins.MODELS, "toy") is not None
        model = embed.load_embedder("toy")
        assert model is not None and model.model_id == "toy-hashed-words"
        vault = init_vault(tmp_path / "vault", git=False)
        facts = tmp_path / "team.lines"
        facts.write_text(FACTS, encoding="utf-8")
        with Vault(vault, embedder=model) as v:
            report = import_path(v, facts)
            assert (report.format, report.created) == ("lines", 2)
            assert v.search("staging port", limit=1)[0].body.startswith("The staging database")
        with pytest.raises(PluginError, match="no agent integration is called 'nobody'"):
            from memex.agents import integrations

            integrations.load("nobody")
    finally:
        embed._LOADED.pop("toy", None)
        plugins.forget()
