"""Watching: the watcher that keeps the index in step with edits made
outside memex (``watcher``) and its settings and status (``state``).
See docs/watching.md."""
