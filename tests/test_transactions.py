"""write_txn and locked_txn (memex/store/sqlite/schema.py) end a transaction the same way:
COMMIT after the block, ROLLBACK when it raises, nothing left open."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path

import apsw
import pytest

from memex.store.sqlite.meta import get_meta, set_meta
from memex.store.sqlite.schema import connect, locked_txn, write_txn

Txn = Callable[[apsw.Connection], AbstractContextManager[None]]


@pytest.fixture(params=["write_txn", "locked_txn"])
def txn(request: pytest.FixtureRequest, tmp_path: Path) -> Txn:
    if request.param == "write_txn":
        return write_txn
    return lambda conn: locked_txn(conn, tmp_path / "write.lock")


def test_a_block_that_ends_commits_and_one_that_raises_rolls_back(tmp_path: Path, txn: Txn) -> None:
    conn = connect(tmp_path / "index.db")
    with txn(conn):
        set_meta(conn, "kept", "1")
    with pytest.raises(KeyError), txn(conn):
        set_meta(conn, "dropped", "1")
        raise KeyError("the block failed")
    assert conn.get_autocommit()  # no transaction left open
    other = connect(tmp_path / "index.db")  # what another process sees
    assert (get_meta(other, "kept"), get_meta(other, "dropped")) == ("1", None)
