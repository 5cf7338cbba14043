"""The import graph of ``memex/``: no cycle, and no import running back up.

The graph is built from the source (``ast``), not from what happens to be
imported at run time: every ``import`` statement counts, at module level,
inside functions (the lazy imports that keep start-up fast) and under
``if TYPE_CHECKING:`` (an annotation that names a module above is a
dependency on it all the same). ``from memex import decay`` is an edge to
``memex.decay``; ``from memex.x import name`` is an edge to ``memex.x``.

Loading ``memex.a.b`` also runs the package ``memex/a/__init__.py`` first;
that implicit step is not an edge here. It is safe because no package
``__init__`` below the CLI imports anything but its own submodules
(``test_package_inits_import_only_their_own_modules``).

The layers are the ones docs/design.md lists ("Layers"). A module belongs to
the layer of the longest prefix that names it; every module must have one,
so a new module is placed on purpose.

Packages form a layered graph too. Collapsing each module to its package
(``memex.index.guard`` to ``memex.index``; a module directly under memex/
is its own), the package graph has no cycle, and each package imports only
those listed before it: the layers' lists are one order, lowest first. Two
files can each avoid a cycle while their packages form one (the indexer
reading the erase package's list while erasure imports the indexer).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "memex"
DESIGN = PACKAGE.parent / "docs" / "design.md"

# Lowest first, and within a layer lowest first too: the order of the
# packages. Each entry is a package or a module directly under memex/ (the
# graph's nodes at package level); a module may import from its own package
# and from those listed before it, never after (docs/design.md, "Layers").
LAYERS: list[tuple[str, list[str]]] = [
    ("base", [
        "memex.errors", "memex.faults", "memex.layout", "memex.fields", "memex.text", "memex.jsonio", "memex.distribution",
        "memex.config_trust", "memex.config", "memex.scopes", "memex.plugins",
    ]),
    ("files", ["memex.files"]),
    # What has been erased sits below the index: the indexer and the write
    # path refuse an erased body; erasing itself is a feature above the vault.
    ("index", ["memex.records", "memex.store", "memex.embedding", "memex.erased", "memex.index"]),
    ("search, dedup", ["memex.search", "memex.dedup"]),
    ("core", ["memex.decay", "memex.adding", "memex.vault", "memex.meta_edit", "memex.ids"]),
    ("features", ["memex.consolidation", "memex.erase", "memex.health", "memex.watch", "memex.team"]),
    ("context, importers, agents", ["memex.context", "memex.importers", "memex.agents"]),
    # The package root is the public API (it re-exports from the core).
    ("cli", ["memex.demo", "memex.cli", "memex.console", "memex"]),
]
ORDER = [name for _title, names in LAYERS for name in names]

# Modules whose imports still run back up at package level, each deleted or
# rewritten by work in flight elsewhere; the list only shrinks (a module that
# is gone or imports nothing above must leave it).
IN_FLIGHT: set[str] = set()


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def imports_of(name: str, path: Path, known: set[str]) -> set[str]:
    """The memex modules ``path`` imports, anywhere in the file."""
    is_package = path.name == "__init__.py"
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: resolve against this module's package
                anchor = name.split(".") if is_package else name.split(".")[:-1]
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            # `from pkg import sub` imports the submodule; `from mod import name` the module.
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]
        else:
            continue
        for target in targets:
            while target and target not in known:  # `import memex.a.b` where only memex.a is ours
                target = target.rpartition(".")[0]
            if target.startswith("memex") and target != name:
                found.add(target)
    return found


def import_graph() -> dict[str, set[str]]:
    found = modules()
    known = set(found)
    return {name: imports_of(name, path, known) for name, path in found.items()}


def layer_of(module: str) -> int:
    best, best_len = -1, -1
    for index, (_title, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best_len:
                best, best_len = index, len(prefix)
    return best


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return out


def upward(graph: dict[str, set[str]]) -> list[str]:
    return sorted(
        f"{src} ({LAYERS[layer_of(src)][0]}) imports {dst} ({LAYERS[layer_of(dst)][0]})"
        for src, targets in graph.items() for dst in targets if layer_of(dst) > layer_of(src)
    )


def package_of(module: str) -> str:
    """``memex.a.b.c`` is in package ``memex.a``; ``memex.text`` is its own."""
    return ".".join(module.split(".")[:2])


def package_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """Which packages import which (a package's own modules do not count)."""
    out: dict[str, set[str]] = {package_of(m): set() for m in graph}
    for src, targets in graph.items():
        if src in IN_FLIGHT:
            continue
        out[package_of(src)] |= {package_of(t) for t in targets} - {package_of(src)}
    return out


def upward_packages(graph: dict[str, set[str]]) -> list[str]:
    """Imports of a package listed later in ORDER, module by module."""
    rank = {name: i for i, name in enumerate(ORDER)}
    return sorted(
        f"{src} imports {dst}" for src, targets in graph.items() if src not in IN_FLIGHT
        for dst in targets if rank[package_of(dst)] > rank[package_of(src)]
    )


def test_every_module_has_a_layer() -> None:
    assert [m for m in modules() if layer_of(m) < 0] == []


def test_the_import_graph_has_no_cycle() -> None:
    assert cycles(import_graph()) == []


def test_no_import_runs_back_up_a_layer() -> None:
    assert upward(import_graph()) == []


def test_the_order_names_every_package_once() -> None:
    """Every package and top-level module has its place in the order, and
    only whole packages do: a package cannot sit half below, half above."""
    assert sorted(ORDER) == sorted({package_of(m) for m in modules()})


def test_the_package_graph_has_no_cycle() -> None:
    assert cycles(package_graph(import_graph())) == []


def test_no_package_imports_one_listed_after_it() -> None:
    assert upward_packages(import_graph()) == []


def test_in_flight_exceptions_only_shrink() -> None:
    graph = import_graph()
    rank = {name: i for i, name in enumerate(ORDER)}
    still_up = {m for m in IN_FLIGHT if m in graph
                and any(rank[package_of(t)] > rank[package_of(m)] for t in graph[m])}
    assert still_up == IN_FLIGHT


def load_time_imports(path: Path) -> set[str]:
    """The memex modules a file imports when it is loaded: module-level
    statements only (not in functions, not under ``if TYPE_CHECKING:``)."""
    found: set[str] = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("memex"):
            found.add(str(node.module))
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("memex"))
    return found


