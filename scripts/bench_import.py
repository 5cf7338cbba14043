#!/usr/bin/env python3
"""Benchmark ``memex import``: memories per second through the one add path.

    .venv/bin/python scripts/bench_import.py                  # 500 notes, 100 conversations
    .venv/bin/python scripts/bench_import.py --notes 2000 --conversations 400

Writes, in a temp folder, an Obsidian-style folder of ``--notes`` notes
(scripts/bench.py's synthetic memories, one per note) and a ChatGPT
``conversations.json`` of ``--conversations`` conversations (four user
messages each: two stated rules, a question, a "remember that ..."; four
assistant answers), then imports each into a fresh vault with the real
model, as ``memex import`` does (``memex.importers.import_path``). Reports
for each: items found, created, seconds, items per second (wall and CPU),
and the parse time alone (``--dry-run``). A second import of the same
folder measures the all-duplicates path. For the notes, the imported
memory files are then copied into another fresh vault and reindexed
(``reindex_same_files``): an import embeds, deduplicates and indexes the
same files a reindex indexes, so ``import_cpu_over_reindex_cpu`` says what
the add path costs beyond indexing (docs/import.md, "Speed"). ``--folder``
imports a folder of your own instead of the generated notes. Prints JSON.

    .venv/bin/python scripts/bench_import.py --notes 400 --conversations 40
    .venv/bin/python scripts/bench_import.py --folder ~/notes --conversations 40
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench  # noqa: E402

from memex.importers import import_path  # noqa: E402
from memex.vault import Vault, init_vault  # noqa: E402


def notes(folder: Path, count: int, rng: random.Random) -> None:
    (folder / ".obsidian").mkdir(parents=True)
    for n in range(count):
        (folder / f"note-{n:05d}.md").write_text(bench.memory_text(rng, n) + "\n", encoding="utf-8")


def conversations(path: Path, count: int, rng: random.Random) -> None:
    tools, projects = ["ruff", "pytest", "mypy", "uv", "docker"], ["atlas", "ember", "harbor", "orbit"]
    data = []
    for c in range(count):
        said = [
            f"I prefer {rng.choice(tools)} over {rng.choice(tools)} for {rng.choice(projects)} (case {c}).",
            f"We decided to deploy {rng.choice(projects)} only on weekdays, rule {c}.",
            f"Why does the {rng.choice(projects)} build fail on step {c}?",
            f"Remember that the {rng.choice(projects)} staging host is staging-{c}.example.com.",
        ]
        mapping: dict[str, Any] = {"root": {"id": "root", "message": None, "parent": None, "children": []}}
        parent = "root"
        for i, text in enumerate(said):
            for role, node, body in (("user", f"u{i}", text), ("assistant", f"a{i}", "Noted; here is how.")):
                mapping[node] = {"id": node, "parent": parent, "children": [], "message": {
                    "id": node, "author": {"role": role}, "create_time": 1700000000 + i,
                    "content": {"content_type": "text", "parts": [body]}}}
                mapping[parent]["children"].append(node)
                parent = node
        data.append({"title": f"chat {c}", "conversation_id": f"c{c}", "mapping": mapping, "current_node": parent})
    path.write_text(json.dumps(data), encoding="utf-8")


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def timed_import(root: Path, source: Path, dry_run: bool = False) -> dict[str, Any]:
    with Vault(root) as vault:
        vault.embedder  # the model loads once per process, not per import: not timed
        wall, cpu = time.perf_counter(), _cpu()
        report = import_path(vault, source, dry_run=dry_run)
        wall, cpu = time.perf_counter() - wall, _cpu() - cpu
    return {
        "format": report.format, "found": report.found, "created": report.created,
        "duplicate": report.duplicate, "seconds": round(wall, 2), "cpu_seconds": round(cpu, 2),
        "items_per_s": round(report.found / wall, 1), "items_per_cpu_s": round(report.found / cpu, 1),
    }


def timed_reindex(imported: Path, root: Path) -> dict[str, Any]:
    """Reindex, in a fresh vault ``root`` (empty embedding cache), the
    memory files an import wrote into the vault ``imported``."""
    shutil.copytree(imported / "memories", root / "memories", dirs_exist_ok=True)
    with Vault(root) as vault:
        vault.embedder  # loaded once per process, as for the import
        wall, cpu = time.perf_counter(), _cpu()
        report = vault.reindex()
        wall, cpu = time.perf_counter() - wall, _cpu() - cpu
    return {"added": report.added, "embedded": report.embedded, "seconds": round(wall, 2), "cpu_seconds": round(cpu, 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--notes", type=int, default=500)
    parser.add_argument("--conversations", type=int, default=100)
    parser.add_argument("--folder", type=Path, help="import this folder of notes instead of generated ones")
    args = parser.parse_args()
    if args.notes < 1 or args.conversations < 1:
        parser.error("--notes and --conversations must be positive")
    if args.folder is not None and not args.folder.is_dir():
        parser.error(f"--folder {args.folder}: not a folder")
    os.environ.pop("MEMEX_VAULT", None)
    rng = random.Random(10)
    with tempfile.TemporaryDirectory(prefix="memex-bench-import-") as tmp:
        base = Path(tmp)
        folder = args.folder.expanduser().resolve() if args.folder is not None else base / "notes"
        if args.folder is None:
            notes(folder, args.notes, rng)
        conversations(base / "conversations.json", args.conversations, rng)
        figures: dict[str, Any] = {"load_average_1m_before": round(os.getloadavg()[0], 2)}
        for name, source in (("notes", folder), ("chatgpt", base / "conversations.json")):
            root = init_vault(base / f"vault-{name}", git=False)
            figures[name] = {
                "parse_only": timed_import(root, source, dry_run=True),
                "import": timed_import(root, source),
            }
            if name == "notes":
                again = timed_reindex(root, init_vault(base / "vault-reindex", git=False))
                figures[name]["reindex_same_files"] = again
                figures[name]["import_cpu_over_reindex_cpu"] = round(
                    figures[name]["import"]["cpu_seconds"] / max(again["cpu_seconds"], 1e-9), 2
                )
            figures[name]["again_all_duplicates"] = timed_import(root, source)
        figures["load_average_1m_after"] = round(os.getloadavg()[0], 2)
        print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
