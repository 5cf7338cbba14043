"""The list of erased bodies, kept only as keyed hashes (docs/forgetting.md).

After an erasure, an agent hook re-reading an old transcript must not store
the same text again. So memex remembers what it erased, but only as
HMAC-SHA256 of the body's dedup hash under a per-vault secret: without the
secret nobody can test a guess ("was 'my salary is X' erased?") against the
list, and with it the list still holds no text.

Both live in files under ``.memex/`` so that they survive deleting
``index.db`` (the index is derived; this list is not):

- ``erase.key``: 32 random bytes, hex, created on first use, mode 0600,
  git-ignored (committing it next to the list would make the list guessable).
- ``erased.txt``: one hex digest per line, appended, never rewritten by
  memex (committed, so teammates' clones learn what was erased). A
  line ``allow <digest>`` records a deliberate way back (``memex add
  --allow-erased``, ``memex reindex --allow-erased PATH``); a later erasure
  of the same text appends the digest again. The last line about a digest
  decides.
- ``erased.local``: the same lines again, git-ignored, so that git
  restoring an older ``erased.txt`` (``git checkout -- .``, ``git reset
  --hard``, a stash) cannot bring an erased file back *and* drop it from the
  list in one step. The two are read as one (:mod:`memex.erased.mirror`);
  reads never write ``erased.txt``, so memex leaves git no local change to
  refuse over.

What counts as the same text: the body as dedup normalizes it (provenance
prefix and injected blocks removed, Unicode NFC, whitespace runs collapsed,
case folded), then with punctuation and symbols at either end trimmed, so
"My PIN is 4711." and "my pin is 4711" are one text (docs/forgetting.md). Lists
written before that trimming existed hold the untrimmed form; both forms are
checked.

The list holds at index time too (:class:`Guard`): a file whose body was
erased (restored from git or a backup, a sync tool's copy) is not indexed,
and doctor names it. The list also holds the erased memories' own ids (those
written in frontmatter; an id made from a file's path would refuse the next
file written there), so an older version of an erased memory that git brings
back is refused as well, though its text was edited away before the erasure.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
import secrets
import unicodedata
from collections.abc import Iterable
from pathlib import Path

from memex.errors import IndexStoreError
from memex.erased import spare
from memex.erased.mirror import Mirror, journaled
from memex.files import writers
from memex.layout import ERASE_KEY_NAME, ERASED_JOURNAL_NAME, ERASED_LIST_NAME
from memex.records import explicit_ids as explicit_ids  # the ids an erasure lists
from memex.text import body_hash, normalize, strip_injected

KEY_NAME = ERASE_KEY_NAME
LIST_NAME = ERASED_LIST_NAME
JOURNAL_NAME = ERASED_JOURNAL_NAME
ALLOW = "allow"
# A digest, or an allowance of one: the only lines the list holds.
_ENTRY = re.compile(rf"\A(?:{ALLOW} )?[0-9a-f]{{64}}\Z")


def _key(memex_dir: Path, create: bool) -> bytes | None:
    path = memex_dir / KEY_NAME
    where = spare.folder(memex_dir)
    kept = None if where is None else where / KEY_NAME
    try:
        text = path.read_text(encoding="ascii").strip()
    except FileNotFoundError:
        saved = None if kept is None else spare.read(kept)
        if saved is not None and _parse_key(saved) is not None:
            text = saved  # `git clean -fdx` took it, or a linked work tree never had it
        elif not create:
            return None
        else:
            text = secrets.token_hex(32)
        try:
            made = _create_key_file(path, text)
        except OSError as exc:
            raise IndexStoreError(f"{path}: cannot write the erasure key: {exc}") from exc
        if not made:
            return _key(memex_dir, create=False)  # another process made it first
    except (OSError, UnicodeDecodeError) as exc:
        raise IndexStoreError(f"{path}: cannot read the erasure key: {exc}") from exc
    key = _parse_key(text)
    if key is None:
        raise IndexStoreError(f"{path}: the erasure key is not at least 16 bytes of hex; restore it from a backup")
    if kept is not None and spare.read(kept) != text:
        spare.put(kept, text)  # the key this vault uses now, should .memex/ lose it
    return key


def _create_key_file(path: Path, text: str) -> bool:
    """Put the key at ``path`` whole or not at all; False when a key is there already.

    It is written to a temp file and fsynced first, then linked into place:
    a link, like ``O_EXCL``, fails when the path exists (two processes erasing
    at once must not each write a key), and a write that fails half way (a
    full disk, a kill) leaves no empty key behind, which would stop every
    later erasure."""
    fd, tmp = writers.make_temp(path.parent)
    try:
        with os.fdopen(fd, "w", encoding="ascii") as handle:
            handle.write(text + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o600)
        try:
            os.link(tmp, path)
        except FileExistsError:
            return False
        return True
    finally:
        try:
            os.unlink(tmp)
        except OSError:
            pass


def restore_key(memex_dir: Path) -> None:
    """Put ``erase.key`` back from its spare if it is gone, and the spare in line
    with the key in use (before a reader looks at the file itself, and after
    one installs it); a key that is not one is left for that reader to report."""
    try:
        _key(memex_dir, create=False)
    except IndexStoreError:
        pass


def _parse_key(text: str) -> bytes | None:
    try:
        key = bytes.fromhex(text)
    except ValueError:
        return None
    return key if len(key) >= 16 else None


def _trim_ends(text: str) -> str:
    """Drop punctuation, symbols and spaces at both ends (inner ones stay)."""
    start, end = 0, len(text)
    while start < end and _edge(text[start]):
        start += 1
    while end > start and _edge(text[end - 1]):
        end -= 1
    return text[start:end]


def _edge(ch: str) -> bool:
    return ch.isspace() or unicodedata.category(ch)[0] in "PS"


def canonical(body: str) -> str:
    """The text an erasure is keyed on (see the module doc)."""
    folded = normalize(strip_injected(body)).casefold()
    # A body of punctuation only keeps its punctuation, or it would match every such body.
    return _trim_ends(folded) or folded


def keyed_hash(key: bytes, body: str) -> str:
    """HMAC of the body's canonical form (case, whitespace, end punctuation folded)."""
    digest = hashlib.sha256(("v2\0" + canonical(body)).encode("utf-8")).hexdigest()
    return hmac.new(key, digest.encode("ascii"), hashlib.sha256).hexdigest()


