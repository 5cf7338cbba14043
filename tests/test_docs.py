"""The documentation matches the program: every command
and option of the click tree is documented, the README stays a short guide
with the two commands, its links resolve, and its memory-file example is
what `memex add` writes."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import click
import pytest
import yaml
from click.testing import CliRunner

from memex.files import memory_file
from memex.cli import app
from tests.hook_helpers import set_config

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"


def _pages() -> dict[str, str]:
    pages = {"README.md": README.read_text(encoding="utf-8")}
    for page in sorted(DOCS.glob("*.md")):
        pages[f"docs/{page.name}"] = page.read_text(encoding="utf-8")
    return pages


def _commands(group: click.Group, prefix: str = "memex") -> list[tuple[str, click.Command]]:
    found: list[tuple[str, click.Command]] = []
    for name, command in sorted(group.commands.items()):
        path = f"{prefix} {name}"
        found.append((path, command))
        if isinstance(command, click.Group):
            found.extend(_commands(command, path))
    return found


def _options(command: click.Command) -> list[str]:
    names = []
    for param in command.params:
        if isinstance(param, click.Option):
            longest = max(param.opts + param.secondary_opts, key=len)
            names.append(longest)
    return names


def test_every_command_and_option_is_documented() -> None:
    """As sqlite-utils does: walk the click tree; each command is named in the
    docs as `memex ...`, and each of its options appears on a page naming it."""
    pages = _pages()
    missing = []
    # Options of the root group (--vault) are accepted after a command name too;
    # they are documented once, as `memex --vault`.
    shared = set(_options(app()))
    for path, command in _commands(app()):
        naming = [text for text in pages.values() if path in text]
        if not naming:
            missing.append(path)
            continue
        for option in _options(command):
            if option == "--help" or option in shared:
                continue
            if not any(re.search(rf"(?<![\w-]){re.escape(option)}(?![\w-])", text) for text in naming):
                missing.append(f"{path} {option}")
    for option in _options(app()):
        if option != "--help" and not any(option in text for text in pages.values()):
            missing.append(f"memex {option}")
    assert missing == [], f"not in README.md or docs/*.md: {missing}"


def test_readme_is_a_short_guide_with_the_two_commands() -> None:
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 300
    assert "    bash scripts/demo.sh\n" in text and "    bash scripts/test.sh\n" in text
    for heading in ("## Two commands", "## Quick start", "## The vault", "## Core commands", "## Connect an agent"):
        assert heading in text
    assert (ROOT / "scripts" / "demo.sh").is_file() and (ROOT / "scripts" / "test.sh").is_file()


def test_links_between_pages_resolve() -> None:
    pages = _pages()
    index = pages["docs/index.md"]
    for name in [n for n in pages if n.startswith("docs/")]:
        if name != "docs/index.md":
            assert f"]({name.removeprefix('docs/')})" in index, f"docs/index.md does not link {name}"
    for where, text in pages.items():
        base = ROOT if where == "README.md" else DOCS
        for target in re.findall(r"\]\(([^)#\s]+\.md)(?:#[^)]*)?\)", text):
            assert (base / target).is_file(), f"{where} links {target}, which does not exist"
        for anchor in re.findall(r"\]\(#([^)]+)\)", text):
            headings = {_slug(h) for h in re.findall(r"^#+ (.+)$", text, re.M)}
            assert anchor in headings, f"{where} links #{anchor}, no such heading"


def _slug(heading: str) -> str:
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_the_readme_memory_file_is_what_memex_add_writes(vault_root: Path) -> None:
    text = README.read_text(encoding="utf-8")
    command = re.search(r"^\s+\$ (memex add .+)$", text, re.M)
    example = re.search(r"```yaml\n(---\n.*?\n---\n.*?)\n```", text, re.S)
    assert command and example, "the README shows a `$ memex add ...` line and the file it writes"
    set_config(vault_root, "embedding", 'model = "none"')
    args = shlex.split(command.group(1))[1:]
    result = CliRunner().invoke(app(), ["--vault", str(vault_root), *args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    written = next((vault_root / "memories").rglob("*.md"))
    shown = memory_file.parse(example.group(1), Path("README.md"))
    actual = memory_file.parse(written.read_text(encoding="utf-8"), written)
    assert list(shown.meta) == list(actual.meta), "the keys, in the order memex writes them"
    for key in set(actual.meta) - {"id", "created"}:
        assert shown.meta[key] == actual.meta[key], key
    assert shown.body.strip() == actual.body.strip()
    assert yaml.safe_load(example.group(1).split("---")[1])["scope"] == actual.meta["scope"]


@pytest.mark.parametrize("page", sorted(p.name for p in DOCS.glob("*.md")))
def test_each_page_has_a_title(page: str) -> None:
    first = (DOCS / page).read_text(encoding="utf-8").splitlines()[0]
    assert first.startswith("# ")


def _quick_start() -> list[list[str]]:
    """The `memex add` and `memex search` lines of the README's quick start, as argv."""
    text = README.read_text(encoding="utf-8")
    section = text.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    lines = []
    for line in section.splitlines():
        command = line.strip().split("  #", 1)[0].strip()
        if command.startswith(("memex add ", "memex search ")):
            lines.append(shlex.split(command)[1:])
    return lines


@pytest.mark.model
def test_every_quick_start_search_finds_what_the_quick_start_added(vault_root: Path) -> None:
    # The quick start once searched "indentation" for "The user prefers tabs
    # over spaces": after search gained its relevance floor that printed
    # "no matches", so a reader's first search looked broken.
    steps = _quick_start()
    searches = [s for s in steps if s[0] == "search"]
    assert [s for s in steps if s[0] == "add"] and searches, "the quick start adds and searches"
    runner = CliRunner()
    for args in steps:
        argv = ["--vault", str(vault_root), *args]
        if args[0] == "search" and "--json" not in args:
            argv.append("--json")
        result = runner.invoke(app(), argv, catch_exceptions=False)
        assert result.exit_code == 0, (args, result.output)
        if args[0] == "search":
            hits = json.loads(result.output)
            assert hits, f"the README's `memex {shlex.join(args)}` finds nothing"
