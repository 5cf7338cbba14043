"""Judging writes: the save-side dedup pipeline (``pipeline``), the value and
polarity guards (``values``), cleanup of duplicates already stored,
supersede, and the hand-off note. See docs/design.md."""
