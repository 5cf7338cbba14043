"""What an erasure reaches: the chosen memories, what derives from them, archives.

Erasing a *subject* (everything one source wrote about one source_ref, or
everything one session wrote) also erases what was derived from it, repeated
until nothing more is reached:

- a memory whose parents are all erased, where the parents of M are the
  memory M ``supersedes`` and the memories consolidated into M (consolidation
  sets ``superseded_by: M`` on them). A memory with at least one parent that
  stays is supported by another source and is kept;
- a session's archive (the folder ``sessions/<session>/``: turns, summary,
  state) when any file in it quotes an erased body, compared as a token
  sequence so case, whitespace and JSON escaping do not hide a quote;
  erasing by session takes that session's archive folder in any case;
- a memory whose ``source_ref`` points into an erased archive (it was
  extracted from it).

Erasing by id reaches the memory and the archives that quote it, but not
memories derived from it: erasing an outdated version must not take the
current one with it.

Either way it also reaches every copy of an erased memory (docs/forgetting.md):
each file on disk that claims an erased id (``cp``, a sync tool's
``note.sync-conflict-1.md``, a restored file the index refused), indexed or
not, and each memory whose text is the same as an erased one up to what the
erased list folds (case, whitespace, punctuation at the ends): the list would
refuse those texts at their next read anyway, and until then search would
still find them.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from memex.files import memory_file
from memex.erased.erased_list import canonical
from memex.errors import InvalidArgument, MemoryFileError, MemoryNotFound
from memex.files.names import safe_name
from memex.layout import SESSIONS_DIR
from memex.records import path_id
from memex.store import IndexStore, TargetRow
from memex.text import tokens

_JSON_ESCAPE = re.compile(r"\\(u[0-9a-fA-F]{4}|[nrtbf\"\\/])")


# One memory row to erase, as the index knows it: the store's row
# (memex/store/sqlite/queries.py), read-only here.
Target = TargetRow


@dataclass
class Selection:
    memories: dict[str, Target] = field(default_factory=dict)  # id -> target
    derived: list[str] = field(default_factory=list)  # ids reached by derivation
    archives: list[str] = field(default_factory=list)  # vault-relative paths
    copies: list[str] = field(default_factory=list)  # ids reached as copies (same text)
    superseded: list[str] = field(default_factory=list)  # ids reached as hidden behind an erased one
    files: dict[str, str] = field(default_factory=dict)  # path -> body of files claiming an erased id
    temp_names: list[str] = field(default_factory=list)  # temp files seen in memories/ (memex.files.orphans)


def _targets(rows: list[TargetRow]) -> list[Target]:
    return list(rows)


def _unescape(match: re.Match[str]) -> str:
    code = match.group(1)
    if code.startswith("u"):
        return chr(int(code[1:], 16))
    return " " if code in "nrtbf" else code


# A tool's JSON output stored as a string inside an archive's JSON line is
# escaped twice (a newline is ``\\n`` on disk), a tool result quoting another
# tool's, three times: undo escapes until nothing changes, a few levels deep.
_ESCAPE_LEVELS = 4


def token_line(text: str) -> str:
    """A text as space-separated search tokens, JSON escapes undone (nested
    ones too), padded."""
    for _ in range(_ESCAPE_LEVELS):
        undone = _JSON_ESCAPE.sub(_unescape, text)
        if undone == text:
            break
        text = undone
    return " " + " ".join(tokens(text)) + " "


def quotes(haystack_line: str, body: str) -> bool:
    needle = token_line(body)
    return needle.strip() != "" and needle in haystack_line


def _archive_files(root: Path) -> list[str]:
    base = root / SESSIONS_DIR
    found: list[str] = []
    if not base.is_dir():
        return found
    for folder, dirs, files in os.walk(base):
        dirs[:] = sorted(d for d in dirs if not os.path.islink(os.path.join(folder, d)))
        for name in sorted(files):
            full = os.path.join(folder, name)
            if not os.path.islink(full):
                found.append(Path(full).relative_to(root).as_posix())
    return found


def _session_folder(rel: str) -> str:
    """``sessions/<folder>`` of an archive file (a file directly in sessions/ is its own)."""
    parts = rel.split("/")
    return "/".join(parts[:2]) if len(parts) > 2 else rel


def _read_line(root: Path, rel: str) -> str:
    try:
        raw = (root / rel).read_bytes()
    except OSError:
        return " "
    return token_line(raw.decode("utf-8", errors="replace"))


def by_id(store: IndexStore, memory_id: str) -> list[Target]:
    found = _targets(store.targets_by_id(memory_id))
    if not found:
        raise MemoryNotFound(memory_id)
    return found


def by_subject(
    store: IndexStore, source: str | None, source_ref: str | None, session: str | None
) -> list[Target]:
    """Memories of one subject: ``source_ref`` matches itself or ``REF#anchor``."""
    if source_ref is None and session is None:
        raise InvalidArgument("--source-ref/--session", "name the subject: a source_ref, a session, or both")
    return _targets(store.targets_of_subject(source, source_ref, session))