def test_loading_a_package_runs_nothing_above_its_modules() -> None:
    """Importing ``memex.a.b`` runs ``memex/a/__init__.py`` first: that file
    must import nothing above the lowest of the package's modules (the
    indexer imports ``memex.erased.erased_list``; if ``memex/erase/__init__``
    loaded the erase steps, that would run the indexer's importers back up)."""
    graph = import_graph()
    found = modules()
    wrong = []
    for package, path in found.items():
        if path.name != "__init__.py" or package == "memex":
            continue
        members = [m for m in found if m.startswith(package + ".")]
        lowest = min((layer_of(m) for m in members), default=layer_of(package))
        wrong += [
            f"{package} imports {t}" for t in graph[package]
            if not t.startswith(package + ".") and layer_of(t) > lowest
        ]
    assert wrong == []
    # The package root is the public API: at load time it imports the error
    # tree only, the rest on first use (PEP 562), so every module may load it.
    assert load_time_imports(found["memex"]) == {"memex.errors"}


def test_the_checks_catch_what_they_are_for() -> None:
    """The graph sees imports in functions and under TYPE_CHECKING, and the
    checks fail on an upward import and on a cycle."""
    graph = import_graph()
    assert "memex.adding" in graph["memex.vault"]  # only inside Vault.add
    assert "memex.dedup.pipeline" in graph["memex.vault"]  # only under TYPE_CHECKING
    planted = {k: set(v) for k, v in graph.items()}
    planted["memex.files.memory_file"].add("memex.vault")  # files reaching up to the core
    assert set(upward(planted)) - set(upward(graph)) == {
        "memex.files.memory_file (files) imports memex.vault (core)"
    }
    # ... and the vault reaches the files: a cycle through both
    assert any({"memex.files.memory_file", "memex.vault"} <= set(c) for c in cycles(planted))
    # At package level: the indexer reaching the erase package (as it did for
    # the erased list) is upward, and with erase's own imports of the index a
    # package cycle, though no module cycle.
    planted = {k: set(v) for k, v in graph.items()}
    planted["memex.index.guard"].add("memex.erase.select")
    assert set(upward_packages(planted)) - set(upward_packages(graph)) == {
        "memex.index.guard imports memex.erase.select"
    }
    assert cycles(planted) == cycles(graph)
    assert any({"memex.index", "memex.erase"} <= set(c) for c in cycles(package_graph(planted)))
    # Within one layer the order holds too: the records below the store.
    planted = {k: set(v) for k, v in graph.items()}
    planted["memex.records"].add("memex.store.sqlite.schema")
    assert "memex.records imports memex.store.sqlite.schema" in upward_packages(planted)
    assert upward(planted) == upward(graph)  # one layer: the module check alone would pass it


