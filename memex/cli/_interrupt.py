"""What a command says when Ctrl-C stops it (exit status 130, docs/cli.md).

A command with progress registers how to describe it (:func:`describe`):
how far it got, and that running it again carries on from there, which is
true of every command memex has (each write is whole or absent, reindex and
import skip what is done). The group's error handler asks :func:`message`.
This module imports nothing, so the group can load it at start-up.
"""

from __future__ import annotations

from collections.abc import Callable

INTERRUPTED = 130
_describe: list[Callable[[], str]] = []

GENERIC = "what was written before it is kept (each write is whole or absent); run the command again to finish"


def describe(how: Callable[[], str]) -> None:
    """Say how far the running command got when it is interrupted."""
    _describe[:] = [how]


def message() -> str:
    """The one line for an interrupted command."""
    said = ""
    if _describe:
        try:
            said = _describe[0]()
        except Exception:  # a note about progress must never replace the exit itself
            said = ""
    return f"interrupted (Ctrl-C): {said or GENERIC}"