def id_hash(key: bytes, memory_id: str) -> str:
    """HMAC of an erased memory's id (another domain than bodies: never equal to one)."""
    return hmac.new(key, ("id\0" + memory_id).encode("utf-8"), hashlib.sha256).hexdigest()


def legacy_hash(key: bytes, body: str) -> str:
    """The form lists written before end punctuation was folded hold."""
    return hmac.new(key, body_hash(body).encode("ascii"), hashlib.sha256).hexdigest()


def mirror(memex_dir: Path) -> Mirror:
    """``erased.txt`` and its journal (reads, doctor's count of lines git cut, their restore)."""
    # Only entries travel between the list and its journal: a line of anything
    # else (git's conflict markers, say) would be copied back after the
    # person who resolved the conflict deleted it.
    return journaled(memex_dir, LIST_NAME, JOURNAL_NAME, lambda line: bool(_ENTRY.match(line)))


def _append(memex_dir: Path, lines: list[str]) -> None:
    mirror(memex_dir).append(lines)


def remember(memex_dir: Path, bodies: Iterable[str], ids: Iterable[str] = ()) -> int:
    """List ``bodies`` (and the frontmatter ``ids``) as erased, again if they were
    allowed back; returns how many lines were new."""
    key = _key(memex_dir, create=True)
    assert key is not None
    state = _state(memex_dir)
    digests = [keyed_hash(key, b) for b in bodies] + [id_hash(key, i) for i in explicit_ids(ids)]
    fresh = list(dict.fromkeys(h for h in digests if state.get(h) is not True))
    if fresh:
        _append(memex_dir, fresh)
    return len(fresh)