@pytest.mark.parametrize("source, expected", [
    ("def f():\n    from memex.vault import Vault\n", {"memex.vault"}),
    ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from memex.vault import Vault\n", {"memex.vault"}),
    ("from memex import decay, errors\n", {"memex.decay", "memex.errors"}),
    ("from memex import __version__\n", {"memex"}),
    ("import memex.index.guard as guard\n", {"memex.index.guard"}),
    ("from . import scan\n", {"memex.index.scan"}),
    ("from .guard import erased_reason\n", {"memex.index.guard"}),
])
def test_imports_are_read_from_the_source(tmp_path: Path, source: str, expected: set[str]) -> None:
    fake = tmp_path / "probe.py"
    fake.write_text(source, encoding="utf-8")
    assert imports_of("memex.index.probe", fake, set(modules())) == expected


def test_design_md_lists_these_layers() -> None:
    """docs/design.md's "Layers" table names the same packages, layer by layer, in order."""
    text = DESIGN.read_text(encoding="utf-8")
    section = text.split("\n## Layers\n", 1)[1].split("\n## ", 1)[0]
    rows = [line.split("|")[1:3] for line in section.splitlines() if line.startswith("| ") and "---" not in line]
    documented = []
    for title, cell in rows[1:]:  # the first row is the header
        names = []
        for word in re.findall(r"`([^`]+)`", cell):
            name = "memex" if word == "memex" else "memex." + word.strip("/").replace("/", ".")
            names.append(name)
        documented.append((title.strip(), names))
    assert documented == LAYERS


# Modules still over the limit, each owned by work in flight elsewhere; the
# list only shrinks (a module that drops under the limit must leave it).
OVERSIZED: set[str] = set()
MAX_LINES = 500


def test_modules_hold_at_most_500_lines() -> None:
    """docs/design.md ("Who owns what"): modules of at most 500 lines, one
    concern each; a module that grows past it is split by concern."""
    sizes = {name: len(path.read_text(encoding="utf-8").splitlines()) for name, path in modules().items()}
    assert sorted(name for name, n in sizes.items() if n > MAX_LINES and name not in OVERSIZED) == []
    assert sorted(name for name in OVERSIZED if sizes.get(name, 0) <= MAX_LINES) == []


# docs/design.md ("One seam"): no code outside memex/store/ names a backend.
# What a module may not import there (a backend's driver, or the store's
# modules for one backend), and the names it may not use (a backend's store).
BACKEND_MODULES = ("apsw", "psycopg", "memex.store.sqlite", "memex.store.postgres")
BACKEND_NAMES = {"SqliteStore", "PgStore"}
# Modules that still name a backend, each being changed by work in flight; the
# list only shrinks (a module that names none must leave it).
NAMES_A_BACKEND_IN_FLIGHT: set[str] = set()


def backend_naming(path: Path) -> list[str]:
    """What in ``path`` names a backend: an import of a backend's module or a
    backend store's name (prose in comments and docstrings does not count)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            # `from memex.store.sqlite import vecmatrix` imports the module memex.store.sqlite.vecmatrix
            targets = [base] if _is_backend(base) else [f"{base}.{alias.name}" for alias in node.names]
            found += [alias.name for alias in node.names if alias.name in BACKEND_NAMES]
        elif isinstance(node, ast.Name) and node.id in BACKEND_NAMES:
            found.append(node.id)
            continue
        elif isinstance(node, ast.Attribute) and node.attr in BACKEND_NAMES:
            found.append(node.attr)
            continue
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in BACKEND_NAMES:
            found.append(node.value)  # a quoted annotation
            continue
        else:
            continue
        found += [t for t in targets if _is_backend(t)]
    return sorted(set(found))


def _is_backend(module: str) -> bool:
    return any(module == m or module.startswith(m + ".") for m in BACKEND_MODULES)


def outside_the_store() -> dict[str, Path]:
    return {name: path for name, path in modules().items() if not (name + ".").startswith("memex.store.")}


def test_no_code_outside_the_store_names_a_backend() -> None:
    naming = {name: backend_naming(path) for name, path in outside_the_store().items()}
    assert {name: found for name, found in naming.items() if found and name not in NAMES_A_BACKEND_IN_FLIGHT} == {}
    assert sorted(name for name in NAMES_A_BACKEND_IN_FLIGHT if not naming.get(name)) == []


@pytest.mark.parametrize("source, expected", [
    ("import apsw\n", ["apsw"]),
    ("def f():\n    import psycopg.sql\n", ["psycopg.sql"]),
    ("from memex.store.sqlite import as_store\n", ["memex.store.sqlite"]),
    ("from memex.store.sqlite import vecmatrix\n", ["memex.store.sqlite"]),
    ("from memex.store import sqlite\n", ["memex.store.sqlite"]),
    ("from memex.store import SqliteStore\n", ["SqliteStore"]),
    ("from memex.store.postgres.store import PgStore\n", ["PgStore", "memex.store.postgres.store"]),
    ("def f(s: 'SqliteStore') -> None: ...\n", ["SqliteStore"]),
    ("from memex.store import IndexStore, as_store\n# apsw, SqliteStore in prose\n", []),
])
def test_backend_naming_is_read_from_the_source(tmp_path: Path, source: str, expected: list[str]) -> None:
    fake = tmp_path / "probe.py"
    fake.write_text(source, encoding="utf-8")
    assert backend_naming(fake) == expected


# docs/design.md ("One seam"): outside memex/store/, the index is reached
# through the ``memex.store`` package's own names (its ``__init__``) and the
# backend and store objects, never through one of its modules: a module of
# the store is how one backend does it, and may move or split with it.
def store_module_imports(path: Path) -> list[str]:
    """Each import in ``path`` of a module inside ``memex.store`` (not the package itself)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found += [f"import {a.name}" for a in node.names if a.name.startswith("memex.store.")]
        elif isinstance(node, ast.ImportFrom) and not node.level:
            base = node.module or ""
            names = ", ".join(a.name for a in node.names)
            if base.startswith("memex.store."):
                found.append(f"from {base} import {names}")
            elif base == "memex.store":  # `from memex.store import schema` names a module too
                found += [f"from memex.store import {a.name}" for a in node.names if a.name not in store_exports()]
    return found


