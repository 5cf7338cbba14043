"""``python -m memex.cli ...`` runs the memex CLI: the context engine's
detached commit (:func:`memex.context.capture.spawn_commit`) starts it so,
without going through the installed ``memex`` program's hook routing."""

from memex.cli import run

run()
