"""The ``memex`` program: what agents run goes straight to its module, the rest to the CLI.

An agent runs ``memex hook AGENT`` for every event of every session, and
waits for most of them; it starts ``memex mcp`` with every session and waits
for its tools. Loading the command line interface (click and every
command's options) costs such a process more than answering does when the
vault's warm server is up, so a plain hook call goes straight to
:mod:`memex.agents.hook_client`, which loads nothing else unless it must,
and a plain ``memex [--vault PATH] mcp`` to :func:`memex.agents.mcp_front.main`.
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
            if argv is None:
                _leave(code)
            sys.exit(code)
    if "mcp" in args[:3]:
        from memex.agents.hook_event import split_vault_option

        split = split_vault_option(args)
        if split is not None and split[1] == ["mcp"]:
            _mcp(split[0])
            return
    from memex.cli import run as cli_run

    cli_run(args)


def _leave(code: int) -> None:
    """End a hook process now that its answer is out, skipping the interpreter's teardown.

    The agent waits for the hook process to end, and freeing every module
    (numpy, SQLite, memex itself) took a prompt's hook 30-80 ms after its
    answer was written, more when the warm server it just started was
    loading on the other core (docs/benchmarks.md, "Hooks"). Nothing is
    left to finish by then: the hook closed its vault, reaped or killed its
    query child and started the server as a process of its own; whatever
    work an event leaves for later runs in its own detached process. A
    thread still loading a model nobody needed any more (the head start,
    memex/embedding/headstart.py) is not waited for; ``atexit`` functions
    still run (a private model folder is removed). Only the console script
    does this (``argv`` None): a caller of :func:`run` in-process gets
    ``SystemExit`` as before.
    """
    import atexit
    import os

    atexit._run_exitfuncs()

    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # the agent closed its end, or the stream is closed
            pass
    os._exit(code)


def _mcp(vault: str | None) -> None:
    import os

    from memex.agents import mcp_front
    from memex.errors import MemexError

    try:
        mcp_front.main(vault or os.environ.get("MEMEX_VAULT") or None)
    except MemexError as exc:  # as the CLI says it (docs/cli.md, "Every command")
        print(f"Error: {exc}", file=sys.stderr)
        sys.exit(1)
    except KeyboardInterrupt:  # the agent stopped the server (SIGINT at its exit): no traceback,
        os._exit(130)  # and no wait for the SDK's threads, which never end by themselves
