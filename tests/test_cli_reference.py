"""docs/cli.md is the command reference, checked against the click tree: each
command has its own section, under a task, naming each of its options;
user pages speak of the product only; messages name pages the installed
package can show (`memex help TOPIC`)."""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from memex.cli import app
from memex.cli.help import topics

ROOT = Path(__file__).resolve().parent.parent
CLI_MD = ROOT / "docs" / "cli.md"

# Pages for people using memex: they say what it does and how, not which
# issue asked for it, which test proves it or who wrote it. (design.md,
# store.md and benchmarks.md are for people working on memex.)
USER_PAGES = ["README.md"] + [f"docs/{name}.md" for name in (
    "cli", "index", "vault", "import", "agents", "openclaw", "context-engine", "watching", "forgetting",
    "team", "postgres", "plugins",
)]
NOT_PRODUCT = re.compile(
    r"\b[Ii]ssues? \d+|found from outside|\bengineers?\b|tests/test_\w+\.py|other branches", re.I)


def _leaves(group: click.Group, prefix: str = "memex") -> list[tuple[str, click.Command]]:
    out: list[tuple[str, click.Command]] = []
    for name, command in sorted(group.commands.items()):
        path = f"{prefix} {name}"
        if isinstance(command, click.Group):
            out += _leaves(command, path)
        else:
            out.append((path, command))
    return out


def _sections(text: str) -> dict[str, tuple[str, str]]:
    """Each ``### `memex ...` `` heading's section text, keyed by the heading,
    with the ``## `` task it sits under."""
    found: dict[str, tuple[str, str]] = {}
    task = ""
    heading = None
    body: list[str] = []
    for line in text.splitlines() + ["## end"]:
        if line.startswith(("## ", "### ")):
            if heading is not None:
                found[heading] = (task, "\n".join(body))
            heading, body = None, []
            if line.startswith("## "):
                task = line[3:].strip()
            else:
                heading = line[4:].strip()
        elif heading is not None:
            body.append(line)
    return found


def _section_of(path: str, sections: dict[str, tuple[str, str]]) -> tuple[str, str, str] | None:
    for heading, (task, body) in sections.items():
        if re.search(rf"`{re.escape(path)}[`\s]", heading):
            return heading, task, body
    # `memex context X` is documented as a list item of `memex context ...`.
    parent = path.rsplit(" ", 1)[0]
    for heading, (task, body) in sections.items():
        if f"`{parent} ...`" in heading and f"`{path}" in body:
            item = next(line for line in body.split("\n- ") if f"`{path}" in line)
            return heading, task, item
    return None


def test_every_command_has_a_section_naming_each_option() -> None:
    text = CLI_MD.read_text(encoding="utf-8")
    sections = _sections(text)
    missing = []
    for path, command in _leaves(app()):
        found = _section_of(path, sections)
        if found is None:
            missing.append(path)
            continue
        heading, task, body = found
        assert task and task != "Every command", f"{path} is not under a task"
        for param in command.params:
            if not isinstance(param, click.Option) or param.name in ("vault_path", "as_json"):
                continue  # --vault and --json: documented once, under "Every command"
            names = [n for n in param.opts + param.secondary_opts if n.startswith("--")]
            if not any(re.search(rf"(?<![\w-]){re.escape(n)}(?![\w-])", body + heading) for n in names):
                missing.append(f"{path} {names[0]}")
    assert missing == [], f"not in docs/cli.md's section of the command: {missing}"
    every = text.split("\n## Every command\n", 1)[1].split("\n## ", 1)[0]
    assert "**`--json`**" in every and "`--vault PATH`" in every


def test_the_check_fails_on_an_undocumented_option() -> None:
    """The walk above would catch a new option: a section without it is missing."""
    sections = _sections("## Find memories\n### `memex list`\nMemories, newest first; `--limit N`.\n")
    found = _section_of("memex list", sections)
    assert found is not None and "--all" not in found[2] and "--limit" in found[2]
    assert _section_of("memex stats", sections) is None


def test_user_pages_speak_of_the_product() -> None:
    said = {page: NOT_PRODUCT.findall((ROOT / page).read_text(encoding="utf-8")) for page in USER_PAGES}
    assert {page: hits for page, hits in said.items() if hits} == {}


def _message_strings() -> list[tuple[str, str]]:
    """String constants in memex/ that are not docstrings or comments: what it prints or writes."""
    out = []
    for path in sorted((ROOT / "memex").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docstrings = {
            id(node.body[0].value) for node in ast.walk(tree)
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            and node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)
        }
        out += [(f"{path.relative_to(ROOT)}:{node.lineno}", node.value) for node in ast.walk(tree)
                if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings]
    return out


def test_messages_name_pages_the_installed_package_can_show() -> None:
    known = set(topics())
    template = "\n".join(p.read_text(encoding="utf-8") for p in (ROOT / "vault-template").rglob("*") if p.is_file())
    texts = _message_strings() + [("vault-template", template)]
    assert [(where, t) for where, t in texts if re.search(r"docs/[\w-]+\.md", t)] == []
    named = {m for _, t in texts for m in re.findall(r"memex help ([a-z][\w-]*)", t)}
    assert named and named <= known, named - known


def test_memex_help_shows_the_pages(tmp_path: Path) -> None:
    runner = CliRunner()
    listed = runner.invoke(app(), ["help"])
    assert listed.exit_code == 0 and "cli" in listed.output and "team" in listed.output
    page = runner.invoke(app(), ["help", "team"])
    assert page.exit_code == 0 and page.output.startswith("# ")
    assert "(memex help cli)" in runner.invoke(app(), ["help", "vault"]).output  # links become topics
    typo = runner.invoke(app(), ["help", "tema"])
    assert typo.exit_code == 2 and "did you mean 'team'" in typo.output


def test_the_wheel_carries_the_pages() -> None:
    build = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["hatch"]["build"]
    assert build["targets"]["wheel"]["force-include"]["docs"] == "memex/docs"


@pytest.mark.parametrize("page", ["docs/index.md"])
def test_the_index_lists_the_pages_by_who_reads_them(page: str) -> None:
    text = (ROOT / page).read_text(encoding="utf-8")
    assert "memex help" in text
