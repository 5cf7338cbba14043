"""Run the fault suite and print its counts (docs/reliability.md quotes them).

    .venv/bin/python scripts/fault_report.py
    MEMEX_FAULT_EXAMPLES=200 MEMEX_FAULT_STEPS=50 .venv/bin/python scripts/fault_report.py
    MEMEX_FAULT_TEAM_EXAMPLES=20 MEMEX_FAULT_TEAM_STEPS=40 .venv/bin/python scripts/fault_report.py --team

Runs tests/test_fault_stateful.py and tests/test_fault_kill.py (``--team``:
tests/test_fault_team.py, the team vault and shared index suite) with
``MEMEX_FAULT_REPORT`` set, then prints one JSON object per suite and the
totals: cases run, faults injected (kill -9s that landed; for the state
machine, actions memex does not make: hand edits, copies, renames, deletions,
git checkouts), erasures, steps, bytes of erased text found (must be 0), the
pytest exit code and the wall time.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TESTS = ["tests/test_fault_stateful.py", "tests/test_fault_kill.py"]
TEAM_TESTS = ["tests/test_fault_team.py"]


def main() -> int:
    tests = TEAM_TESTS if "--team" in sys.argv[1:] else TESTS
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "faults.jsonl"
        started = time.perf_counter()
        code = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *tests],
            cwd=REPO, env={**os.environ, "MEMEX_FAULT_REPORT": str(out)}, check=False,
        ).returncode
        seconds = time.perf_counter() - started
        lines = [json.loads(x) for x in out.read_text().splitlines()] if out.exists() else []
    suites: dict[str, dict[str, int]] = {}
    for line in lines:
        into = suites.setdefault(line.pop("suite"), {})
        for key, value in line.items():
            into[key] = into.get(key, 0) + value
    totals: dict[str, int] = {}
    for counts in suites.values():
        for key, value in counts.items():
            totals[key] = totals.get(key, 0) + value
    print(json.dumps({"suites": suites, "totals": totals, "pytest_exit": code, "seconds": round(seconds, 1)},
                     indent=1, sort_keys=True))
    return code


if __name__ == "__main__":
    raise SystemExit(main())
