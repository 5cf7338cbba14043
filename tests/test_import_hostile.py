"""``memex import`` given hostile input (docs/import.md, "What an import reads"):
it reads only what it was given, a bad file is one line naming it and the
rest is imported, ``--json`` stays valid JSON, and an export's size and
item count are bounded before they cost memory."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import tracemalloc
import zipfile
from pathlib import Path

import pytest

from memex import importers
from memex.errors import InvalidArgument
from memex.importers import candidates, import_path, limits
from memex.vault import Vault
from tests.hook_helpers import set_config


@pytest.fixture
def lexical_root(vault_root: Path) -> Path:
    set_config(vault_root, "embedding", 'model = "none"')  # plumbing: no model needed
    return vault_root


def _cli(root: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    """The real command; bytes, since what it prints must be checked as UTF-8."""
    return subprocess.run(
        [sys.executable, "-c", "from memex.cli import run; run()", "--vault", str(root), *args],
        capture_output=True, timeout=300,
    )


def _bodies(root: Path) -> list[str]:
    with Vault(root, embedder=None) as vault:
        return sorted(h.body.strip() for h in vault.list(limit=1000))


# -- reading only what it was given ----------------------------------------


def test_links_out_of_the_folder_and_into_the_vault_settings_are_refused(lexical_root: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "credentials").write_text("aws secret key AKIAEXAMPLE1234", encoding="utf-8")
    notes = tmp_path / "notes"
    (notes / "sub").mkdir(parents=True)
    (notes / "deploys.md").write_text("We deploy from the main branch only.", encoding="utf-8")
    (notes / "sub" / "inside.md").write_text("The staging host is kestrel.", encoding="utf-8")
    (notes / "creds.md").symlink_to(elsewhere / "credentials")
    (notes / "key.md").symlink_to(lexical_root / ".memex" / "erase.key")
    (notes / "config.md").symlink_to(lexical_root / ".memex" / "config.toml")
    (notes / "same.md").symlink_to(notes / "sub" / "inside.md")  # inside the folder: read
    (notes / "outdir").symlink_to(elsewhere, target_is_directory=True)

    done = _cli(lexical_root, "import", str(notes), "--format", "obsidian")
    assert done.returncode == 0, done.stderr
    err = done.stderr.decode()
    assert "Traceback" not in err
    for name, why in (("creds.md", "points outside the imported folder"), ("key.md", "vault's .memex folder"),
                      ("config.md", "vault's .memex folder")):
        lines = [line for line in err.splitlines() if name in line]
        assert len(lines) == 1 and why in lines[0], err
    # The link inside the folder is read: a note of its own, titled by the
    # link's name (a title the target lacks is something the note adds, so
    # dedup keeps it beside the target's note rather than dropping it).
    assert _bodies(lexical_root) == [
        "# deploys\n\nWe deploy from the main branch only.",
        "# inside\n\nThe staging host is kestrel.",
        "# same\n\nThe staging host is kestrel.",
    ]
    assert "AKIAEXAMPLE" not in done.stdout.decode()


def test_a_folder_holding_the_vault_never_reads_its_settings_or_memories(vault: Vault, tmp_path: Path) -> None:
    """Importing a parent of the vault (a home folder, say): the vault's files
    are memories already and its .memex/ is never read, not even as a link."""
    vault.add("The office closes at six", scope="user")
    parent = vault.root.parent
    (parent / "readme.md").write_text("We always review before merging.", encoding="utf-8")
    (parent / "erase-key.md").symlink_to(vault.paths.config)  # inside the imported folder, but in .memex/
    report = import_path(vault, parent, fmt="obsidian", dry_run=True)
    assert [i["text"] for i in report.items] == ["# readme\n\nWe always review before merging."]
    assert report.skipped_files == [{"path": str(parent / "erase-key.md"),
                                     "reason": "is in the vault's .memex folder; never imported"}]


def test_a_fifo_in_the_folder_is_skipped_not_waited_on(vault: Vault, tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "good.md").write_text("Deploy from the main branch only.", encoding="utf-8")
    os.mkfifo(notes / "pipe.md")
    reports: list[importers.ImportReport] = []
    worker = threading.Thread(target=lambda: reports.append(import_path(vault, notes, fmt="obsidian")), daemon=True)
    worker.start()
    worker.join(120)
    if worker.is_alive():  # blocked opening the FIFO: a writer that closes at once lets it go
        os.close(os.open(notes / "pipe.md", os.O_WRONLY | os.O_NONBLOCK))
        worker.join(30)
    assert reports, "the import waited on the FIFO"
    assert reports[0].created == 1
    assert reports[0].skipped_files == [{"path": str(notes / "pipe.md"), "reason": "is not a regular file; not imported"}]


# -- a bad file is one line, the rest is imported ---------------------------


def test_a_chatgpt_timestamp_too_large_for_a_float_is_not_fatal(lexical_root: Path, tmp_path: Path) -> None:
    message = {"id": "m1", "author": {"role": "user"}, "create_time": int("9" * 400),
               "content": {"parts": ["I always use tabs for indentation."]}}
    export = [{"conversation_id": "c1", "mapping": {"m1": {"id": "m1", "message": message, "parent": None}}}]
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps(export), encoding="utf-8")
    done = _cli(lexical_root, "import", str(path), "--format", "chatgpt")
    assert done.returncode == 0 and b"Traceback" not in done.stderr, done.stderr
    assert _bodies(lexical_root) == ["I always use tabs for indentation."]


@pytest.mark.parametrize("content, message", [
    ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
    ('[{"memory": "tea", "id": ' + "9" * 5000 + "}]", "number too long"),
])
def test_json_that_python_cannot_hold_is_one_line_naming_the_file(
    lexical_root: Path, tmp_path: Path, content: str, message: str
) -> None:
    path = tmp_path / "memories.json"
    path.write_text(content, encoding="utf-8")
    done = _cli(lexical_root, "import", str(path), "--format", "mem0")
    err = done.stderr.decode()
    assert done.returncode == 1 and "Traceback" not in err
    assert err.startswith(f"Error: {path}: ") and message in err and len(err.strip().splitlines()) == 1


def test_a_note_whose_front_matter_is_nested_too_deeply_is_skipped(vault: Vault, tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "deep.md").write_text("---\ntags: " + "[" * 5000 + "]" * 5000 + "\n---\nWe deploy on Fridays.\n")
    (notes / "good.md").write_text("We never deploy on Mondays.", encoding="utf-8")
    report = import_path(vault, notes, fmt="obsidian")
    assert report.created == 1
    assert [s["path"] for s in report.skipped_files] == [str(notes / "deep.md")]


def _bad_name(folder: Path) -> Path:
    """A note whose name is not UTF-8 (Latin-1 'é'), as Python names it."""
    name = os.fsdecode(b"caf\xe9.md")
    (folder / name).write_bytes(b"We always deploy on Fridays.\n")
    return folder / name


def test_a_folder_whose_only_note_has_a_name_that_is_not_utf8(lexical_root: Path, tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    _bad_name(notes)
    done = _cli(lexical_root, "import", str(notes), "--format", "obsidian")
    err = done.stderr.decode("utf-8")
    assert done.returncode == 0 and "Traceback" not in err, err
    lines = [line for line in err.splitlines() if "caf" in line]
    assert len(lines) == 1 and "caf\\xe9.md" in lines[0], err
    assert _bodies(lexical_root) == []


def test_json_output_is_valid_whatever_the_file_names_and_texts(lexical_root: Path, tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    _bad_name(notes)
    (notes / "good.md").write_text("We never deploy on Mondays.", encoding="utf-8")
    done = _cli(lexical_root, "import", str(notes), "--format", "obsidian", "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout.decode("utf-8"))  # strict UTF-8: raw bytes would fail here
    assert data["created"] == 1
    assert [s["path"] for s in data["skipped_files"]] == [f"{notes}/caf\\xe9.md"]
    # A JSON export may itself hold text that is no Unicode (a lone surrogate escape).
    export = tmp_path / "mem0.json"
    export.write_text('[{"memory": "I like \\udce9 tea"}, {"memory": "I like green tea"}]', encoding="utf-8")
    for extra in (["--dry-run"], []):
        done = _cli(lexical_root, "import", str(export), "--json", *extra)
        assert done.returncode == (0 if extra else 1), done.stderr  # an item that failed: exit status 1
        data = json.loads(done.stdout.decode("utf-8"))
        assert data["items"][0]["text"] == "I like \\udce9 tea"
    assert data["created"] == 1 and data["failed"] == 1


def test_a_text_that_is_not_unicode_fails_alone_when_the_vault_has_a_model(vault: Vault, tmp_path: Path) -> None:
    """Found from outside: with a model, the import embeds ahead of the adds and
    hashed the text first; a lone surrogate in an export (which the adds
    refuse, one item) stopped the whole import with a traceback."""
    export = tmp_path / "mem0.json"
    export.write_text('[{"memory": "I like \\udce9 tea"}, {"memory": "I like green tea"}]', encoding="utf-8")
    report = import_path(vault, export)
    assert (report.created, report.failed) == (1, 1)
    assert "not valid Unicode" in report.items[0]["reason"]


# -- bounds on an export ---------------------------------------------------


def _claiming(path: Path, content: bytes, size: int) -> Path:
    """A zip export whose conversations.json holds ``content`` and whose
    headers say it inflates to ``size`` bytes (what a real bomb's say)."""
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as out:
        out.writestr("conversations.json", content)
    data = bytearray(path.read_bytes())
    central = data.rfind(b"PK\x01\x02")  # the central directory entry: uncompressed size at +24
    data[central + 24: central + 28] = size.to_bytes(4, "little")
    local = data.find(b"PK\x03\x04")  # and the local header's, at +22
    data[local + 22: local + 26] = size.to_bytes(4, "little")
    path.write_bytes(bytes(data))
    return path


def test_a_zip_bomb_fails_at_once_without_inflating(lexical_root: Path, tmp_path: Path) -> None:
    """1.5 GB of spaces compress to 1.5 MB; the size in the zip's directory
    is refused before a byte is inflated (a real one: docs/benchmarks.md)."""
    bomb = _claiming(tmp_path / "export.zip", b"[" + b" " * (1 << 20) + b"]", 1536 << 20)
    tracemalloc.start()
    try:
        with pytest.raises(InvalidArgument, match="larger than"):
            importers.detect_format(bomb)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20, peak
    done = _cli(lexical_root, "import", str(bomb))
    err = done.stderr.decode()
    assert done.returncode == 1 and err.startswith(f"Error: {bomb}") and "larger than" in err, err


def test_a_zip_that_lies_about_its_size_is_read_no_further(tmp_path: Path) -> None:
    """The directory claims a small conversations.json: inflating stops there."""
    path = _claiming(tmp_path / "export.zip", b"[" + b" " * (4 << 20) + b"]", 100)
    tracemalloc.start()
    try:
        with pytest.raises(InvalidArgument, match=str(path)):
            importers.detect_format(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20, peak


def test_an_export_with_too_many_entries_or_items_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(limits, "MAX_ZIP_ENTRIES", 50)
    crowded = tmp_path / "crowded.zip"
    with zipfile.ZipFile(crowded, "w") as out:
        out.writestr("conversations.json", "[]")
        for n in range(60):
            out.writestr(f"file-{n}.png", b"")
    with pytest.raises(InvalidArgument, match="more than 50 entries"):
        importers.detect_format(crowded)
    monkeypatch.setattr(limits, "MAX_JSON_ITEMS", 1000)
    many = tmp_path / "mem0.json"
    many.write_text(json.dumps([{"memory": f"fact {n}"} for n in range(2000)]), encoding="utf-8")
    with pytest.raises(InvalidArgument, match="more than 1000 items"):
        candidates(many, "mem0")
