"""Hypothesis profiles for the suite (docs/testing.md, "Property tests").

``ci``, the default: every run draws the same examples (derandomized, no
example database), so a red run replays the same on any machine and a green
one is not luck of the draw. ``deep``: fresh random examples, ten times as
many, with the example database on, for a separate, longer search for bugs:

    MEMEX_HYPOTHESIS_PROFILE=deep .venv/bin/python -m pytest tests/test_names.py

(``--hypothesis-profile=deep`` does the same.) Tests that set their own
``max_examples`` pass it through :func:`examples`, which scales it by the
profile.
"""

from __future__ import annotations

import os

from hypothesis import settings

PROFILE_ENV = "MEMEX_HYPOTHESIS_PROFILE"
DEEP_FACTOR = 10

settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
settings.register_profile("deep", derandomize=False, max_examples=100 * DEEP_FACTOR, print_blob=True)


def load() -> str:
    """Load the profile ``MEMEX_HYPOTHESIS_PROFILE`` names (``ci`` when unset)."""
    name = os.environ.get(PROFILE_ENV) or "ci"
    settings.load_profile(name)
    return name


def examples(n: int) -> int:
    """``n`` examples, or ``DEEP_FACTOR`` times as many under the deep profile."""
    return n * DEEP_FACTOR if settings.get_current_profile_name() == "deep" else n
