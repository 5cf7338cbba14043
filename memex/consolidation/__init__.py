"""Consolidation: the features that fold, retire and sum up memories already
written, on top of the vault: a session's similar memories folded into one
by a calibrated pair score (``consolidate``, docs/consolidation.md), one
memory superseded by a new one (``supersede``), duplicates already stored
merged (``cleanup``, ``memex dedup``) and a session's hand-off note
(``handoff``). The judging of one write lives below, in :mod:`memex.dedup`."""
