"""Confidence decay: memories nobody recalls fade from recall on a schedule.

effective confidence = confidence x (1 - rate) ^ (days since last access)

The last access is the last recall (``usage.last_access`` in the index),
else the memory's ``created`` time. The value is computed whenever it is
read and never written back to the file, so decay makes no churn in git; a
recall resets the clock because it stamps ``usage.last_access``.

Settings (``.memex/config.toml``)::

    [decay]
    rate = 0.01              # per day
    [decay.categories]
    constraint = 0.0         # per-category rates; constraints do not decay
    [recall]
    min_confidence = 0.3     # recall drops memories below this

A timestamp that cannot be parsed means "no decay" rather than "hide this
memory": a typo in a hand-written ``created`` must not make a memory vanish.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any


from memex.config import CONFIG_RELPATH, Config, fraction, setting
from memex.errors import ConfigError, MemoryNotFound
from memex.store import IndexLike, as_store

DEFAULT_RATE = 0.01
DEFAULT_MIN_CONFIDENCE = 0.3
# Constraints are rules the user set on purpose; they must not fade away.
DEFAULT_CATEGORY_RATES: Mapping[str, float] = {"constraint": 0.0}
SECONDS_PER_DAY = 86_400.0


@dataclass(frozen=True)
class DecayPolicy:
    rate: float = DEFAULT_RATE
    categories: Mapping[str, float] = field(default_factory=lambda: dict(DEFAULT_CATEGORY_RATES))
    min_confidence: float = DEFAULT_MIN_CONFIDENCE

    def rate_for(self, category: str | None) -> float:
        if category is not None and category in self.categories:
            return self.categories[category]
        return self.rate

    def describe(self) -> dict[str, Any]:
        return {
            "rate": self.rate,
            "categories": dict(self.categories),
            "min_confidence": self.min_confidence,
        }


def _check_rate(value: float, where: str) -> float:
    if not 0.0 <= value < 1.0:
        raise ConfigError(f"{where} must be from 0 (no decay) up to but not including 1, got {value}")
    return value


def load_policy(config: Config) -> DecayPolicy:
    """The decay settings of a vault, checked; a bad value names its key."""
    where = str(CONFIG_RELPATH)
    section = config.section("decay")
    rate = _check_rate(setting(section, "rate", DEFAULT_RATE, where), f"{where}: [decay] rate")
    categories = dict(DEFAULT_CATEGORY_RATES)
    table = section.get("categories", {})
    if not isinstance(table, dict):
        raise ConfigError(f"{where}: [decay.categories] must be a table of category = rate")
    for name, value in table.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"{where}: [decay.categories] {name} must be a number, got {value!r}")
        categories[str(name)] = _check_rate(float(value), f"{where}: [decay.categories] {name}")
    recall = config.section("recall")
    min_conf = fraction(recall, "min_confidence", DEFAULT_MIN_CONFIDENCE, f"{where} [recall]")
    return DecayPolicy(rate, categories, min_conf)


def parse_time(value: str | None) -> dt.datetime | None:
    """An ISO 8601 time or date as an aware UTC datetime (naive means UTC)."""
    if not value:
        return None
    text = str(value).strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    try:
        moment = dt.datetime.fromisoformat(text)
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.timezone.utc)
    return moment.astimezone(dt.timezone.utc)


def days_since(last_access: str | None, created: str | None, now: dt.datetime | None = None) -> float:
    """Days since the last recall, else since creation (never negative)."""
    moment = parse_time(last_access) or parse_time(created)
    if moment is None:
        return 0.0
    now = now or dt.datetime.now(dt.timezone.utc)
    return max(0.0, (now - moment).total_seconds() / SECONDS_PER_DAY)


def effective_confidence(
    confidence: float,
    category: str | None,
    last_access: str | None,
    created: str | None,
    policy: DecayPolicy,
    now: dt.datetime | None = None,
) -> float:
    rate = policy.rate_for(category)
    days = days_since(last_access, created, now)
    if rate == 0.0 or days == 0.0:
        return confidence
    return confidence * math.exp(days * math.log1p(-rate))


def last_accesses(conn: IndexLike, ids: Iterable[str]) -> dict[str, str | None]:
    """``usage.last_access`` of these memories (absent ones are left out), from
    this clone's connection or any backend's store (docs/store.md)."""
    return as_store(conn).last_accesses(ids)


def confidence_now(conn: IndexLike, config: Config, memory_id: str) -> float:
    """One memory's confidence after decay since its last recall (computed, never stored)."""
    row = as_store(conn).decay_row(memory_id)
    if row is None:
        raise MemoryNotFound(memory_id)
    value = effective_confidence(row.confidence, row.category, row.last_access, row.created, load_policy(config))
    return round(value, 6)


def days_until(confidence: float, category: str | None, policy: DecayPolicy) -> float | None:
    """Days without a recall until a memory drops below ``min_confidence``.

    None when it never does (rate 0, or a confidence already at or below the
    floor counts as 0 days). Lets a user read the schedule, e.g. 0.9 at 1%/day
    is recalled for about 109 days.
    """
    rate = policy.rate_for(category)
    if confidence < policy.min_confidence:
        return 0.0
    if rate == 0.0 or policy.min_confidence <= 0.0:
        return None
    return math.log(policy.min_confidence / confidence) / math.log1p(-rate)


def annotate(conn: IndexLike, hits: list[Any], policy: DecayPolicy) -> None:
    """Set ``effective_confidence`` on search hits (anything with id,
    confidence, category and created), reading last accesses in one query."""
    annotate_from(lambda ids: last_accesses(conn, ids), hits, policy)


def annotate_from(
    lookup: Callable[[Iterable[str]], dict[str, str | None]], hits: list[Any], policy: DecayPolicy
) -> None:
    """:func:`annotate` with the last accesses from ``lookup`` (the PostgreSQL
    index keeps its own usage: docs/postgres.md)."""
    if not hits:
        return
    now = dt.datetime.now(dt.timezone.utc)
    last = lookup(h.id for h in hits)
    for hit in hits:
        value = effective_confidence(hit.confidence, hit.category, last.get(hit.id), hit.created, policy, now)
        hit.effective_confidence = round(value, 6)


@dataclass
class Fade:
    """Where one memory stands on the decay schedule."""

    id: str
    scope: str
    category: str | None
    confidence: float
    effective_confidence: float
    last_access: str | None
    days_left: float | None  # until it drops below min_confidence; None = never
    body: str

    @property
    def faded(self) -> bool:
        return self.days_left == 0.0


def schedule(conn: IndexLike, policy: DecayPolicy, scope: str | None = None) -> list[Fade]:
    """Every active memory with its effective confidence and days left, soonest first."""
    now = dt.datetime.now(dt.timezone.utc)
    out = []
    for mid, mscope, category, conf, created, last, body in as_store(conn).active_decay_rows(scope):
        value = effective_confidence(float(conf), category, last, created, policy, now)
        left = days_until(value, category, policy)
        out.append(Fade(mid, mscope, category, float(conf), round(value, 6), last,
                        None if left is None else round(left, 2), str(body).strip()))
    return sorted(out, key=lambda f: (math.inf if f.days_left is None else f.days_left, f.id))
