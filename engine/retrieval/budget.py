"""The token budget: a hard invariant, `context_tokens(rendered context) <= budget`.

`context_tokens` counts every rendered line (facts, day headers and events, sources) and the summary
with `Tokenizer.line_tokens`: the line's tokens in the request's tokenizer (`budget.tokenizer`,
`o200k_base` by default) plus one for the newline that joins it to the next. That is the context as
an LLM reads it, the lines joined by newlines (see `engine.retrieval.tokens`).

`fit` walks the items from most to least valuable (pinned must_include items first, then by final
rank) and keeps each one that fits whole in the budget; an event opening a new day also pays
for that day's header line. An item that does not fit is skipped, and later, smaller items may still
fit. Then, when at least `MIN_TRUNCATE_TOKENS` are left, the best skipped item is cut short to that
room (action `truncate`); every other skipped item is dropped (action `drop`). So whole lines come
before a cut one, the lowest-value items go first, and a pinned item is cut only when the pinned
items alone overflow. Nothing is held back for the summary: it gets what the lines leave (the next-best
memories, `engine.retrieval.summary`), and is left out below `SUMMARY_MIN_TOKENS`.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from engine.retrieval.render import RenderItem, day_header
from engine.retrieval.responses import BudgetAction
from engine.retrieval.tokens import ESTIMATE, LINE_OVERHEAD, Tokenizer

MIN_TRUNCATE_TOKENS = 24
SUMMARY_MIN_TOKENS = 16


class BudgetPlan(msgspec.Struct, kw_only=True):
    kept: list[RenderItem]
    actions: list[BudgetAction]
    budget: int
    planned: int  # tokens of every item (and day header) before trimming
    dropped: int  # tokens of the items (or parts) cut
    used: int  # tokens of the kept items and their day headers


def summary_allowance(budget: int, used: int) -> int:
    """The summary's room: what the lines left; 0 below `SUMMARY_MIN_TOKENS`."""
    room = budget - used
    return room if room >= SUMMARY_MIN_TOKENS else 0


def context_tokens(
    facts: Sequence[str],
    recent_events: Sequence[str],
    summary: str,
    sources: Sequence[str],
    tokenizer: Tokenizer = ESTIMATE,
) -> int:
    total = tokenizer.line_tokens(summary)
    for line in (*facts, *recent_events, *sources):
        total += tokenizer.line_tokens(line)
    return total


class _Fitter:
    """The running state of `fit`: what is kept, what it costs, which day headers are open."""

    def __init__(self, available: int, tok: Tokenizer) -> None:
        self.available = available
        self.tok = tok
        self.kept: list[RenderItem] = []
        self.actions: list[BudgetAction] = []
        self.opened: set[str] = set()
        self.used = self.dropped = 0

    def header_cost(self, item: RenderItem) -> int:
        if not item.group or item.group in self.opened:
            return 0
        return self.tok.line_tokens(day_header(item.group))

    def keep(self, item: RenderItem, cost: int) -> None:
        self.kept.append(item)
        self.used += cost
        if item.group:
            self.opened.add(item.group)

    def add(self, item: RenderItem, cost: int, head: int) -> bool:
        """Keep the item whole if it fits; False when it does not."""
        if self.used + head + cost > self.available:
            return False
        self.keep(item, head + cost)
        return True

    def cut_in(self, item: RenderItem, cost: int) -> bool:
        """Keep the item cut short to the room left (at least `MIN_TRUNCATE_TOKENS`); False if it cannot."""
        head = self.header_cost(item)
        room = self.available - self.used - head - LINE_OVERHEAD
        if room < MIN_TRUNCATE_TOKENS:
            return False
        short = self.tok.truncate(item.line, room)
        short_cost = self.tok.line_tokens(short)
        if not short or self.used + head + short_cost > self.available:
            return False
        self.keep(msgspec.structs.replace(item, line=short), head + short_cost)
        self.dropped += cost - short_cost
        self.actions.append(
            BudgetAction(
                action="truncate",
                memory_id=item.id,
                notes=f"cut from {cost} to {short_cost} tokens to fit the budget",
            )
        )
        return True

    def drop(self, item: RenderItem, cost: int) -> None:
        self.dropped += cost
        self.actions.append(
            BudgetAction(
                action="drop",
                memory_id=item.id,
                notes=f"{item.section} line of {cost} tokens does not fit ({self.available - self.used} left; "
                f"rank {item.rank}, score {item.score:.4f})",
            )
        )


def fit(items: Sequence[RenderItem], budget: int, tokenizer: Tokenizer = ESTIMATE) -> BudgetPlan:
    state = _Fitter(max(0, budget), tokenizer)
    planned = 0
    groups: set[str] = set()
    skipped: list[tuple[RenderItem, int]] = []
    for item in sorted(items, key=lambda it: (not it.pinned, it.rank)):
        cost = tokenizer.line_tokens(item.line)
        planned += cost
        if item.group and item.group not in groups:
            groups.add(item.group)
            planned += tokenizer.line_tokens(day_header(item.group))
        if state.add(item, cost, state.header_cost(item)):
            continue
        if not item.pinned:
            skipped.append((item, cost))
        elif not state.cut_in(item, cost):  # a pinned item is cut at once, before any unpinned one
            state.drop(item, cost)
    if skipped and state.cut_in(*skipped[0]):
        skipped = skipped[1:]
    for item, cost in skipped:
        state.drop(item, cost)
    return BudgetPlan(
        kept=state.kept,
        actions=state.actions,
        budget=budget,
        planned=planned,
        dropped=state.dropped,
        used=state.used,
    )
