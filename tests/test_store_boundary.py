"""Only memex/store/ writes SQL (docs/store.md): every other module reaches
the index through the store's typed operations.

The check reads the AST of every module outside memex/store/ and fails on
any string constant (an f-string's literal parts included) that is an SQL
statement. Docstrings and comments are prose and are left alone.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import memex

PACKAGE = Path(memex.__file__).parent
STORE = PACKAGE / "store"
# An SQL statement begins with one of these words, followed by what only SQL has there.
SQL = re.compile(
    r"^\s*(?:WITH\s+\w+\s+AS\b|SELECT\s+[\w*(]|INSERT\s+(?:OR\s+\w+\s+)?INTO\b|UPDATE\s+\w+\s+SET\b"
    r"|DELETE\s+FROM\b|CREATE\s+(?:UNIQUE\s+|VIRTUAL\s+)?(?:TABLE|INDEX)\b|DROP\s+TABLE\b"
    r"|ALTER\s+TABLE\b|PRAGMA\s+\w+|BEGIN\b(?:\s+IMMEDIATE)?\s*$|COMMIT\s*$|ROLLBACK\s*$|VACUUM\b)"
)  # upper case, as memex writes SQL: "Update the index" in a message is not a statement


def _docstring_nodes(tree: ast.AST) -> set[int]:
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                out.add(id(body[0].value))
    return out


def sql_strings(source: str) -> list[tuple[int, str]]:
    """(line, text) of every string constant in ``source`` that is an SQL statement."""
    tree = ast.parse(source)
    docs = _docstring_nodes(tree)
    in_fstrings = {id(v) for node in ast.walk(tree) if isinstance(node, ast.JoinedStr) for v in node.values}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):  # an f-string: its literal parts, a word for each value
            text = "".join(v.value if isinstance(v, ast.Constant) else "x" for v in node.values)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            if id(node) in docs or id(node) in in_fstrings:
                continue
            text = node.value
        else:
            continue
        if SQL.match(text):
            found.append((node.lineno, text))
    return sorted(found)


def modules_outside_store() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if STORE not in p.parents)


def test_no_module_outside_the_store_writes_sql() -> None:
    offenders = [
        f"{path.relative_to(PACKAGE.parent)}:{line}: {text.strip()[:60]!r}"
        for path in modules_outside_store()
        for line, text in sql_strings(path.read_text(encoding="utf-8"))
    ]
    assert offenders == []


def test_the_scan_sees_the_store_and_every_kind_of_statement() -> None:
    """The check can fail: it finds the store's own statements, and a planted
    statement of each kind, plain or in an f-string, in a module's code."""
    assert sql_strings((STORE / "sqlite" / "memories.py").read_text(encoding="utf-8"))
    planted = '''
"""A docstring that says SELECT id FROM memories is prose."""
def f(conn, where):
    conn.execute("SELECT id FROM memories WHERE rowid = ?", (1,))
    conn.execute(f"SELECT {where} FROM memories")
    conn.execute("INSERT OR REPLACE INTO usage(memory_id) VALUES (?)")
    conn.execute("UPDATE memories SET embedded = 0")
    conn.execute("DELETE FROM memory_vec WHERE rowid = ?")
    conn.execute("PRAGMA user_version")
    conn.execute("CREATE VIRTUAL TABLE x USING vec0(e float[3])")
    conn.execute("WITH f AS MATERIALIZED (SELECT 1) SELECT * FROM f")
    conn.execute("BEGIN IMMEDIATE")
    return "select the scope to search", "Update the index set by hand", "delete from the vault"
'''
    found = sql_strings(planted)
    assert [line for line, _ in found] == [4, 5, 6, 7, 8, 9, 10, 11, 12]
