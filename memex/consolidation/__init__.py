"""Consolidation: folding a session's similar memories into one, judged by
a calibrated pair score. See docs/consolidation.md."""