def store_exports() -> set[str]:
    """The names ``memex/store/__init__.py`` lists in ``__all__`` (read from the source)."""
    tree = ast.parse((PACKAGE / "store" / "__init__.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            return {str(ast.literal_eval(e)) for e in node.value.elts} if isinstance(node.value, ast.List) else set()
    return set()


def test_code_outside_the_store_imports_only_the_store_package() -> None:
    wrong = [
        f"{path.relative_to(PACKAGE.parent)}: {line} (use `from memex.store import ...`, or the backend's operations)"
        for path in outside_the_store().values() for line in store_module_imports(path)
    ]
    assert wrong == [], "\n".join(wrong)


@pytest.mark.parametrize("source, expected", [
    ("from memex.store import IndexStore, as_store\n", []),
    ("from memex.store.schema import write_txn\n", ["from memex.store.schema import write_txn"]),
    ("def f():\n    from memex.store import scrub\n", ["from memex.store import scrub"]),
    ("import memex.store.usage as usage\n", ["import memex.store.usage"]),
    ("from memex.store.sqlite.schema import damaged\n", ["from memex.store.sqlite.schema import damaged"]),
    ("from memex.store import sqlite\n", ["from memex.store import sqlite"]),
])
def test_store_module_imports_are_read_from_the_source(tmp_path: Path, source: str, expected: list[str]) -> None:
    fake = tmp_path / "probe.py"
    fake.write_text(source, encoding="utf-8")
    assert store_module_imports(fake) == expected


def test_the_store_package_exports_what_it_lists() -> None:
    """``memex.store`` loads its names on first use: each listed name resolves
    to the object of the module that defines it, and nothing is listed twice."""
    import importlib

    import memex.store as store

    assert store.__all__ == sorted(set(store.__all__), key=store.__all__.index)
    assert sorted(store.__all__) == sorted(store._WHERE)
    for name, module in store._WHERE.items():
        assert getattr(store, name) is getattr(importlib.import_module(f"memex.store.{module}"), name)
    with pytest.raises(AttributeError):
        store.no_such_name  # noqa: B018


# docs/design.md ("One seam"): the index's raw connection stays inside
# memex/store/. Outside it, code holds stores and the backend's operations;
# a ``.conn`` read there is SQLite's connection handed past the seam (what
# ``Vault.conn`` was), and a ``conn`` it defines hands one out.
def connection_uses(path: Path) -> list[str]:
    """Each read of an attribute ``conn`` in ``path``, and each ``conn`` it defines, with its line."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Attribute) and node.attr == "conn":
            found.append(f"{node.lineno}: {ast.unparse(node)}")
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == "conn":
            found.append(f"{node.lineno}: def conn")
    return found


def test_code_outside_the_store_holds_no_connection() -> None:
    wrong = [
        f"{path.relative_to(PACKAGE.parent)}:{use} (use the vault's stores or its backend's operations)"
        for path in outside_the_store().values() for use in connection_uses(path)
    ]
    assert wrong == [], "\n".join(wrong)


@pytest.mark.parametrize("source, expected", [
    ("rows = vault.conn.execute('SELECT 1')\n", ["1: vault.conn"]),
    ("class V:\n    @property\n    def conn(self): ...\n", ["3: def conn"]),
    ("def f(vault):\n    return vault.backend.conn\n", ["2: vault.backend.conn"]),
    ("store = vault.local_store  # not vault.conn\nconnected = vault.backend.connect()\n", []),
])
def test_connection_uses_are_read_from_the_source(tmp_path: Path, source: str, expected: list[str]) -> None:
    fake = tmp_path / "probe.py"
    fake.write_text(source, encoding="utf-8")
    assert connection_uses(fake) == expected


# The part of memex/store/ both backends share (every module directly in it
# but the ones that open, choose or tell apart a backend) loads no driver and
# no backend's package: what it needs of a connection is
# memex.store.protocol.SqlConnection, which either backend's answers.
CHOOSES_A_BACKEND = {"memex.store", "memex.store.backend", "memex.store.backends", "memex.store.failures"}


def test_the_shared_store_modules_load_no_backend() -> None:
    shared = {name: path for name, path in modules().items()
              if name.startswith("memex.store.") and name.count(".") == 2 and path.name != "__init__.py"
              and name not in CHOOSES_A_BACKEND}
    assert {"memex.store.density", "memex.store.facts", "memex.store.refvectors"} <= set(shared)
    naming = {name: backend_naming(path) for name, path in shared.items()}
    assert {name: found for name, found in naming.items() if found} == {}


# A test run on both backends (``both_backends``) that reads this clone's
# SQLite connection checks SQLite twice: it goes through the vault's stores
# and backend instead, unless it is a SQLite-only case that skips the other
# backend. Read from the source: a ``.conn`` on the backend or on a vault
# (a name holding "vault", or ``v``).
def sqlite_reads_on_both_backends(path: Path) -> list[str]:
    """In a test module run on both backends (or a test marked so), each function
    that reads a vault's connection and does not ``pytest.skip``."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    whole = any(isinstance(node, ast.Assign) and "both_backends" in ast.unparse(node.value)
                and any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in node.targets) for node in tree.body)
    found = []
    for fn in tree.body:
        if not isinstance(fn, ast.FunctionDef):
            continue
        if not (whole or any("both_backends" in ast.unparse(d) for d in fn.decorator_list)):
            continue
        skips = any(isinstance(n, ast.Call) and ast.unparse(n.func) == "pytest.skip" for n in ast.walk(fn))
        reads = [n for n in ast.walk(fn) if isinstance(n, ast.Attribute) and n.attr == "conn"
                 and (ast.unparse(n.value).endswith("backend") or "vault" in ast.unparse(n.value)
                      or ast.unparse(n.value) == "v")]
        if reads and not skips:
            found.append(f"{fn.name}: {ast.unparse(reads[0])}")
    return found


