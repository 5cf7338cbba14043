"""The context engine's switches: the ``[context]`` and ``[recall]`` tables.

Defaults are documented in ``vault-template/.memex/config.toml``; a bad
value is a :class:`memex.errors.ConfigError` naming the key.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from memex.config import CONFIG_RELPATH, setting
from memex.errors import ConfigError

if TYPE_CHECKING:
    from memex.vault import Vault

# Midpoint between the lowest relevant (0.47) and the highest unrelated (0.32)
# score measured with the real model by scripts/context_threshold.py
# (tests/test_context_recall_quality.py, README "Context engine").
DEFAULT_SCORE_THRESHOLD = 0.40


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
    recall_max_injected_chars: int = 4000


def load_settings(vault: Vault) -> ContextSettings:
    """Read ``[context]`` and ``[recall]`` from the vault config."""
    where = str(CONFIG_RELPATH)
    ctx = vault.config.section("context")
    rec = vault.config.section("recall")
    d = ContextSettings()
    patterns = setting(ctx, "bypass_session_patterns", [], f"{where} [context]")
    if not all(isinstance(p, str) for p in patterns):
        raise ConfigError(f"{where} [context]: bypass_session_patterns must be a list of strings")
    out = ContextSettings(
        auto_capture=setting(ctx, "auto_capture", d.auto_capture, f"{where} [context]"),
        auto_recall=setting(ctx, "auto_recall", d.auto_recall, f"{where} [context]"),
        commit_token_threshold=setting(
            ctx, "commit_token_threshold", d.commit_token_threshold, f"{where} [context]"
        ),
        commit_keep_recent_count=setting(
            ctx, "commit_keep_recent_count", d.commit_keep_recent_count, f"{where} [context]"
        ),
        bypass_session_patterns=tuple(patterns),
        extract_command=setting(ctx, "extract_command", d.extract_command, f"{where} [context]"),
        recall_limit=setting(rec, "recall_limit", d.recall_limit, f"{where} [recall]"),
        recall_score_threshold=setting(
            rec, "recall_score_threshold", d.recall_score_threshold, f"{where} [recall]"
        ),
        recall_max_injected_chars=setting(
            rec, "recall_max_injected_chars", d.recall_max_injected_chars, f"{where} [recall]"
        ),
    )
    for key in ("commit_token_threshold", "recall_limit", "recall_max_injected_chars"):
        if getattr(out, key) < 1:
            raise ConfigError(f"{where}: {key} must be at least 1")
    if out.commit_keep_recent_count < 0:
        raise ConfigError(f"{where} [context]: commit_keep_recent_count must not be negative")
    return out
