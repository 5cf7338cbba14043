"""Erasure: what an erasure reaches (``select``), its steps and audit log
(``steps``) and git history (``git_history``). The keyed list of erased
bodies it writes, with its journals, lives below in :mod:`memex.erased`
(the indexer reads it). See docs/forgetting.md."""
