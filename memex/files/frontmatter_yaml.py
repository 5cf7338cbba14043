"""The YAML of a memory file's frontmatter: PyYAML, set up as memex reads and writes it.

A loader that keeps timestamps as the strings the user wrote, a dumper that
keeps key order (python-frontmatter's YAML handler in front of both), the
token scan that refuses anchors, aliases and deep nesting, and PyYAML's
complaints as one line. Kept out of :mod:`memex.files.memory_file`'s own
imports: PyYAML and python-frontmatter cost about 23 ms of CPU to import,
and a one-shot ``memex search`` reads no file (start-up: docs/benchmarks.md).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from frontmatter.default_handlers import YAMLHandler

from memex.errors import MemoryFileError


class _Loader(yaml.SafeLoader):
    """SafeLoader that leaves timestamps as strings (round-trip exact)."""


class _Dumper(yaml.SafeDumper):
    """SafeDumper that does not quote timestamp-looking strings."""


def _strip_timestamp_resolver(cls: type[Any]) -> None:
    cls.yaml_implicit_resolvers = {
        first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:timestamp"]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }


_strip_timestamp_resolver(_Loader)
_strip_timestamp_resolver(_Dumper)

# libyaml (shipped in PyYAML's wheels) scans and parses frontmatter about 8x
# faster than the pure-Python loader, which dominated reindex time after the
# model (scripts/bench.py). Same resolvers, same constructor; the Python
# loader is the fallback where PyYAML was built without libyaml.
_FastLoader: type[Any] = _Loader
if getattr(yaml, "__with_libyaml__", False):

    class _CLoader(yaml.CSafeLoader):
        """libyaml loader that leaves timestamps as strings, like _Loader."""

    _strip_timestamp_resolver(_CLoader)
    _FastLoader = _CLoader
_HANDLER = YAMLHandler()

_OPEN = (yaml.FlowSequenceStartToken, yaml.FlowMappingStartToken, yaml.BlockSequenceStartToken,
         yaml.BlockMappingStartToken)
_CLOSE = (yaml.FlowSequenceEndToken, yaml.FlowMappingEndToken, yaml.BlockEndToken)


def scan(fm: str, path: Path, max_depth: int) -> None:
    """Refuse anchors/aliases (bombs) and nesting deeper than ``max_depth``
    from the tokens, before YAML builds anything."""
    depth = 0
    try:
        for token in yaml.scan(fm, Loader=_FastLoader):
            if isinstance(token, (yaml.AnchorToken, yaml.AliasToken)):
                raise MemoryFileError(path, "YAML anchors and aliases are not allowed in frontmatter")
            if isinstance(token, _OPEN):
                depth += 1
                if depth > max_depth:
                    raise MemoryFileError(path, f"frontmatter nested deeper than {max_depth} levels")
            elif isinstance(token, _CLOSE):
                depth -= 1
    except yaml.YAMLError as exc:
        raise MemoryFileError(path, f"broken YAML frontmatter: {_one_line(exc)}") from exc


def load(fm: str, path: Path) -> Any:
    """The frontmatter's value (checked by :func:`scan` or known too small to need it)."""
    try:
        return _HANDLER.load(fm, Loader=_FastLoader)
    except yaml.YAMLError as exc:
        raise MemoryFileError(path, f"broken YAML frontmatter: {_one_line(exc)}") from exc
    except RecursionError as exc:  # the depth check before should make this unreachable
        raise MemoryFileError(path, "frontmatter nested too deeply") from exc


def dump(ordered: dict[str, Any]) -> str:
    """YAML text of ``ordered``, keys in their order, that reads back equal."""
    fm: str = _HANDLER.export(ordered, Dumper=_Dumper, sort_keys=False, width=100000)
    if _reload(fm) != ordered:
        # PyYAML writes a few characters (NEL, odd line breaks) in plain style
        # that it then reads back differently; double quotes escape them all.
        fm = _HANDLER.export(ordered, Dumper=_Dumper, sort_keys=False, width=100000, default_style='"')
    return fm


def _reload(fm: str) -> Any:
    try:
        return yaml.load(fm, Loader=_Loader)
    except yaml.YAMLError:
        return None


def _one_line(exc: Exception) -> str:
    """PyYAML's complaint, short, with the line number in the file."""
    if isinstance(exc, yaml.MarkedYAMLError) and exc.problem:
        mark = exc.problem_mark
        # +2: marks count from 0 inside the frontmatter, which starts after "---".
        where = f" (line {mark.line + 2}, column {mark.column + 1})" if mark is not None else ""
        return " ".join(f"{exc.problem}{where}".split())
    return " ".join(str(exc).split())
