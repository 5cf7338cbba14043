"""The ``memex`` program: a hook event goes to the hook client, the rest to the CLI.

An agent runs ``memex hook AGENT`` for every event of every session, and
waits for most of them. Loading the command line interface (click and every
command's options) costs such a process more than answering does when the
vault's warm server is up, so a plain hook call goes straight to
:mod:`memex.agents.hook_client`, which loads nothing else unless it must.
Any other command line, ``memex hook --help`` included, is the CLI's
(:func:`memex.cli.run`).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence


def run(argv: Sequence[str] | None = None) -> None:
    """Console-script entry point (pyproject.toml ``[project.scripts]``)."""
    args = list(sys.argv[1:] if argv is None else argv)
    if "hook" in args[:4]:
        from memex.agents import hook_client

        code = hook_client.main(args)
        if code is not None:
            sys.exit(code)
    from memex.cli import run as cli_run

    cli_run(args)
