"""The warm server process: ``python -m memex.agents.warm_server VAULT``.

Started in the background by a session's first hook (or a search typed at
a terminal) through :func:`memex.agents.warm_client.start`. It holds the
vault's embedding model (:mod:`memex.agents.warm`) and answers whole hook
events sent by hook processes (:mod:`memex.agents.hook_run`), so that a
prompt's hook costs a process start and one round trip. It exits after
``[agents] warm_seconds`` idle.
"""

from __future__ import annotations

import sys
from pathlib import Path

from memex.agents import hook_run, warm


def serve(root: Path) -> None:
    """Serve the vault at ``root`` until idle for ``warm_seconds``."""
    warm.serve(root, hooks=hook_run)


if __name__ == "__main__":
    serve(Path(sys.argv[1]))
