"""What an import will read of one export, and reading it within those bounds.

A chat export is one JSON document, often inside a .zip. Deflate packs a
run of one byte a thousand to one, so a 1.5 MB zip can inflate to 1.5 GB,
and JSON text can be nested deeper than Python's parser recurses or hold
numbers too long for it. The bounds are checked before the cost: the size
the zip's directory declares before anything is inflated (and inflating
stops at that size, whatever the data says), the number of entries as the
directory is read, the number of JSON objects as they are built. A bound
passed is one error naming the file, before anything is written.

The limits sit far above real exports: a ChatGPT export of several thousand
conversations is a conversations.json of a few hundred MB (a message is
about six JSON objects in some 600 bytes of text).
"""

from __future__ import annotations

import json
import sys
import zipfile
from pathlib import Path
from typing import Any

from memex.errors import InvalidArgument

MAX_EXPORT_BYTES = 512 << 20  # one JSON document, inflated
MAX_ZIP_ENTRIES = 200_000  # files in an export's .zip (ChatGPT's carry every uploaded image)
MAX_JSON_ITEMS = 10_000_000  # JSON objects in one document (each costs ~200 bytes of memory)
EXPORT_NAME = "conversations.json"


def _size_text(n: int) -> str:
    return f"{n / (1 << 30):.1f} GiB" if n >= 1 << 30 else f"{n / (1 << 20):.0f} MiB"


def read_export(path: Path) -> tuple[bytes, str]:
    """The bytes of a JSON export (the file, or conversations.json inside a
    .zip export) and the name to report it by."""
    if path.suffix.lower() != ".zip":
        try:
            size = path.stat().st_size
            if size > MAX_EXPORT_BYTES:
                raise InvalidArgument(str(path), f"is larger than {_size_text(MAX_EXPORT_BYTES)}; not imported")
            with path.open("rb") as handle:
                return handle.read(MAX_EXPORT_BYTES + 1), str(path)
        except OSError as exc:
            raise InvalidArgument(str(path), exc.strerror or str(exc)) from exc
    try:
        with zipfile.ZipFile(path) as archive:
            return _member(path, archive)
    except (OSError, zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, NotImplementedError) as exc:
        raise InvalidArgument(str(path), f"cannot be read as a .zip ({exc})") from exc


def _member(path: Path, archive: zipfile.ZipFile) -> tuple[bytes, str]:
    entries = archive.infolist()
    if len(entries) > MAX_ZIP_ENTRIES:
        raise InvalidArgument(str(path), f"holds more than {MAX_ZIP_ENTRIES} entries; not an export memex reads")
    named = [i for i in entries if i.filename.rsplit("/", 1)[-1] == EXPORT_NAME]
    if not named:
        raise InvalidArgument(str(path), f"holds no {EXPORT_NAME} (is it a ChatGPT or Claude.ai export?)")
    info = min(named, key=lambda i: len(i.filename))
    where = f"{path}:{info.filename}"
    if info.file_size > MAX_EXPORT_BYTES:
        raise InvalidArgument(
            str(path), f"{info.filename} inflates to {_size_text(info.file_size)}, larger than "
            f"{_size_text(MAX_EXPORT_BYTES)}; not imported",
        )
    # zipfile stops inflating at the declared size (and then finds the CRC
    # wrong if the data went on): memory stays within what was checked.
    with archive.open(info) as member:
        data = member.read(info.file_size + 1)
    if len(data) > info.file_size:  # pragma: no cover - zipfile itself stops at file_size
        raise InvalidArgument(str(path), f"{info.filename} is larger than its zip entry says; not imported")
    return data, where


class _TooMany(Exception):
    pass


def load_json(data: bytes, origin: str) -> Any:
    """Parse an export: each way JSON text can exceed what Python holds is
    one error naming ``origin``."""
    count = 0

    def counted(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        nonlocal count
        count += 1
        if count > MAX_JSON_ITEMS:
            raise _TooMany
        return dict(pairs)

    try:
        return json.loads(data.decode("utf-8-sig"), object_pairs_hook=counted)
    except UnicodeDecodeError as exc:
        raise InvalidArgument(origin, f"is not UTF-8 text (byte {exc.start})") from exc
    except json.JSONDecodeError as exc:
        raise InvalidArgument(origin, f"is not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})") from exc
    except RecursionError as exc:
        raise InvalidArgument(origin, "is nested too deeply to read; not imported") from exc
    except _TooMany as exc:
        raise InvalidArgument(origin, f"holds more than {MAX_JSON_ITEMS} items (JSON objects); not imported") from exc
    except ValueError as exc:  # an integer past Python's digit limit for int()
        digits = sys.get_int_max_str_digits()
        raise InvalidArgument(origin, f"holds a number too long to read (over {digits} digits); not imported") from exc
