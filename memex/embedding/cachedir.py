"""The user's cache folder for what memex derives from installed models.

Derived, never precious: the bundled model's assembled folder and its
optimized graph (memex/embedding/prebuilt.py), the multilingual model's
ONNX graph and tokenizer tables (memex/embedding/e5graph.py), and the
markers that remember a weights file was checked. Deleting it costs the
next process a rebuild, nothing else. ``MEMEX_CACHE_DIR`` moves it (tests
point it at a temporary folder); else ``$XDG_CACHE_HOME/memex`` or
``~/.cache/memex``.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path


def cache_root() -> Path:
    if os.environ.get("MEMEX_CACHE_DIR"):
        return Path(os.environ["MEMEX_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME")
    return (Path(base) if base else Path.home() / ".cache") / "memex"


def sweep_stale(parent: Path, prefix: str, stale_seconds: float) -> None:
    """Remove ``prefix*.tmp-*`` folders a killed process left behind (older
    than ``stale_seconds``: a younger one may be another process's build)."""
    now = time.time()
    for old in parent.glob(f"{prefix}*.tmp-*"):
        try:
            if now - old.stat().st_mtime > stale_seconds:
                shutil.rmtree(old, ignore_errors=True)
        except OSError:
            continue
