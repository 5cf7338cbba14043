"""Which backend a vault opens: the one place that reads ``[index] backend``."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from memex.store.backend import Backend, ConnectFn, EmbedderFn

if TYPE_CHECKING:
    from memex.config import Config


def open_backend(root: Path, config: Config, embedder: EmbedderFn, on_connect: ConnectFn) -> Backend:
    """The backend ``[index] backend`` names for the vault at ``root``; nothing
    connects yet. ``on_connect`` runs once the shared store is first reached."""
    from memex.layout import VaultPaths

    index_path = VaultPaths(root).index
    if config.index_backend == "postgres":
        from memex.store.postgres.backend import SharedBackend

        return SharedBackend(index_path, root, config, embedder, on_connect)
    return Backend(index_path)


def describe_target(name: str) -> str:
    """How a message names the store an erasure journaled under ``name`` (:attr:`Backend.target`)."""
    from memex.store.postgres.backend import PREFIX, DESCRIPTION

    return DESCRIPTION if name.startswith(PREFIX) else name
