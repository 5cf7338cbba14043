from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from memex.embedding.embed import load_embedder
from memex.vault import Vault, init_vault
from tests import hypokit
from tests.fakes import HashEmbedder

# Hypothesis draws the same examples on every run unless MEMEX_HYPOTHESIS_PROFILE=deep
# (tests/hypokit.py): loaded here, before any test module builds its settings.
hypokit.load()


def pytest_report_header(config: pytest.Config) -> str:
    from hypothesis import settings

    return f"hypothesis profile: {settings.get_current_profile_name()} ({hypokit.PROFILE_ENV}=deep for the deep run)"


@pytest.fixture(autouse=True)
def _isolated_env(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """No test sees the developer's vault or writes to their cache."""
    monkeypatch.delenv("MEMEX_VAULT", raising=False)
    monkeypatch.setenv("MEMEX_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "memex-cache"))
    # Nor the developer's own settings (~/.config/memex/config.toml: memex/config_trust.py).
    monkeypatch.setenv("MEMEX_CONFIG_DIR", str(tmp_path_factory.getbasetemp() / "memex-config"))


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Tests in a module marked ``both_backends`` run once per index backend."""
    if "vault_backend" in metafunc.fixturenames and metafunc.definition.get_closest_marker("both_backends"):
        metafunc.parametrize("vault_backend", ["sqlite", "postgres"], indirect=True)


@pytest.fixture
def no_warm_server(monkeypatch: pytest.MonkeyPatch) -> None:
    """SessionStart would start a warm model server that outlives the test;
    tests/test_hooks_warm.py covers it. Hook test files use this for every test
    (``pytestmark = pytest.mark.usefixtures("no_warm_server")``)."""
    monkeypatch.setenv("MEMEX_WARM", "0")


@pytest.fixture
def vault_backend(request: pytest.FixtureRequest) -> str:
    return str(getattr(request, "param", "sqlite"))


def use_postgres(root: Path, url: str) -> None:
    """Point a vault's [index] at a PostgreSQL database (docs/postgres.md): this
    clone's own settings, which a teammate cannot push (memex/config_trust.py)."""
    conf = root / ".memex" / "config.local.toml"
    text = conf.read_text(encoding="utf-8") if conf.exists() else "[index]\n"
    assert "\n[index]\n" in "\n" + text
    conf.write_text(("\n" + text).replace("\n[index]\n", f'\n[index]\nbackend = "postgres"\nurl = "{url}"\n', 1)[1:])


@pytest.fixture
def vault_root(tmp_path: Path, vault_backend: str, request: pytest.FixtureRequest) -> Path:
    root = init_vault(tmp_path / "vault", git=False)
    if vault_backend == "postgres":
        use_postgres(root, request.getfixturevalue("pg_url"))
    return root


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project folder (a git work tree) the hook tests' agent works in: scope ``project:shop-api``."""
    root = tmp_path / "shop-api"
    (root / ".git").mkdir(parents=True)
    return root


@pytest.fixture
def fake_embedder() -> HashEmbedder:
    return HashEmbedder()


@pytest.fixture
def vault(vault_root: Path, fake_embedder: HashEmbedder) -> Iterator[Vault]:
    """A vault with the fast fake embedder (plumbing tests)."""
    with Vault(vault_root, embedder=fake_embedder) as v:
        yield v


@pytest.fixture(scope="session")
def real_embedder():  # type: ignore[no-untyped-def]
    embedder = load_embedder("auto")
    assert embedder is not None, "the bundled embedding model must load in tests"
    return embedder


@pytest.fixture
def model_vault(vault_root: Path, real_embedder) -> Iterator[Vault]:  # type: ignore[no-untyped-def]
    """A vault with the real all-MiniLM-L6-v2 model (quality tests)."""
    with Vault(vault_root, embedder=real_embedder) as v:
        yield v


@pytest.fixture(scope="session")
def pg_server(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """One PostgreSQL + pgvector server for the whole test session (tests/pgkit.py)."""
    from tests import pgkit

    if pgkit.MISSING is not None:
        pytest.skip(pgkit.MISSING)
    # Not under pytest's temp folder: that is private to root (0700), and the
    # server runs as another user, who must reach its data folder.
    base = Path(tempfile.mkdtemp(prefix="memex-pg-"))
    base.chmod(0o755)
    server = pgkit.PgServer(base / "data")
    yield server
    server.stop()
    shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def pg_url(pg_server) -> Iterator[str]:  # type: ignore[no-untyped-def]
    """A fresh database on the session's server, with pgvector installed,
    dropped when the test ends (PgServer.drop_database says why)."""
    url = str(pg_server.new_database())
    yield url
    pg_server.drop_database(url)
