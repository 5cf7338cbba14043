"""The context engine's switches: the ``[context]`` and ``[recall]`` tables.

Defaults are documented in ``vault-template/.memex/config.toml``; a bad
value is a :class:`memex.errors.ConfigError` naming the key.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from memex.embedding import profiles
from memex.config import CONFIG_RELPATH, setting, string_list
from memex.errors import ConfigError

if TYPE_CHECKING:
    from memex.vault import Vault

# Recall goes through Vault.search, so the relevance floor (memex.search.fusion.relevant)
# already drops unrelated memories; this threshold is a second cut on the fused
# score. Midpoint between the lowest relevant (0.399) and the highest unrelated
# or wrong (0.224) score with the fusion of docs/search.md, measured with the
# real model by scripts/context_threshold.py (tests/test_context_recall_quality.py).
# For the MiniLM model; another model's is in its profile (memex/embedding/profiles.py).
DEFAULT_SCORE_THRESHOLD = 0.31
# The second way in (memex/context/gate.py): a calibrated cosine; MiniLM's, from its profile.
DEFAULT_COSINE_THRESHOLD = profiles.MINILM.recall_cosine_threshold
DEFAULT_COSINE_GROWTH = profiles.MINILM.recall_cosine_growth


@dataclass(frozen=True)
class ContextSettings:
    auto_capture: bool = True
    auto_recall: bool = True
    commit_token_threshold: int = 20_000
    commit_keep_recent_count: int = 10
    bypass_session_patterns: tuple[str, ...] = ()
    extract_command: str = ""
    recall_limit: int = 6
    recall_score_threshold: float = DEFAULT_SCORE_THRESHOLD
    # A calibrated cosine, and what it grows by per e-fold of the vault's size; see memex/context/gate.py.
    recall_cosine_threshold: float = DEFAULT_COSINE_THRESHOLD
    recall_cosine_growth: float = DEFAULT_COSINE_GROWTH
    recall_max_injected_chars: int = 4000


_CONTEXT_KEYS = (
    "auto_capture", "auto_recall", "commit_token_threshold", "commit_keep_recent_count", "extract_command",
)
_RECALL_KEYS = (
    "recall_limit", "recall_score_threshold", "recall_cosine_threshold", "recall_cosine_growth",
    "recall_max_injected_chars",
)


def load_settings(vault: Vault) -> ContextSettings:
    """Read ``[context]`` and ``[recall]`` from the vault config; the recall
    thresholds' defaults are the configured model's (:mod:`memex.embedding.profiles`)."""
    model = profiles.for_setting(vault.config.embedding_model)
    defaults = ContextSettings(recall_score_threshold=model.recall_score_threshold,
                               recall_cosine_threshold=model.recall_cosine_threshold,
                               recall_cosine_growth=model.recall_cosine_growth)
    values: dict[str, Any] = {}
    for table, keys in (("context", _CONTEXT_KEYS), ("recall", _RECALL_KEYS)):
        section = vault.config.section(table)
        where = f"{CONFIG_RELPATH} [{table}]"
        values.update({key: setting(section, key, getattr(defaults, key), where) for key in keys})
    patterns = string_list(vault.config.section("context"), "bypass_session_patterns", (), f"{CONFIG_RELPATH} [context]")
    out = ContextSettings(bypass_session_patterns=patterns, **values)
    for key in ("commit_token_threshold", "recall_limit", "recall_max_injected_chars"):
        if getattr(out, key) < 1:
            raise ConfigError(f"{CONFIG_RELPATH}: {key} must be at least 1")
    for key in ("recall_score_threshold", "recall_cosine_threshold"):
        # Both compare with a score or calibrated cosine of 0 to 1; found from
        # outside: recall_score_threshold = 7 was taken, and recalled nothing.
        if not 0.0 <= getattr(out, key) <= 1.0:
            raise ConfigError(f"{CONFIG_RELPATH} [recall]: {key} must be from 0 to 1, got {getattr(out, key)}")
    if out.recall_cosine_growth < 0:
        raise ConfigError(f"{CONFIG_RELPATH} [recall]: recall_cosine_growth must not be negative")
    if out.commit_keep_recent_count < 0:
        raise ConfigError(f"{CONFIG_RELPATH} [context]: commit_keep_recent_count must not be negative")
    return out
