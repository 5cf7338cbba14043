"""The list of erased bodies, kept only as keyed hashes (issue 5, "never again").

After an erasure, an agent hook re-reading an old transcript must not store
the same text again. So memex remembers what it erased, but only as
HMAC-SHA256 of the body's dedup hash under a per-vault secret: without the
secret nobody can test a guess ("was 'my salary is X' erased?") against the
list, and with it the list still holds no text.

Both live in files under ``.memex/`` so that they survive deleting
``index.db`` (the index is derived; this list is not):

- ``erase.key``: 32 random bytes, hex, created on first use, mode 0600,
  git-ignored (committing it next to the list would make the list guessable).
- ``erased.txt``: one hex digest per line, appended, never rewritten.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from collections.abc import Iterable
from pathlib import Path

from memex.errors import IndexStoreError
from memex.text import body_hash

KEY_NAME = "erase.key"
LIST_NAME = "erased.txt"


def _key(memex_dir: Path, create: bool) -> bytes | None:
    path = memex_dir / KEY_NAME
    try:
        text = path.read_text(encoding="ascii").strip()
    except FileNotFoundError:
        if not create:
            return None
        text = secrets.token_hex(32)
        # O_EXCL: two processes erasing at once must not each write a key.
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            return _key(memex_dir, create=False)
        with os.fdopen(fd, "w", encoding="ascii") as handle:
            handle.write(text + "\n")
            handle.flush()
            os.fsync(handle.fileno())
    except (OSError, UnicodeDecodeError) as exc:
        raise IndexStoreError(f"{path}: cannot read the erasure key: {exc}") from exc
    try:
        key = bytes.fromhex(text)
    except ValueError as exc:
        raise IndexStoreError(f"{path}: the erasure key is not hex; restore it from a backup") from exc
    if len(key) < 16:
        raise IndexStoreError(f"{path}: the erasure key is too short ({len(key)} bytes)")
    return key


def keyed_hash(key: bytes, body: str) -> str:
    """HMAC of the body as dedup normalizes it (case, whitespace, provenance prefix)."""
    return hmac.new(key, body_hash(body).encode("ascii"), hashlib.sha256).hexdigest()


def remember(memex_dir: Path, bodies: Iterable[str]) -> int:
    """Append the keyed hashes of ``bodies`` not yet listed; returns how many were new."""
    key = _key(memex_dir, create=True)
    assert key is not None
    known = _listed(memex_dir)
    fresh = list(dict.fromkeys(h for h in (keyed_hash(key, b) for b in bodies) if h not in known))
    if not fresh:
        return 0
    path = memex_dir / LIST_NAME
    with open(path, "a", encoding="ascii") as handle:
        handle.write("".join(h + "\n" for h in fresh))
        handle.flush()
        os.fsync(handle.fileno())
    return len(fresh)


def _listed(memex_dir: Path) -> set[str]:
    path = memex_dir / LIST_NAME
    try:
        lines = path.read_text(encoding="ascii").split()
    except FileNotFoundError:
        return set()
    except (OSError, UnicodeDecodeError) as exc:
        raise IndexStoreError(f"{path}: cannot read the erased list: {exc}") from exc
    return set(lines)


def is_erased(memex_dir: Path, body: str) -> bool:
    """Whether a body with the same dedup hash was erased from this vault."""
    if not (memex_dir / LIST_NAME).exists():
        return False
    key = _key(memex_dir, create=False)
    if key is None:
        # A list without its key cannot be checked; say so rather than
        # silently letting erased text back in.
        raise IndexStoreError(
            f"{memex_dir / KEY_NAME}: missing, so {memex_dir / LIST_NAME} cannot be checked; "
            "restore the key, or delete the list to forget what was erased"
        )
    return keyed_hash(key, body) in _listed(memex_dir)
