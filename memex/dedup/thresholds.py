"""The ``[dedup]`` settings, and when "this turn" began for the turn-echo guard.

Apart from the pipeline (memex/dedup/pipeline.py), which embeds and reads
vectors, so that what only reads these settings — the hand-off note a
prompt hook adds (memex/consolidation/handoff.py) — loads no numpy.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from memex.config import Config, fraction, setting, string_list
from memex.embedding import profiles
from memex.embedding.profiles import ModelProfile
from memex.errors import ConfigError
from memex.layout import CONFIG_RELPATH


@dataclass(frozen=True)
class Thresholds:
    """The ``[dedup]`` table of the vault config (defaults documented there)."""

    jaccard_duplicate: float = 0.70
    jaccard_similar: float = 0.40
    cosine_duplicate: float = 0.85
    cosine_similar: float = 0.40
    session_cosine_duplicate: float = 0.70
    echo_window_seconds: int = 600
    echo_jaccard: float = 0.28
    echo_agent_sources: tuple[str, ...] = ("tool", "agent")
    echo_capture_sources: tuple[str, ...] = ("keyword", "user")
    # Whether cosine may decide for CJK text, and from which cosine (the
    # model profile says).
    cjk_cosine: bool = False
    cjk_cosine_duplicate: float = 1.0
    # Whether the duplicate bars apply to the query side of both texts, and
    # the passage-side cosine a neighbour needs to be scored there (the
    # model profile says; memex/dedup/symmetric.py).
    query_side: bool = False
    query_side_band: float = 1.0

    @classmethod
    def from_config(cls, config: Config, profile: ModelProfile | None = None) -> Thresholds:
        """The vault's ``[dedup]`` over the defaults; the cosine defaults are
        those of the loaded model's profile (:mod:`memex.embedding.profiles`)."""
        section = config.section("dedup")
        where = f"[dedup] in {CONFIG_RELPATH}"
        model = profile if profile is not None else profiles.for_model(None)
        defaults: dict[str, Any] = {
            "cosine_duplicate": model.cosine_duplicate,
            "cosine_similar": model.cosine_similar,
            "session_cosine_duplicate": model.session_cosine_duplicate,
            "cjk_cosine_duplicate": model.cjk_cosine_duplicate,
        }
        values: dict[str, Any] = {
            "cjk_cosine": model.cjk_cosine, "query_side": model.dedup_query_side,
            "query_side_band": model.query_side_band,
        }
        for name in (
            "jaccard_duplicate", "jaccard_similar", "cosine_duplicate", "cosine_similar",
            "session_cosine_duplicate", "cjk_cosine_duplicate", "echo_jaccard",
        ):
            values[name] = fraction(section, name, defaults.get(name, getattr(cls, name)), where)
        window = setting(section, "echo_window_seconds", cls.echo_window_seconds, where)
        if window < 0:
            raise ConfigError(f"{where}: echo_window_seconds must not be negative, got {window}")
        values["echo_window_seconds"] = window
        for name in ("echo_agent_sources", "echo_capture_sources"):
            values[name] = string_list(section, name, getattr(cls, name), where)
        for kind in ("jaccard", "cosine"):
            if values[f"{kind}_similar"] > values[f"{kind}_duplicate"]:
                raise ConfigError(f"{where}: {kind}_similar must not exceed {kind}_duplicate")
        return cls(**values)


def _iso(moment: dt.datetime) -> str:
    return moment.replace(microsecond=0).isoformat().replace("+00:00", "Z")


def echo_cutoff(limits: Thresholds) -> str:
    """The oldest ``created`` stamp that still counts as "this turn"."""
    now = dt.datetime.now(dt.timezone.utc)
    return _iso(now - dt.timedelta(seconds=limits.echo_window_seconds))
