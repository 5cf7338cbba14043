"""The one way a scope, session or title becomes a file or folder name.

Nothing user- or agent-supplied reaches the file system except through
:func:`safe_name`: no ``..``, no path separators, no characters or names that
Windows refuses, no control characters. A name that cannot be kept readable
is replaced by a short hash, so two different names never collide by being
mangled into the same string.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata

from memex.errors import InvalidArgument
from memex.scopes import BARE_KINDS

_ILLEGAL = re.compile(r'[<>:"/\\|?*\x00-\x1f\x7f]')
_DASHES = re.compile(r"-{2,}")
# Leading/trailing dots, dashes and any Unicode space: hidden files, names
# Windows truncates, and names that differ from another only invisibly.
_EDGES = re.compile(r"^[\s.-]+|[\s.-]+$")
_TRAILING = re.compile(r"[\s.-]+$")
_WINDOWS_RESERVED = frozenset(
    ["con", "prn", "aux", "nul"]
    + [f"com{i}" for i in range(1, 10)]
    + [f"lpt{i}" for i in range(1, 10)]
)
MAX_NAME = 64
_SCOPE_KIND = re.compile(r"^[a-z][a-z0-9_-]{0,31}$")


def _hashed(name: str) -> str:
    return "h-" + hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def _with_hash(readable: str, name: str) -> str:
    """``readable`` cut to fit, then a short hash of ``name``. The cut may end
    in a dash, dot or space: those go, or the result ("…--hash") would not
    be its own safe name."""
    stem = _TRAILING.sub("", readable[: MAX_NAME - 9])
    return f"{stem}-{_hashed(name)[2:9]}"


def safe_name(name: str) -> str:
    """A file-system-safe, readable version of ``name`` (one path component)."""
    cleaned = unicodedata.normalize("NFC", name).strip()
    replaced = _EDGES.sub("", _DASHES.sub("-", _ILLEGAL.sub("-", cleaned)))
    if not replaced or replaced in {".", ".."}:
        return _hashed(name)
    if replaced.split(".")[0].rstrip().lower() in _WINDOWS_RESERVED:
        replaced = "_" + replaced
    # A name that lost more than a third of its characters is no longer
    # readable as itself; and a changed name (even only trimmed or
    # NFC-normalized) must not collide with a different name that happened to
    # look like the result, so it carries a hash of the original.
    if replaced != name:
        lost = sum(1 for a in cleaned if _ILLEGAL.match(a))
        if lost * 3 > len(cleaned):
            return _hashed(name)
        replaced = _with_hash(replaced, name)
    if len(replaced) > MAX_NAME:
        replaced = _with_hash(replaced, name)
    return replaced


def check_scope(scope: str) -> str:
    """Validate a scope: ``user``, or ``kind:name`` such as ``project:memex``."""
    scope = scope.strip()
    if not scope:
        raise InvalidArgument("scope", "must not be empty")
    kind, _, rest = scope.partition(":")
    if not _SCOPE_KIND.match(kind):
        raise InvalidArgument(
            "scope",
            f"{scope!r}: the part before ':' must be a lower-case word such as "
            "'user', 'project' or 'agent'",
        )
    if ":" in scope and not rest.strip():
        raise InvalidArgument("scope", f"{scope!r}: nothing after ':'")
    return scope


def scope_dir_parts(scope: str) -> list[str]:
    """Folder components under ``memories/`` for a scope.

    ``user`` -> ``["user"]``; ``project:memex`` -> ``["project", "memex"]``.
    """
    kind, sep, rest = check_scope(scope).partition(":")
    return [safe_name(kind), safe_name(rest)] if sep else [safe_name(kind)]


def scope_from_dir_parts(parts: list[str], default: str) -> str:
    """The scope a hand-written file gets from its folder (inverse of the above).

    Folders below a scope's own are the person's filing: ``user/recipes/``
    is ``user`` (a kind without names), ``project/memex/notes/`` is
    ``project:memex``.
    """
    if not parts:
        return default
    if len(parts) == 1 or parts[0] in BARE_KINDS:
        return parts[0]
    return f"{parts[0]}:{parts[1]}"


_SLUG_DROP = re.compile(r"[^\w\s-]", re.UNICODE)


def slug(text: str, max_words: int = 8, max_len: int = 48) -> str:
    """A short readable file-name stem from the start of a body."""
    words = _SLUG_DROP.sub(" ", unicodedata.normalize("NFKC", text).lower()).split()
    stem = "-".join(words[:max_words])[:max_len].strip("-_")
    return safe_name(stem) if stem else "memory"
