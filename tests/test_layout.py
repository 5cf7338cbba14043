"""memex/layout.py is the one module that spells the vault's folder and file names."""

from __future__ import annotations

import ast
from pathlib import Path

import memex
from memex.layout import VaultPaths, is_vault
from memex.vault import init_vault

PACKAGE = Path(memex.__file__).parent
# Names that mean a place in the vault wherever they appear.
FILE_NAMES = {
    ".memex", "index.db", "write.lock", "erased.txt", "erase.key", "config.toml", "watch.json",
    "watch.lock", "erasure.log", "hooks.log", "context-commit.log",
}
# Words that are also JSON keys and table names: a place only when joined as a path.
FOLDER_WORDS = {"memories", "sessions", "writers", "cache", "agents"}
# Codex's own settings file (~/.codex/config.toml), not the vault's.
ALLOWED = {("agents/install.py", "config.toml")}


def _docstrings(tree: ast.AST) -> set[int]:
    found: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def spellings(source: str) -> list[str]:
    """Vault folder/file names spelled out in ``source`` (docstrings aside)."""
    tree = ast.parse(source)
    skip = _docstrings(tree)
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip:
            text = node.value
            if (text in FILE_NAMES or any(text.startswith((n + "-", n + ".")) for n in FILE_NAMES - {".memex"})
                    or ".memex/" in text or any(f"{w}/" in text for w in ("memories", "sessions"))):
                found.append(text)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            for side in (node.left, node.right):
                if isinstance(side, ast.Constant) and side.value in FOLDER_WORDS:
                    found.append(str(side.value))
        if isinstance(node, ast.Tuple) and len(node.elts) > 1 and any(
            isinstance(e, ast.Constant) and e.value in ("memories", "sessions") for e in node.elts
        ) and all(isinstance(e, ast.Constant) and e.value in FOLDER_WORDS for e in node.elts):
            found.extend(str(e.value) for e in node.elts if isinstance(e, ast.Constant))  # a tuple of folders
    return found


def test_no_module_but_layout_spells_the_vaults_names() -> None:
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel == "layout.py":
            continue
        for text in spellings(path.read_text(encoding="utf-8")):
            if (rel, text) not in ALLOWED:
                offenders.append(f"{rel}: {text!r}")
    assert offenders == []


def test_the_scan_sees_the_forms_it_forbids() -> None:
    source = (
        'x = root / ".memex" / "write.lock"\n'
        'y = root / "memories"\n'
        'z = f"in .memex/config.toml"\n'
        'FOLDERS = ("memories", "sessions")\n'
        'ref = "sessions/a/turns.jsonl#1"\n'
        'wal = "index.db-wal"\n'
        'ok = {"memories": [], "sessions": 1}\n'
        'def f():\n    """Writes .memex/index.db."""\n'
    )
    assert sorted(spellings(source)) == sorted(
        [".memex", "write.lock", "memories", "in .memex/config.toml", "memories", "sessions", "sessions/a/turns.jsonl#1", "index.db-wal"]
    )


def test_vault_paths_are_where_a_new_vault_has_them(tmp_path: Path) -> None:
    root = init_vault(tmp_path / "v", git=False)
    paths = VaultPaths(root)
    assert is_vault(root) and not is_vault(tmp_path)
    assert paths.memex_dir.is_dir() and paths.memories.is_dir()
    assert paths.config.is_file()
    assert paths.index.is_file()  # init reindexes
    assert paths.sessions == root / "sessions" and paths.session_dir("s1") == root / "sessions" / "s1"
    assert paths.write_lock.parent == paths.memex_dir == paths.erased_list.parent == paths.watch_state.parent