def allow(memex_dir: Path, bodies: Iterable[str], ids: Iterable[str] = ()) -> int:
    """The deliberate way back: these erased bodies (and ids) may be stored and indexed again.

    Returns how many digests were erased (and are now allowed).
    """
    key = _key(memex_dir, create=False)
    if key is None:
        return 0
    state = _state(memex_dir)
    lines: list[str] = []
    digests = [h for body in bodies for h in (keyed_hash(key, body), legacy_hash(key, body))]
    digests += [id_hash(key, i) for i in ids]
    for h in digests:
        if state.get(h) is True:
            lines.append(f"{ALLOW} {h}")
            state[h] = False
    if lines:
        _append(memex_dir, list(dict.fromkeys(lines)))
    return len(lines)


def _state(memex_dir: Path) -> dict[str, bool]:
    """digest -> erased now (True) or allowed back (False); the last line decides."""
    return _parse(mirror(memex_dir).lines())


def _parse(lines: list[str]) -> dict[str, bool]:
    state: dict[str, bool] = {}
    for line in lines:
        parts = line.split()
        if len(parts) == 1:
            state[parts[0]] = True
        elif len(parts) == 2 and parts[0] == ALLOW:
            state[parts[1]] = False
    return state


def _missing_key(memex_dir: Path) -> IndexStoreError:
    # A list without its key cannot be checked; say so rather than
    # silently letting erased text back in.
    where = spare.folder(memex_dir)
    copies = f"the list and {JOURNAL_NAME} beside it" if where is None else (
        f"the list, {JOURNAL_NAME} beside it and the spare folder {where}")
    return IndexStoreError(
        f"{memex_dir / KEY_NAME}: missing, so {memex_dir / LIST_NAME} cannot be checked; "
        f"restore the key, or delete {copies} to forget what was erased"
    )


def is_erased(memex_dir: Path, body: str) -> bool:
    """Whether a body with the same canonical text was erased from this vault (and not allowed back)."""
    guard = Guard(memex_dir)
    guard.refresh()
    return guard.erased(body)


class Guard:
    """The erased list as the indexer checks it, re-read only when it grew.

    The list and its journal are append-only, so their sizes tell whether
    they changed (git cutting the list short changes its size too); the
    indexer asks again inside each write transaction, so an erasure that
    lands while a reindex is embedding is seen before the reindex commits.
    """

    def __init__(self, memex_dir: Path) -> None:
        self.memex_dir = memex_dir
        self._files = (memex_dir / LIST_NAME, *mirror(memex_dir).journals)
        self._size = -1
        self._sizes: tuple[int, ...] = ()
        self._key: bytes | None = None
        self._erased: set[str] = set()

    def refresh(self) -> None:
        sizes = tuple(_size(path) for path in self._files)
        if sizes == self._sizes:
            return
        lines = mirror(self.memex_dir).lines() if any(sizes) else []
        state = _parse(lines)
        self._erased = {h for h, erased in state.items() if erased}
        self._key = _key(self.memex_dir, create=False) if self._erased else None
        if self._erased and self._key is None:
            raise _missing_key(self.memex_dir)
        # Reading may have taught the journal lines: remember the sizes after it.
        self._sizes = tuple(_size(path) for path in self._files)
        # The list as read (both files as one), not erased.txt's size: git may have cut that.
        self._size = sum(len(line) + 1 for line in lines)

    @property
    def size(self) -> int:
        """The list's size in bytes at the last :meth:`refresh`, both files read as one (it only grows)."""
        return max(self._size, 0)

    def erased_id(self, memory_id: str) -> bool:
        """Whether an erased memory had this (frontmatter) id, as of the last :meth:`refresh`."""
        if not self._erased or self._key is None:
            return False
        return id_hash(self._key, memory_id) in self._erased

    def holds(self, memory_id: str, body: str) -> bool:
        """Whether a memory with this id or this body was erased (the check every reader makes)."""
        return self.erased(body) or self.erased_id(memory_id)

    def erased(self, body: str) -> bool:
        """Whether ``body`` was erased, as of the last :meth:`refresh`."""
        if not self._erased or self._key is None:
            return False
        return keyed_hash(self._key, body) in self._erased or legacy_hash(self._key, body) in self._erased


def _size(path: Path) -> int:
    try:
        return os.stat(path).st_size
    except FileNotFoundError:
        return 0
