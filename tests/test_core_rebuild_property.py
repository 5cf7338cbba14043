"""Property: after any history of adds, hand edits, renames, moves, deletions,
files broken by hand and (full or incremental) reindexes, the index holds exactly what a rebuild
from the files alone holds (docs/design.md principle 1)."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from memex.store.sqlite.meta import scalar
from memex.errors import MemoryFileError
from memex.vault import Vault
from memex.meta_edit import update_meta
from tests.fakes import HashEmbedder
from tests.hypokit import examples

WORDS = ["heron", "otter", "maple", "copper", "violet", "granite", "falcon", "willow", "ember", "quartz"]
FOLDERS = ["memories/user", "memories/project/alpha", "memories/agent/bot", "memories"]
NAMES = ["a.md", "b.md", "c.md", "d.md"]

words = st.lists(st.sampled_from(WORDS), min_size=2, max_size=6).map(" ".join)
SESSIONS = st.sampled_from([None, "s1", "s2"])
op = st.one_of(
    st.tuples(st.just("add"), words, SESSIONS, st.booleans()),
    st.tuples(st.just("write"), st.sampled_from(FOLDERS), st.sampled_from(NAMES), words, st.booleans(), SESSIONS),
    st.tuples(st.just("session"), st.integers(0, 50), SESSIONS),
    st.tuples(st.just("edit"), st.integers(0, 50), words),
    st.tuples(st.just("rename"), st.integers(0, 50), st.sampled_from(FOLDERS), st.sampled_from(NAMES)),
    st.tuples(st.just("delete"), st.integers(0, 50)),
    st.tuples(st.just("touch"), st.integers(0, 50)),
    st.tuples(st.just("break"), st.integers(0, 50)),
    st.tuples(st.just("meta"), st.integers(0, 50), st.sampled_from(["decision", "note", None])),
    st.tuples(st.just("reindex"), st.booleans()),
)

COLUMNS = (
    "id, path, scope, source, session, category, confidence, created, status, body, body_hash, "
    "file_hash, size, mtime_ns, embed_key, embedded"
)


class History:
    """Applies operations to a vault the way a person and memex would."""

    def __init__(self, root: Path, vault: Vault) -> None:
        self.root = root
        self.vault = vault
        self.clock = 1_700_000_000_000_000_000
        self.serial = 0

    def files(self) -> list[Path]:
        return sorted(p for p in (self.root / "memories").rglob("*.md") if p.is_file())

    def _stamp(self, path: Path) -> None:
        # Edits at human speed: every write gets a later mtime.
        self.clock += 1_000_000_000
        os.utime(path, ns=(self.clock, self.clock))

    def _pick(self, index: int) -> Path | None:
        files = self.files()
        return files[index % len(files)] if files else None

    def apply(self, step: tuple[Any, ...]) -> None:
        kind = step[0]
        if kind == "add":  # sometimes a question, sometimes in a session (search's facts)
            self.vault.add(f"{step[1]} {self.serial}" + ("?" if step[3] else ""), session=step[2])
        elif kind == "write":
            _, folder, name, body, with_id, session = step
            path = self.root / folder / name
            if path.exists():
                return
            path.parent.mkdir(parents=True, exist_ok=True)
            head = f"---\nid: hand{self.serial}\n" + (f"session: {session}\n" if session else "") + "---\n"
            head = head if with_id else ""
            path.write_text(f"{head}{body} {self.serial}\n")
            self._stamp(path)
        elif kind == "edit" and (path := self._pick(step[1])) is not None:
            text = path.read_text()
            front, sep, _ = text.rpartition("---\n") if text.startswith("---\n") else ("", "", text)
            path.write_text(f"{front}{sep}{step[2]} edited {self.serial}\n")
            self._stamp(path)
        elif kind == "rename" and (path := self._pick(step[1])) is not None:
            target = self.root / step[2] / step[3]
            if not target.exists():
                target.parent.mkdir(parents=True, exist_ok=True)
                path.rename(target)
        elif kind == "delete" and (path := self._pick(step[1])) is not None:
            path.unlink()
        elif kind == "touch" and (path := self._pick(step[1])) is not None:
            self._stamp(path)
        elif kind == "break" and (path := self._pick(step[1])) is not None:
            path.write_text(f"---\nid: [oops {self.serial}\n---\nbroken\n")
            self._stamp(path)
        elif kind == "session":  # a memory moves to another session, or out of any
            rows = self.vault.backend.conn.execute("SELECT id FROM memories ORDER BY id").fetchall()
            if rows:
                memory_id = rows[step[1] % len(rows)][0]
                try:
                    path = self.root / update_meta(self.vault, memory_id, {"session": step[2]}).path
                except MemoryFileError:
                    return
                self._stamp(path)
        elif kind == "meta":
            rows = self.vault.backend.conn.execute("SELECT id FROM memories ORDER BY id").fetchall()
            if rows:
                memory_id = rows[step[1] % len(rows)][0]
                try:
                    path = self.root / update_meta(self.vault, memory_id, {"category": step[2]}).path
                except MemoryFileError:
                    return  # its file was deleted since the last reindex: refused, nothing written
                self._stamp(path)
        elif kind == "reindex":
            self.vault.reindex(full=step[1])
        self.serial += 1


def snapshot(vault: Vault) -> dict[str, Any]:
    conn = vault.backend.conn
    return {
        "rows": conn.execute(f"SELECT {COLUMNS} FROM memories ORDER BY path").fetchall(),
        "fts": scalar(conn, "SELECT count(*) FROM memory_fts"),
        "vectors": scalar(conn, "SELECT count(*) FROM memory_vec"),
        "entities": conn.execute("SELECT key FROM entities ORDER BY key").fetchall(),
        "errors": conn.execute("SELECT path, reason FROM index_errors ORDER BY path").fetchall(),
        "search": {w: [h.id for h in vault.search(w, limit=5)] for w in WORDS[:4]},
        "facts": facts_by_id(vault),
    }


def facts_by_definition(vault: Vault) -> dict[str, tuple[bool, str | None, str | None]]:
    """The same facts computed here from the rows: a session's memories by (created, id)."""
    rows = vault.backend.conn.execute("SELECT id, session, created, body FROM memories").fetchall()
    order = sorted((r for r in rows if r[1] is not None), key=lambda r: (r[1], r[2], r[0]))
    beside: dict[str, list[str | None]] = {str(r[0]): [None, None] for r in rows}
    for a, b in zip(order, order[1:]):
        if a[1] == b[1]:
            beside[str(a[0])][1], beside[str(b[0])][0] = str(b[0]), str(a[0])
    return {str(i): (str(body).rstrip().endswith("?"), *beside[str(i)]) for i, _, _, body in rows}  # type: ignore[misc]


