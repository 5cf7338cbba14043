"""The name memex is installed under, and how to install it with an extra.

The command and the Python package are ``memex``; the distribution on the
package registry is :data:`DISTRIBUTION`, because ``memex`` there is another
project (installing the name ``memex`` would bring the wrong software). Every
install hint memex prints is built here, so no message names the wrong one.

This module imports nothing of memex, so any module may import it.
"""

from __future__ import annotations

from pathlib import Path

DISTRIBUTION = "memex-vault"


def checkout_root() -> Path | None:
    """The source checkout this copy of memex runs from (an editable
    install: ``pip install -e .``), or None for an installed wheel."""
    root = Path(__file__).resolve().parent.parent
    try:
        project = (root / "pyproject.toml").read_text(encoding="utf-8")
    except OSError:
        return None
    return root if f'name = "{DISTRIBUTION}"' in project else None


def docs_dir() -> Path | None:
    """The user documentation this copy of memex carries: ``memex/docs`` in
    an installed wheel, ``docs/`` of the checkout it runs from; None if neither."""
    shipped = Path(__file__).resolve().parent / "docs"
    if shipped.is_dir():
        return shipped
    root = checkout_root()
    return root / "docs" if root is not None and (root / "docs").is_dir() else None


def install_hint(extra: str) -> str:
    """The command that adds ``extra`` (``multilingual``, ``postgres``) to
    this installation: from the checkout memex runs from, else from the registry."""
    root = checkout_root()
    if root is not None:
        return f"pip install -e '{root}[{extra}]' (from this checkout; from the package registry: pip install '{DISTRIBUTION}[{extra}]')"
    return f"pip install '{DISTRIBUTION}[{extra}]'"
