"""The token budget: a hard invariant, `context_tokens(rendered context) <= budget`.

`context_tokens` counts every rendered line (facts, recent events, sources) and the summary with
`tokens.line_tokens` (the estimate plus one separator token per line).

`fit` walks the items from most to least valuable (pinned must_include items first, then by final
rank) and keeps each one that fits in `budget - summary_reserve`. An item that does not fit is cut
short to the room left when at least `MIN_TRUNCATE_TOKENS` remain (action `truncate`), otherwise
dropped (action `drop`); later, smaller items may still fit. So the lowest-value items go first, and a
pinned item is cut only when the pinned items alone overflow. The summary then gets at most
min(`SUMMARY_MAX_TOKENS`, budget - used) tokens; `summary_reserve` guarantees it some room.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from engine.retrieval import tokens
from engine.retrieval.render import RenderItem
from engine.retrieval.responses import BudgetAction

MIN_TRUNCATE_TOKENS = 24
SUMMARY_MAX_TOKENS = 120
SUMMARY_SHARE = 0.15


class BudgetPlan(msgspec.Struct, kw_only=True):
    kept: list[RenderItem]
    actions: list[BudgetAction]
    budget: int
    planned: int  # tokens of every item before trimming + the summary reserve
    dropped: int  # tokens of the items (or parts) cut
    used: int  # tokens of the kept items


def summary_reserve(budget: int, with_summary: bool) -> int:
    if not with_summary:
        return 0
    return min(SUMMARY_MAX_TOKENS, int(budget * SUMMARY_SHARE))


def context_tokens(facts: Sequence[str], recent_events: Sequence[str], summary: str,
                   sources: Sequence[str]) -> int:
    total = tokens.line_tokens(summary)
    for line in (*facts, *recent_events, *sources):
        total += tokens.line_tokens(line)
    return total


def fit(items: Sequence[RenderItem], budget: int, reserve: int) -> BudgetPlan:
    available = max(0, budget - reserve)
    order = sorted(items, key=lambda it: (not it.pinned, it.rank))
    kept: list[RenderItem] = []
    actions: list[BudgetAction] = []
    planned = reserve
    used = dropped = 0
    for item in order:
        cost = tokens.line_tokens(item.line)
        planned += cost
        if used + cost <= available:
            kept.append(item)
            used += cost
            continue
        room = available - used - tokens.LINE_OVERHEAD
        if room >= MIN_TRUNCATE_TOKENS:
            short = tokens.truncate(item.line, room)
            short_cost = tokens.line_tokens(short)
            if short and used + short_cost <= available:
                kept.append(msgspec.structs.replace(item, line=short))
                used += short_cost
                dropped += cost - short_cost
                actions.append(BudgetAction(action="truncate", memory_id=item.id,
                                            notes=f"cut from {cost} to {short_cost} tokens to fit the budget"))
                continue
        dropped += cost
        actions.append(BudgetAction(
            action="drop", memory_id=item.id,
            notes=f"{item.section} line of {cost} tokens does not fit ({available - used} left; "
                  f"rank {item.rank}, score {item.score:.4f})"))
    return BudgetPlan(kept=kept, actions=actions, budget=budget, planned=planned, dropped=dropped,
                      used=used)