def expand(
    store: IndexStore,
    root: Path,
    start: list[Target],
    follow_derived: bool,
    session: str | None = None,
) -> Selection:
    """Everything reached from ``start`` (see the module doc), to a fixed point."""
    sel = Selection()
    for t in start:
        sel.memories[t.id] = t
    archives = _archive_files(root)
    archive_lines: dict[str, str] = {}
    if session is not None:
        prefix = f"{SESSIONS_DIR}/{safe_name(session)}/"
        sel.archives.extend(a for a in archives if a.startswith(prefix))
    quoted: set[str] = set()  # ids whose bodies were already compared to archives
    while True:
        new: list[Target] = []
        for t in list(sel.memories.values()):
            if t.id in quoted:
                continue
            quoted.add(t.id)
            for rel in archives:
                if rel in sel.archives:
                    continue
                line = archive_lines.get(rel)
                if line is None:
                    line = archive_lines[rel] = _read_line(root, rel)
                if quotes(line, t.body):
                    # The whole session folder: its summary and state derive
                    # from the quoting turns, and a half-deleted archive
                    # would confuse the context engine.
                    folder = _session_folder(rel)
                    sel.archives.extend(a for a in archives if _session_folder(a) == folder and a not in sel.archives)
        if follow_derived:
            new.extend(_derived(store, sel))
            new.extend(_from_archives(store, sel))
        new = [t for t in new if t.id not in sel.memories]
        if not new:
            return sel
        for t in new:
            sel.memories[t.id] = t
            sel.derived.append(t.id)


def _derived(store: IndexStore, sel: Selection) -> list[Target]:
    """Memories all of whose parents are erased."""
    erased = set(sel.memories)
    candidates = _targets(store.supersede_children(tuple(erased)))
    out: list[Target] = []
    for cand in candidates:
        parents = store.superseded_by(cand.id)
        if cand.supersedes and store.has_id(cand.supersedes):
            parents.add(cand.supersedes)
        if parents and parents <= erased:
            out.append(cand)
    return out


def hidden_behind(store: IndexStore, sel: Selection) -> None:
    """``--with-superseded``: every memory hidden behind a chosen one (its
    ``superseded_by`` names it: the versions it replaced, the originals a
    consolidation folded into it), and those behind them, to a fixed point.
    Without it they are shown again instead (memex/erase/restore.py)."""
    todo = sorted(sel.memories)
    while todo:
        for older in sorted(store.superseded_by(todo.pop())):
            if older in sel.memories:
                continue
            for t in _targets(store.targets_by_id(older)):
                sel.memories[t.id] = t
            sel.superseded.append(older)
            todo.append(older)


def _from_archives(store: IndexStore, sel: Selection) -> list[Target]:
    """Memories extracted from an erased archive (``source_ref`` = its path)."""
    out: list[Target] = []
    for rel in sel.archives:
        out.extend(_targets(store.targets_from_ref(rel)))
    return out



def _claims(rel: str, data: bytes, memory_id: str) -> tuple[bool, str]:
    """Whether the file's own id is ``memory_id``, and its body (raw text if unparsable)."""
    try:
        mf = memory_file.parse(memory_file.decode(data, Path(rel)), Path(rel))
    except MemoryFileError:
        text = data.decode("utf-8", errors="replace")
        pattern = rf"(?m)^id:[ \t]*['\"]?{re.escape(memory_id)}['\"]?[ \t]*$"
        return re.search(pattern, text) is not None, text
    own = mf.meta.get("id")
    own_id = str(own) if own not in (None, "") else path_id(rel)
    return own_id == memory_id, mf.body


def files_to_read(store: IndexStore, on_disk: dict[str, os.stat_result], ids: list[str]) -> list[str]:
    """The files whose id the index cannot vouch for, sorted.

    A file indexed as it is now (same size and mtime) has its row's id (a
    rewrite in the same mtime tick to another file's id is not worth reading
    every file for: a sync re-reads such racy rows anyway); a file whose recorded error is unchanged and names none of
    ``ids`` claims none of them either. Every other file (new or changed
    since the last sync, or refused for an id clash or as erased content
    naming one of ``ids``) must be read: so a vault the index agrees with
    costs an erase no file reads.
    """
    rows = store.sync_rows()
    errors = store.index_errors()
    out: list[str] = []
    for rel, st in on_disk.items():
        row = rows.get(rel)
        if row is not None and row.size == st.st_size and row.mtime_ns == st.st_mtime_ns:
            continue
        err = errors.get(rel)
        if (
            row is None and err is not None and err.size == st.st_size and err.mtime_ns == st.st_mtime_ns
            and not any(i in err.reason for i in ids)
        ):
            continue
        out.append(rel)
    return sorted(out)


def claiming_files(root: Path, paths: list[str], ids: list[str]) -> dict[str, tuple[str, str]]:
    """Files among ``paths`` whose own id is one of ``ids``: path -> (id, body).

    Reads each file's bytes (the id in the bytes is the cheap filter) and
    parses only those that hold an id, or whose name gives them one
    (hand-written files without an id line).
    """
    wanted = {i: i.encode("utf-8") for i in ids}
    found: dict[str, tuple[str, str]] = {}
    for rel in paths:
        derived = path_id(rel)
        try:
            data = (root / rel).read_bytes()
        except OSError:
            continue
        for memory_id, raw_id in wanted.items():
            if raw_id in data or derived == memory_id:
                claims, body = _claims(rel, data, memory_id)
                if claims:
                    found[rel] = (memory_id, body)
                    break
    return found


_ASCII_WORD = re.compile(r"[a-z0-9]{4,}")


def same_text(store: IndexStore, bodies: list[str], exclude: set[str]) -> list[Target]:
    """Indexed memories (not in ``exclude``) whose text is an erased one, as the erased list compares.

    SQLite narrows the rows first: a body with the same canonical text holds
    its longest ASCII word (LIKE folds ASCII case), so only those are folded
    in Python; a text without such a word is compared with every row.
    """
    forms = {canonical(b) for b in bodies}
    forms.discard("")
    out: dict[str, Target] = {}
    for form in forms:
        words = _ASCII_WORD.findall(form)
        for target in _targets(store.targets_containing(max(words, key=len) if words else None)):
            if target.id not in exclude and canonical(target.body) == form:
                out[target.id] = target
    return list(out.values())