def test_tests_on_both_backends_read_through_the_stores() -> None:
    tests = PACKAGE.parent / "tests"
    wrong = [f"{path.name}: {use}" for path in sorted(tests.glob("test_*.py"))
             for use in sqlite_reads_on_both_backends(path)]
    assert wrong == [], "\n".join(wrong)


@pytest.mark.parametrize("source, expected", [
    ("import pytest\npytestmark = pytest.mark.both_backends\ndef test_a(vault):\n    vault.conn.execute('x')\n",
     ["test_a: vault.conn"]),
    ("import pytest\npytestmark = pytest.mark.both_backends\ndef count(v):\n    return v.backend.conn\n",
     ["count: v.backend.conn"]),
    ("import pytest\npytestmark = pytest.mark.both_backends\ndef test_a(vault, vault_backend):\n"
     "    if vault_backend != 'sqlite':\n        pytest.skip('SQLite only')\n    vault.backend.conn.execute('x')\n", []),
    ("import pytest\n@pytest.mark.both_backends\ndef test_a(vault):\n    vault.conn\ndef test_b(vault):\n"
     "    vault.conn\n", ["test_a: vault.conn"]),
    ("import pytest\ndef test_a(vault):\n    vault.backend.conn\n", []),
    ("import pytest\npytestmark = pytest.mark.both_backends\ndef test_a(store):\n    store.conn.execute('x')\n", []),
])
def test_sqlite_reads_on_both_backends_are_read_from_the_source(
    tmp_path: Path, source: str, expected: list[str]
) -> None:
    fake = tmp_path / "test_probe.py"
    fake.write_text(source, encoding="utf-8")
    assert sqlite_reads_on_both_backends(fake) == expected
