"""Start-up of the CLI (docs/benchmarks.md): a command imports only its module,
and --version / --help import nothing heavy."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from memex import cli
from memex.agents import warm
from memex.vault import Vault
from tests.fakes import HashEmbedder
from tests.hook_helpers import set_config
from tests.watchkit import wait_for


def _run(args: list[str]) -> tuple[str, set[str]]:
    """Run the CLI in a new process: what it printed, and the modules it imported."""
    code = (
        "import sys\n"
        "from memex.cli import run\n"
        f"try:\n    run({args!r})\nexcept SystemExit:\n    pass\n"
        "sys.stderr.write('\\nMODULES ' + ' '.join(sorted(sys.modules)))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    return done.stdout, set(done.stderr.rpartition("MODULES ")[2].split())


def _modules_after(args: list[str]) -> set[str]:
    return _run(args)[1]


def test_every_command_is_in_the_lazy_map() -> None:
    """A command missing from COMMAND_MODULES would still run, only slower:
    keep the map complete and pointing at the module that registers it."""
    group = cli.app()
    for name in group.commands:
        module = cli.COMMAND_MODULES.get(name)
        assert module is not None, f"{name} is not in memex.cli.COMMAND_MODULES"
        assert group.commands[name].callback is not None
        registering = sys.modules[f"memex.cli.{module}"]
        assert any(v is group.commands[name] for v in vars(registering).values()), (name, module)
    assert set(cli.COMMAND_MODULES) == set(group.commands)


def test_version_imports_nothing_heavy() -> None:
    modules = _modules_after(["--version"])
    assert "memex.cli" in modules
    for heavy in ("numpy", "apsw", "memex.vault", "memex.cli.core", "memex.watch.watcher", "fastembed", "onnxruntime"):
        assert heavy not in modules, heavy


def test_a_command_imports_only_its_own_module(tmp_path: pytest.TempPathFactory) -> None:
    modules = _modules_after(["--vault", str(tmp_path), "list"])  # not a vault: an error, after loading
    assert "memex.cli.core" in modules
    for other in ("memex.cli.watch", "memex.cli.context", "memex.cli.agents", "memex.watch.watcher", "fastembed"):
        assert other not in modules, other


def test_help_still_lists_every_command() -> None:
    out = CliRunner().invoke(cli.main, ["--help"]).output
    for name in cli.COMMAND_MODULES:
        if name in cli.app().commands:
            assert f"  {name}" in out, name


def test_an_unknown_command_is_still_an_error_with_a_hint() -> None:
    result = subprocess.run(
        [sys.executable, "-c", "from memex.cli import run; run(['serach', 'x'])"],
        capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 2
    assert "No such command 'serach'" in result.stderr
    assert "Traceback" not in result.stderr
    assert isinstance(cli.main, click.Group)


def test_search_and_add_embed_through_a_running_warm_server(
    vault_root: Path, fake_embedder: HashEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A one-shot command uses the model server an agent session keeps
    (memex/agents/warm.py) and loads no model of its own."""
    monkeypatch.delenv("MEMEX_WARM", raising=False)
    asked: list[str] = []

    class Counting(HashEmbedder):
        def embed(self, texts):  # type: ignore[no-untyped-def]
            asked.extend(texts)
            return super().embed(texts)

    served = Counting()
    monkeypatch.setattr(warm.embed, "load_embedder", lambda setting: served)
    set_config(vault_root, "agents", "warm_seconds = 3")
    with Vault(vault_root, embedder=fake_embedder) as vault:
        vault.add("Blue-green deploys happen on Fridays", scope="user")
    server = threading.Thread(target=warm.serve, args=(vault_root,), daemon=True)
    server.start()
    with Vault(vault_root) as vault:
        wait_for(lambda: warm.connect(vault), 30, "the warm server to answer")
    out, modules = _run(["--vault", str(vault_root), "search", "when do we deploy", "--json"])
    assert "Blue-green deploys happen on Fridays" in out
    assert "when do we deploy" in asked
    assert "onnxruntime" not in modules and "fastembed" not in modules
    out, modules = _run(["--vault", str(vault_root), "add", "Staging runs on port 5433", "--json"])
    assert '"created"' in out and "Staging runs on port 5433" in asked
    assert "onnxruntime" not in modules
    server.join(30)


