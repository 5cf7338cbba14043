"""``python -m memex.context ...`` runs the memex CLI (the detached commit uses it)."""

from memex.cli import run

run()
