from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from memex.embedding.embed import load_embedder
from memex.vault import Vault, init_vault
from tests.fakes import HashEmbedder


@pytest.fixture(autouse=True)
def _isolated_env(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """No test sees the developer's vault or writes to their cache."""
    monkeypatch.delenv("MEMEX_VAULT", raising=False)
    monkeypatch.setenv("MEMEX_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "memex-cache"))


@pytest.fixture
def no_warm_server(monkeypatch: pytest.MonkeyPatch) -> None:
    """SessionStart would start a warm model server that outlives the test;
    tests/test_hooks_warm.py covers it. Hook test files use this for every test
    (``pytestmark = pytest.mark.usefixtures("no_warm_server")``)."""
    monkeypatch.setenv("MEMEX_WARM", "0")


@pytest.fixture
def vault_root(tmp_path: Path) -> Path:
    return init_vault(tmp_path / "vault", git=False)


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