@pytest.mark.model
def test_a_running_watcher_serves_its_model_to_one_shot_commands(
    vault_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`memex watch` holds the model anyway; a `memex search` meanwhile embeds
    through it and loads no model, and the watcher removes its socket on exit."""
    import signal

    monkeypatch.delenv("MEMEX_WARM", raising=False)
    with Vault(vault_root) as vault:
        vault.add("Blue-green deploys happen on Fridays", scope="user")
    watcher = subprocess.Popen(
        [sys.executable, "-c", "from memex.cli import run; run()", "--vault", str(vault_root), "watch"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )
    try:
        def serving() -> bool:
            assert watcher.poll() is None, watcher.communicate()[1]  # a watcher that died says why
            return warm.connect(vault) is not None

        with Vault(vault_root) as vault:
            wait_for(serving, 120, "the watcher to serve its model")
        out, modules = _run(["--vault", str(vault_root), "search", "when do we deploy", "--json"])
        assert "Blue-green deploys happen on Fridays" in out
        assert "onnxruntime" not in modules
        watcher.send_signal(signal.SIGTERM)
        assert watcher.wait(60) == 0
    finally:
        if watcher.poll() is None:
            watcher.kill()
        watcher.communicate(timeout=60)
    path = warm.socket_path(vault_root)
    assert path is not None and not path.exists()


def test_the_model_head_start_never_speaks_for_the_command(vault_root: Path, tmp_path: Path) -> None:
    """The preload thread (memex/cli/_preload.py) swallows its failures: a broken
    config or a stale warm-server socket gives the command's own one-line error
    or answer, never a thread's traceback."""
    config = vault_root / ".memex" / "config.toml"
    good = config.read_text(encoding="utf-8")
    config.write_text(good + "\n[embedding\n", encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-c", "from memex.cli import run; run()", "--vault", str(vault_root), "search", "x"],
        capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 1 and done.stderr.startswith("Error: ") and "config.toml" in done.stderr
    assert "Traceback" not in done.stderr and "Exception in thread" not in done.stderr
    config.write_text(good.replace('# model = "auto"', 'model = "none"'), encoding="utf-8")
    path = warm.socket_path(vault_root)
    assert path is not None
    path.parent.mkdir(mode=0o700, exist_ok=True)
    path.write_text("left behind by a killed server")
    try:
        out, _ = _run(["--vault", str(vault_root), "search", "x", "--json"])
    finally:
        path.unlink()
    assert out.strip() == "[]"


@pytest.mark.model
def test_search_imports_only_what_it_needs(vault_root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A cold one-shot `memex search` (the real model, its answer printed as a
    table) imports neither `memex stats` / `doctor`'s health checks, nor the
    write path's dedup checks, nor numpy's masked arrays (np.median) or
    numpy.typing (sqlite_vec's own __init__), nor difflib, nor PyYAML (it reads
    no memory file): start-up CPU (docs/benchmarks.md)."""
    monkeypatch.setenv("MEMEX_PRELOAD", "0")  # the head start's thread imports the same modules
    with Vault(vault_root) as vault:
        vault.add("Blue-green deploys happen on Fridays", scope="user")
        vault.add("The billing service is owned by the payments team", scope="user")
    out, modules = _run(["--vault", str(vault_root), "search", "who owns billing"])
    assert "payments team" in out
    assert "onnxruntime" in modules and "memex.search.fusion" in modules  # the path ran whole
    for unneeded in ("memex.health", "memex.dedup.pipeline", "memex.dedup.values", "numpy.ma", "numpy.typing", "sqlite_vec",
                     "difflib", "yaml", "frontmatter"):
        assert unneeded not in modules, unneeded


def test_the_vector_extension_is_the_one_sqlite_vec_names() -> None:
    """memex.store.sqlite.schema finds sqlite-vec's library without importing the package; it
    must be the file the package itself would load."""
    import sqlite_vec

    from memex.store.sqlite.schema import vec_extension_path

    assert vec_extension_path() == sqlite_vec.loadable_path()


@pytest.mark.model
def test_the_head_start_imports_the_model_runtime_before_the_command(vault_root: Path) -> None:
    """`memex search` lets the model's head start import numpy and
    onnxruntime before it imports the rest of memex, so the session builds
    (outside the GIL) while the command imports (memex/cli/_preload.py)."""
    with Vault(vault_root) as vault:
        vault.add("Blue-green deploys happen on Fridays", scope="user")
    # When the command's own module starts importing, is onnxruntime there, whole?
    code = (
        "import sys\n"
        "seen = []\n"
        "def hook(event, args):\n"
        "    if event == 'import' and args[0] == 'memex.cli._common' and not seen:\n"
        "        ort = sys.modules.get('onnxruntime')\n"
        "        seen.append(ort is not None and not getattr(ort.__spec__, '_initializing', False))\n"
        "sys.addaudithook(hook)\n"
        "from memex.cli import run\n"
        f"try:\n    run({['--vault', str(vault_root), 'search', 'when do we deploy', '--json']!r})\n"
        "except SystemExit:\n    pass\n"
        "sys.stderr.write(f'\\nRUNTIME_FIRST {seen}')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert "Blue-green deploys happen on Fridays" in done.stdout, done.stderr[-2000:]
    assert done.stderr.rpartition("RUNTIME_FIRST ")[2] == "[True]"


@pytest.mark.model
def test_a_saved_graph_gives_a_cold_search_the_same_answer(
    vault_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cold `memex search` loads the optimized graph an earlier process saved
    (memex/embedding/prebuilt.py) and answers as it did before it existed."""
    import json

    from memex.embedding import embed

    monkeypatch.setenv("MEMEX_CACHE_DIR", str(tmp_path / "cache"))
    with Vault(vault_root) as vault:
        for text in ("Blue-green deploys happen on Fridays", "The billing service is owned by the payments team",
                     "Staging runs Postgres 16 on port 5433", "Rotate the API keys every 90 days"):
            vault.add(text, scope="user")
    code = (
        "import sys\n"
        "from memex.cli import run\n"
        "from memex.embedding import embed\n"
        f"try:\n    run({['--vault', str(vault_root), 'search', 'who owns billing and when do we deploy', '--json']!r})\n"
        "except SystemExit:\n    pass\n"
        "model = embed._LOADED['auto']\n"
        "sys.stderr.write(f'\\nSAVED_GRAPH {model._onnx.from_saved_graph}')\n"
    )

    def search() -> tuple[list[dict[str, object]], str]:
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
        return json.loads(done.stdout), done.stderr.rpartition("SAVED_GRAPH ")[2]

    before, used = search()
    assert used == "False" and before
    model_dir = embed._bundled_model_dir()
    assert model_dir is not None
    embed.FastEmbedder(model_dir, "direct", direct=True).save_graph()
    after, used = search()
    assert used == "True"
    assert [h["id"] for h in after] == [h["id"] for h in before]
    for old, new in zip(before, after):
        assert abs(float(old["score"]) - float(new["score"])) <= 1e-5  # type: ignore[arg-type]
        assert abs(float(old["semantic"]) - float(new["semantic"])) <= 1e-5  # type: ignore[arg-type]


@pytest.mark.model
def test_the_warm_server_saves_the_optimized_graph(
    vault_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The warm model server (started by an agent session or a search at a
    terminal) saves the graph, so later cold commands start from it."""
    from memex.embedding import embed, prebuilt

    monkeypatch.delenv("MEMEX_WARM", raising=False)
    monkeypatch.setenv("MEMEX_CACHE_DIR", str(tmp_path / "cache"))
    set_config(vault_root, "agents", "warm_seconds = 3")
    server = subprocess.Popen([sys.executable, "-m", "memex.agents.warm", str(vault_root)])
    try:
        with Vault(vault_root) as vault:
            wait_for(lambda: warm.connect(vault), 120, "the warm server to answer")
        model_dir = embed._bundled_model_dir()
        assert model_dir is not None
        saved = [p for p in model_dir.glob(f"{prebuilt.PREFIX}*") if (p / prebuilt.GRAPH).is_file()]
        assert len(saved) == 1
        assert server.wait(60) == 0  # idle for warm_seconds: it exits
    finally:
        if server.poll() is None:
            server.kill()
            server.wait(30)


def test_search_and_add_load_openblas_with_one_thread(vault_root: Path) -> None:
    """A one-shot search or add tells OpenBLAS to start one thread (numpy's
    import costs 10-15 ms of CPU less, docs/benchmarks.md); a value the
    user set is kept, and other commands are left alone."""
    import os

    def blas_threads(args: list[str], preset: str | None) -> str:
        env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
        if preset is not None:
            env["OPENBLAS_NUM_THREADS"] = preset
        code = (
            "import os, sys\n"
            "from memex.cli import run\n"
            f"try:\n    run({args!r})\n"
            "except SystemExit:\n    pass\n"
            "sys.stderr.write('\\nBLAS ' + os.environ.get('OPENBLAS_NUM_THREADS', '-'))\n"
        )
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
        return done.stderr.rpartition("BLAS ")[2]

    vault = ["--vault", str(vault_root)]
    assert blas_threads([*vault, "search", "anything", "--json"], None) == "1"
    assert blas_threads([*vault, "add", "Deploys happen on Fridays", "--json"], None) == "1"
    assert blas_threads([*vault, "search", "anything", "--json"], "2") == "2"
    assert blas_threads([*vault, "list", "--json"], None) == "-"
