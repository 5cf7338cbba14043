"""Erasure: what an erasure reaches (``select``), its steps and audit log
(``steps``), the keyed list of erased bodies (``erased_list``), and git
history (``git_history``). See docs/forgetting.md."""
