"""scripts/bench.py measures the add path step by step, so it must keep
naming the steps where they live (it once wrapped an undefined 'dedup' and
every size failed before printing a figure)."""

from __future__ import annotations

import pytest

from tests.scriptkit import load_script

pytestmark = pytest.mark.model


def test_one_size_of_the_core_benchmark_runs_and_times_every_add_step() -> None:
    bench = load_script("bench")
    figures = bench.run_one(12, 2, 2)  # the figures need a real run, not a big one (scripts/bench.py measures)
    assert figures["memories"] == 12
    assert figures["add_ms_p50"] > 0
    assert set(figures["add_breakdown_ms_p50"]) >= {"embed_body", "dedup_check", "atomic_write", "index_file"}
