"""What a database driver raised, read as memex's one-line errors.

The command line, the MCP server and the hooks ask these at their edge, so
a damaged index or a server that went away is one line naming the way out,
never a traceback. Neither loads a driver: an exception from a driver that
was never imported cannot be one of its errors.
"""

from __future__ import annotations

import sys
from pathlib import Path

from memex.errors import IndexStoreError


def index_damaged(exc: BaseException, path: Path | str) -> IndexStoreError | None:
    """The one-line error when ``exc`` says this clone's index file at ``path``
    is damaged ("database disk image is malformed", "file is not a database"),
    else None."""
    if "apsw" not in sys.modules:  # the index was never opened: nothing could have found it damaged
        return None
    from memex.store.sqlite.schema import damaged

    return damaged(exc, path)


def store_error(exc: BaseException) -> IndexStoreError | None:
    """The one-line error for what a database driver raised (a server that went
    away in the middle of a command, a statement that failed), else None."""
    if "psycopg" not in sys.modules:  # no driver loaded: nothing it could have raised
        return None
    from memex.store.postgres.connection import server_error

    return server_error(exc)
