from datetime import timedelta

from engine.retrieval import tokens
from engine.retrieval.budget import MIN_TRUNCATE_TOKENS, context_tokens, fit, summary_reserve
from engine.retrieval.redaction_hook import NoRedaction
from engine.retrieval.render import MAX_LINE_TOKENS, RenderItem, build_items, format_line, sections
from engine.retrieval.summary import extractive, first_sentence

from .helpers import NOW, mem


def item(i: str, n_chars: int, rank: int, *, pinned: bool = False, section: str = "sources") -> RenderItem:
    text = "x" * n_chars
    return RenderItem(id=i, section=section, plain=text, line=text, rank=rank, score=1.0 / (rank + 1),
                      pinned=pinned)


def test_format_lines() -> None:
    f = mem("f", "Alice lives in Paris", type="fact", valid_from=NOW - timedelta(days=1),
            valid_to=NOW)
    assert format_line("facts", "f", f.text, f) == "Alice lives in Paris (valid 2025-12-31 to 2026-01-01)"
    e = mem("e", "flew  to\nBerlin", type="event", days_ago=2)
    assert format_line("recent_events", "e", e.text, e) == "2025-12-30: flew to Berlin"
    assert format_line("sources", "n", "a note", mem("n")) == "[n] a note"
    assert format_line("sources", "snippet:1", "given", None) == "[snippet:1] given"


def test_fit_drops_lowest_value_first() -> None:
    # each line: 30 chars -> 10 tokens + 1 overhead = 11
    items = [item(f"m{r}", 30, r) for r in range(5)]
    plan = fit(items, budget=33, reserve=0)
    assert [it.id for it in plan.kept] == ["m0", "m1", "m2"]
    assert [a.memory_id for a in plan.actions] == ["m3", "m4"]
    assert all(a.action == "drop" for a in plan.actions)
    assert (plan.used, plan.dropped, plan.planned) == (33, 22, 55)


def test_fit_keeps_pinned_first_and_truncates_when_room() -> None:
    # 120 chars -> 40 tokens + 1 = 41 per line
    items = [item("best", 120, 0), item("pin", 120, 9, pinned=True)]
    plan = fit(items, budget=41 + MIN_TRUNCATE_TOKENS + 1, reserve=0)
    assert plan.kept[0].id == "pin"
    assert plan.kept[1].id == "best" and plan.actions[0].action == "truncate"
    assert tokens.line_tokens(plan.kept[1].line) == MIN_TRUNCATE_TOKENS + 1
    assert plan.used == plan.budget


def test_pinned_alone_overflowing_is_cut() -> None:
    plan = fit([item("pin", 3000, 0, pinned=True)], budget=300, reserve=0)
    assert plan.used <= 300 and plan.actions[0].action == "truncate"


def test_summary_reserve_and_context_tokens() -> None:
    assert summary_reserve(1200, True) == 120 and summary_reserve(256, True) == 38
    assert summary_reserve(1200, False) == 0
    assert context_tokens(["abc"], ["abcdef"], "", ["a"]) == (1 + 1) + (2 + 1) + (1 + 1)


def test_build_items_limits_and_caps() -> None:
    memories = {f"f{i}": mem(f"f{i}", f"fact {i}", type="fact") for i in range(3)}
    memories["e"] = mem("e", "y " * 2000, type="event")
    ranked = ["f0", "f1", "f2", "e"]
    scores = dict.fromkeys(ranked, 0.5)
    items, actions = build_items(ranked, scores, memories, {}, include=["facts", "recent_events"],
                                 max_facts=2, max_events=6, pinned=frozenset({"f2"}), redactor=NoRedaction())
    assert [it.id for it in items] == ["f0", "f1", "f2", "e"]  # f2 pinned: not limited
    items, actions = build_items(ranked, scores, memories, {}, include=["facts", "recent_events"],
                                 max_facts=1, max_events=6, pinned=frozenset(), redactor=NoRedaction())
    assert [it.id for it in items] == ["f0", "e"]
    assert [a.action for a in actions] == ["limit", "limit", "truncate"]
    assert tokens.estimate(items[1].line) <= MAX_LINE_TOKENS
    items, _ = build_items(ranked, scores, memories, {}, include=["sources"], max_facts=5, max_events=5,
                           pinned=frozenset(), redactor=NoRedaction())
    assert items == []


def test_sections_order_events_newest_first() -> None:
    a = RenderItem(id="a", section="recent_events", plain="", line="old", rank=0, score=1, when=1)
    b = RenderItem(id="b", section="recent_events", plain="", line="new", rank=1, score=0.5, when=2)
    c = RenderItem(id="c", section="facts", plain="", line="f", rank=2, score=0.1)
    assert sections([a, b, c]) == (["f"], ["new", "old"], [])


def test_extractive_summary() -> None:
    assert first_sentence("Alice moved. Then more.") == "Alice moved."
    assert first_sentence("no period here") == "no period here."
    kept = [RenderItem(id="a", section="facts", plain="Alice moved to Paris. Long.", line="", rank=1,
                       score=1),
            RenderItem(id="b", section="facts", plain="Bob likes tea", line="", rank=0, score=1)]
    assert extractive(kept, 100) == "Bob likes tea. Alice moved to Paris."
    short = extractive(kept, 6)
    assert tokens.line_tokens(short) <= 6
    assert extractive([], 100) == ""
