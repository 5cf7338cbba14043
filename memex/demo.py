"""``memex demo``: the main job on a throwaway vault, end to end."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

from memex.layout import VaultPaths
from memex.vault import Vault, init_vault

SAMPLES = [
    ("Use FTS5 contentless tables; the body is stored once in the memories table.", "project:demo", "decision"),
    ("The user prefers tabs over spaces and a line length of 100.", "user", "preference"),
    ("Never push directly to main; open a pull request first.", "project:demo", "constraint"),
    ("CI has 90 minutes and two cores, so the test suite must stay small.", "project:demo", "observation"),
    ("数据库使用 SQLite，开启 WAL 模式以便多个进程共享。", "project:demo", "decision"),
    ("用户喜欢简洁的回答，不要长篇大论。", "user", "preference"),
]
# The last one has nothing to do with the vault: search says so instead of
# returning its least bad guess (the relevance floor, docs/search.md).
QUERIES = ["which indentation does the user like", "how do changes get into main", "数据库 模式",
           "how long may the test suite run", "recipe for banana bread"]


def _edit_by_hand(vault: Vault, root: Path, path: Path, echo: Callable[[str], None]) -> None:
    """What a person does in an editor, and what reindex makes of it."""
    edited = path.read_text(encoding="utf-8").replace("tabs over spaces", "spaces over tabs")
    path.write_text(edited, encoding="utf-8")
    notes = VaultPaths(root).memories / "project" / "demo"
    (notes / "release.md").write_text("Releases are tagged from main every second Thursday.\n", encoding="utf-8")
    (notes / "broken.md").write_text("---\nid: [oops\n---\nA file with broken frontmatter.\n", encoding="utf-8")
    report = vault.reindex()
    echo(f"edit one file, write two by hand -> reindex: {report.updated} updated, {report.added} added")
    for err in report.errors:
        echo(f"  not indexed: {err['path']}: {err['reason']}")
    for query in ("which indentation does the user like", "when are releases tagged"):
        hit = vault.search(query, limit=1)[0]
        echo(f"search {query!r}\n  {hit.score:.3f}  {hit.body}  ({hit.path})")


def run_demo(keep: bool = False, echo: Callable[[str], None] = print) -> Path:
    folder = Path(tempfile.mkdtemp(prefix="memex-demo-"))
    root = init_vault(folder / "vault", git=False)
    echo(f"vault: {root}")
    with Vault(root) as vault:
        echo(f"model: {vault.embedder_status()}")
        paths = []
        for body, scope, category in SAMPLES:
            result = vault.add(body, scope=scope, category=category, source="demo")
            paths.append(root / result.path)
            echo(f"  add  {result.status:9} {result.id}  {body}")
        again = vault.add(SAMPLES[0][0], scope=SAMPLES[0][1], source="another-writer", session="s2")
        echo(f"  add  {again.status:9} (method {again.method}) the same decision from another writer")
        for query in QUERIES:
            hits = vault.search(query, limit=2)
            echo(f"search {query!r}")
            for hit in hits:
                echo(f"  {hit.score:.3f}  {hit.body}")
            if not hits:
                echo("  no matches")
        echo(f"file {paths[1].relative_to(root)}:")
        for line in paths[1].read_text(encoding="utf-8").splitlines():
            echo(f"  | {line}")
        _edit_by_hand(vault, root, paths[1], echo)
        report = vault.reindex(full=True)
        echo(f"reindex --full: every file re-read, {report.updated} changed, {report.embedded} embedded "
             f"(cache reused), {len(report.errors)} errors, {report.seconds:.2f}s")
    if keep:
        echo(f"kept: {root}")
    else:
        shutil.rmtree(folder)
    return root