def facts_by_id(vault: Vault) -> dict[str, tuple[bool, str | None, str | None]]:
    """Search's facts as the index keeps them, by memory id (rowids differ after a rebuild)."""
    ids = {int(r): str(i) for r, i in vault.backend.conn.execute("SELECT rowid, id FROM memories")}
    def named(rowid: int | None) -> str | None:
        return None if rowid is None else ids.get(rowid, f"gone:{rowid}")

    return {ids[r]: (f.asks, named(f.before), named(f.after))
            for r, f in vault.store.facts(list(ids), density=False).items()}


@settings(max_examples=examples(25), deadline=None)
@given(st.lists(op, min_size=1, max_size=14))
def test_any_history_matches_a_rebuild(steps: list[tuple[Any, ...]]) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="memex-prop-"))
    try:
        root = tmp / "vault"
        (root / ".memex").mkdir(parents=True)
        (root / "memories").mkdir()
        embedder = HashEmbedder()
        with Vault(root, embedder=embedder) as vault:
            history = History(root, vault)
            for step in steps:
                history.apply(step)
            vault.reindex()
            incremental = snapshot(vault)
            assert incremental["facts"] == facts_by_definition(vault)
            assert vault.reindex().as_dict()["added"] == 0  # a second sync finds nothing new
        for f in (root / ".memex").glob("index.db*"):
            f.unlink()
        with Vault(root, embedder=embedder) as vault:
            vault.reindex()
            rebuilt = snapshot(vault)
        assert incremental == rebuilt
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
