"""The budget arithmetic of the full-context path (docs/context-engine.md).

Of a ``token_budget``:

- the model's output gets ``max(15%, 20,000)`` tokens, held back first;
- the archived-session summary gets at most ``min(15%, 8,000)`` tokens;
- the active messages get what is left, the newest first.

Percentages round down for the archive share and up for the reserve, so
the parts never add up to more than the budget by rounding.
"""

from __future__ import annotations

OUTPUT_SHARE = 0.15
OUTPUT_MIN = 20_000
ARCHIVE_SHARE = 0.15
ARCHIVE_MAX = 8_000


def budget_plan(token_budget: int) -> dict[str, int]:
    """Token shares for ``token_budget``: reserve, archive cap, room for messages.

    ``messages`` assumes the archive uses its whole share; it can be
    negative for budgets under about 23,500 tokens, in which case only the
    latest exchange is kept.
    """
    reserve = max(-(-token_budget * 15 // 100), OUTPUT_MIN)
    archive = min(token_budget * 15 // 100, ARCHIVE_MAX)
    return {
        "budget": token_budget,
        "reserve": reserve,
        "archive": archive,
        "available": token_budget - reserve,
        "messages": token_budget - reserve - archive,
    }
