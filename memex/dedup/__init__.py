"""Judging writes: the save-side dedup pipeline (``pipeline``), the value and
polarity guards (``values``, ``wording``, ``numerals``, ``cjk``). What
acts on memories already stored (supersede, cleanup, the hand-off note)
is :mod:`memex.consolidation`, above the vault. See docs/design.md."""
