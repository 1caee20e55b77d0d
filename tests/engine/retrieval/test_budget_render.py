from datetime import timedelta

import msgspec
import pytest

from engine.retrieval import tokens
from engine.retrieval.budget import MIN_TRUNCATE_TOKENS, context_tokens, fit, summary_allowance
from engine.retrieval.redaction_hook import NoRedaction
from engine.retrieval.render import (
    MAX_LINE_TOKENS,
    RenderItem,
    build_items,
    day_header,
    format_line,
    sections,
    snippet,
)
from engine.retrieval.summary import (
    ENTRY_CACHE_MAX_CHARS,
    MAX_ENTRY_TOKENS,
    beyond,
    extractive,
    first_sentence,
)
from engine.retrieval.tokens import ELLIPSIS, ESTIMATE, get_tokenizer

from .helpers import NOW, mem


def item(i: str, n_chars: int, rank: int, *, pinned: bool = False, section: str = "sources") -> RenderItem:
    text = "x" * n_chars
    return RenderItem(
        id=i, section=section, plain=text, line=text, rank=rank, score=1.0 / (rank + 1), pinned=pinned
    )


def test_format_lines() -> None:
    f = mem("f", "Alice lives in Paris", type="fact", valid_from=NOW - timedelta(days=1), valid_to=NOW)
    assert format_line("facts", "f", f.text, f) == "Alice lives in Paris (valid 2025-12-31 to 2026-01-01)"
    e = mem("e", "flew  to\nBerlin", type="event", days_ago=2)
    assert format_line("recent_events", "e", e.text, e) == "flew to Berlin"  # dated by its day's header
    assert day_header("2025-12-30") == "2025-12-30 (Tuesday):"
    assert format_line("sources", "n", "a note", mem("n")) == "[n] a note"
    assert format_line("sources", "snippet:1", "given", None) == "[snippet:1] given"


def test_fit_drops_lowest_value_first() -> None:
    # each line: 30 chars -> 10 tokens + 1 overhead = 11
    items = [item(f"m{r}", 30, r) for r in range(5)]
    plan = fit(items, budget=33)
    assert [it.id for it in plan.kept] == ["m0", "m1", "m2"]
    assert [a.memory_id for a in plan.actions] == ["m3", "m4"]
    assert all(a.action == "drop" for a in plan.actions)
    assert (plan.used, plan.dropped, plan.planned) == (33, 22, 55)


def test_fit_keeps_pinned_first_and_truncates_when_room() -> None:
    # 120 chars -> 40 tokens + 1 = 41 per line
    items = [item("best", 120, 0), item("pin", 120, 9, pinned=True)]
    plan = fit(items, budget=41 + MIN_TRUNCATE_TOKENS + 1)
    assert plan.kept[0].id == "pin"
    assert plan.kept[1].id == "best" and plan.actions[0].action == "truncate"
    assert tokens.line_tokens(plan.kept[1].line) == MIN_TRUNCATE_TOKENS + 1
    assert plan.used == plan.budget


def test_pinned_alone_overflowing_is_cut() -> None:
    plan = fit([item("pin", 3000, 0, pinned=True)], budget=300)
    assert plan.used <= 300 and plan.actions[0].action == "truncate"


def test_summary_allowance_and_context_tokens() -> None:
    assert summary_allowance(1200, 400) == 800 and summary_allowance(1200, 1150) == 50
    assert summary_allowance(1200, 1190) == 0  # below SUMMARY_MIN_TOKENS: no summary
    assert context_tokens(["abc"], ["abcdef"], "", ["a"]) == (1 + 1) + (2 + 1) + (1 + 1)
    tok = get_tokenizer("o200k_base")  # "hello world" is 2 tokens in o200k_base, "abc" 1
    assert context_tokens(["hello world"], [], "abc", [], tok) == (2 + 1) + (1 + 1)


def test_build_items_limits_and_caps() -> None:
    memories = {f"f{i}": mem(f"f{i}", f"fact {i}", type="fact") for i in range(3)}
    memories["e"] = mem("e", "y " * 2000, type="event")
    ranked = ["f0", "f1", "f2", "e"]
    scores = dict.fromkeys(ranked, 0.5)
    items, actions, _ = build_items(
        ranked,
        scores,
        memories,
        {},
        include=["facts", "recent_events"],
        max_facts=2,
        max_events=6,
        pinned=frozenset({"f2"}),
        redactor=NoRedaction(),
    )
    assert [it.id for it in items] == ["f0", "f1", "f2", "e"]  # f2 pinned: not limited
    items, actions, overflow = build_items(
        ranked,
        scores,
        memories,
        {},
        include=["facts", "recent_events"],
        max_facts=1,
        max_events=6,
        pinned=frozenset(),
        redactor=NoRedaction(),
    )
    assert [it.id for it in items] == ["f0", "e"]
    # one `limit` action for the section, however many candidates it held back
    assert [(a.action, a.memory_id) for a in actions] == [("truncate", "e"), ("limit", None)]
    assert actions[1].notes == "2 candidates past return.max_facts=1 (the summary takes the best that fit)"
    assert [(it.id, it.plain, it.line) for it in overflow] == [("f1", "fact 1", ""), ("f2", "fact 2", "")]
    assert tokens.estimate(items[1].line) <= MAX_LINE_TOKENS
    items, _, _ = build_items(
        ranked,
        scores,
        memories,
        {},
        include=["sources"],
        max_facts=5,
        max_events=5,
        pinned=frozenset(),
        redactor=NoRedaction(),
    )
    assert items == []


def test_sections_group_events_by_day_newest_day_first() -> None:
    def ev(i: str, when: int, day: str, rank: int) -> RenderItem:
        return RenderItem(
            id=i, section="recent_events", plain="", line=i, rank=rank, score=1, when=when, group=day
        )

    a, b = ev("a", 1, "2023-05-08", 0), ev("b", 2, "2023-05-08", 3)
    c = ev("c", 5, "2023-06-01", 1)
    f = RenderItem(id="f", section="facts", plain="", line="f", rank=2, score=0.1)
    # days newest first; within a day in time order (a conversation reads top to bottom)
    assert sections([b, c, f, a]) == (
        ["f"],
        ["2023-06-01 (Thursday):", "c", "2023-05-08 (Monday):", "a", "b"],
        [],
    )


def test_fit_pays_each_day_header_once() -> None:
    tok = get_tokenizer("o200k_base")
    header = tok.line_tokens(day_header("2023-05-08"))
    items = [
        RenderItem(
            id=f"e{r}",
            section="recent_events",
            plain="",
            line="Caroline: I went to the park.",
            rank=r,
            score=1.0,
            when=r,
            group="2023-05-08",
        )
        for r in range(3)
    ]
    line = tok.line_tokens(items[0].line)
    plan = fit(items, budget=header + 3 * line, tokenizer=tok)
    assert [it.id for it in plan.kept] == ["e0", "e1", "e2"] and plan.used == header + 3 * line
    plan = fit(items, budget=header + 3 * line - 1, tokenizer=tok)
    assert [it.id for it in plan.kept] == ["e0", "e1"] and plan.actions[0].action == "drop"
    assert plan.planned == header + 3 * line


def test_extractive_summary() -> None:
    assert first_sentence("Alice moved. Then more.") == "Alice moved."
    assert first_sentence("no period here") == "no period here."
    kept = [
        RenderItem(id="a", section="facts", plain="Alice moved to Paris. Long.", line="", rank=1, score=1),
        RenderItem(id="b", section="facts", plain="Bob likes tea", line="", rank=0, score=1),
    ]
    assert extractive(kept, 100) == "Bob likes tea. Alice moved to Paris."
    short = extractive(kept, 6)
    assert tokens.line_tokens(short) <= 6
    assert extractive([], 100) == ""


def test_beyond_compacts_the_next_best_by_day() -> None:
    """Chosen best first while they fit, shown a day per line (newest first), in time order within it;
    whole texts, no duplicates."""

    def ev(i: str, rank: int, day: str, when: int, text: str) -> RenderItem:
        return RenderItem(
            id=i, section="recent_events", plain=text, line="", rank=rank, score=1, when=when, group=day
        )

    items = [
        ev("a", 2, "2024-01-01", 1, "Ann: I went  skiing. It was great."),
        ev("b", 0, "2024-02-01", 20, "Bob: I adopted a cat."),
        ev("c", 1, "2024-02-01", 10, "Ann: Nice!"),
        ev("d", 3, "2024-02-01", 30, "Bob: I adopted a cat."),
    ]
    assert beyond(items, 100) == (
        "2024-02-01: Ann: Nice! | Bob: I adopted a cat.\n2024-01-01: Ann: I went skiing. It was great."
    )
    assert beyond([], 100) == "" and beyond(items, 1) == ""
    tok = get_tokenizer("o200k_base")
    for room in range(2, 40):
        assert tok.line_tokens(beyond(items, room, tok)) <= room
    assert "Bob" in beyond(items, 16, tok) and "skiing" not in beyond(items, 16, tok)  # best first


def test_beyond_gives_entries_without_a_day_no_day_label() -> None:
    """Facts (no day group) beside events: the facts' line is their entries alone, never ": ..."."""
    items = [
        RenderItem(
            id="f", section="facts", plain="Sam's favourite rug is blue", line="", rank=0, score=1, when=5
        ),
        RenderItem(
            id="e",
            section="recent_events",
            plain="Sam: hi",
            line="",
            rank=1,
            score=1,
            when=9,
            group="2024-01-02",
        ),
    ]
    assert beyond(items, 100) == "2024-01-02: Sam: hi\nSam's favourite rug is blue"
    assert beyond(items[:1], 100) == "Sam's favourite rug is blue"


def _said(text: str, rank: int = 0, day: str = "2024-01-01") -> RenderItem:
    return RenderItem(
        id=f"m{rank}", section="recent_events", plain=text, line="", rank=rank, score=1, group=day
    )


def _words(n: int) -> str:
    return "Ann:  " + " ".join(f"w{i}" for i in range(n))


# a short text; one cut by o200k_base's count and not by the estimate's; one cut by both; one past the cache
@pytest.mark.parametrize("words", [30, 100, 400, 1200])
def test_beyond_cuts_each_entry_alike_on_every_call(words: int) -> None:
    """An entry is its text, spaces made single, capped at MAX_ENTRY_TOKENS under each tokenizer's own
    count, whether remembered from an earlier call or not."""
    text = _words(words)
    assert (len(text) > ENTRY_CACHE_MAX_CHARS) == (words == 1200)
    for tok in (ESTIMATE, get_tokenizer("o200k_base")):
        first = beyond([_said(text)], 1000, tok)
        assert beyond([_said(text)], 1000, tok) == first
        entry = first.removeprefix("2024-01-01: ")
        assert "  " not in entry and tok.count(entry) <= MAX_ENTRY_TOKENS
        assert entry.endswith(ELLIPSIS) == (tok.count(" ".join(text.split())) > MAX_ENTRY_TOKENS)


@pytest.mark.parametrize("words", [30, 400])
def test_beyond_says_a_text_once_even_when_its_entry_is_cut(words: int) -> None:
    """Two memories with one text give one entry, a text the summary had to cut included."""
    text = _words(words)
    for tok in (ESTIMATE, get_tokenizer("o200k_base")):
        summary = beyond([_said(text, 0), _said(text, 1), _said("Bob: Nice.", 2)], 1000, tok)
        assert summary.count("Ann:") == 1 and "Bob: Nice." in summary


def test_beyond_leaves_out_a_long_text_cut_to_what_a_line_shows() -> None:
    """Two long texts alike in their first 160 tokens read the same once cut: the line shows one, the
    summary leaves the other out (whatever iterable the lines come in)."""
    tok = get_tokenizer("o200k_base")
    shown_text = _words(400) + " and more"
    line = msgspec.structs.replace(
        _said(shown_text, 5), line=tok.truncate(" ".join(shown_text.split()), MAX_LINE_TOKENS)
    )
    summary = beyond([_said(_words(400), 0), _said("Bob: Nice.", 1)], 1000, tok, iter([line]))
    assert summary == "2024-01-01: Bob: Nice."


def test_fit_prefers_whole_lower_ranked_lines_to_cutting_one() -> None:
    # 120 chars -> 41 per line (estimate); 30 chars -> 11
    items = [item("a", 120, 0), item("big", 300, 1), item("c", 30, 2)]
    plan = fit(items, budget=41 + 11 + MIN_TRUNCATE_TOKENS + 1)
    assert [it.id for it in plan.kept] == ["a", "c", "big"]  # "big" cut into what the whole lines left
    assert [a.action for a in plan.actions] == ["truncate"]
    assert plan.used <= plan.budget


def test_fit_cuts_a_pinned_item_before_filling_with_others() -> None:
    items = [item("pin", 300, 5, pinned=True), item("small", 30, 0)]
    plan = fit(items, budget=60)
    assert plan.kept[0].id == "pin" and plan.actions[0].action == "truncate"


def test_a_long_text_is_shown_by_its_start_and_the_passage_that_matched() -> None:
    tok = get_tokenizer("o200k_base")
    start = "Sam: We spent the whole afternoon in the garden and talked about many things. "
    text = (
        start
        + "The weather was fine. " * 30
        + "I bought a new espresso machine for the kitchen. "
        + "Bye. " * 5
    )
    line = snippet(text, "I bought a new espresso machine for the kitchen.", tok)
    assert line.startswith("Sam: We spent the whole afternoon")
    assert line.endswith(" I bought a new espresso machine for the kitchen. …")
    assert tok.count(line) < tok.count(text) // 3
    # a passage within the start: the text as it is (the line's cap cuts it), nothing dropped around it
    assert (
        snippet(text, "We spent the whole afternoon in the garden and talked about many things.", tok) == text
    )
    assert snippet(text, "not a passage of the text", tok) == text
    ends = start + "The weather was fine. " * 30 + "I bought a new espresso machine for the kitchen."
    assert snippet(ends, "I bought a new espresso machine for the kitchen.", tok).endswith("kitchen.")


def _lifted_event(text: str, passage: str) -> RenderItem:
    """The item of one event whose `passage` matched the question."""
    items, _, _ = build_items(
        ["e"],
        {"e": 1.0},
        {"e": mem("e", text, type="event", days_ago=1)},
        {},
        include=["recent_events"],
        max_facts=12,
        max_events=6,
        pinned=frozenset(),
        redactor=NoRedaction(),
        tokenizer=get_tokenizer("o200k_base"),
        passages={"e": passage},
    )
    return items[0]


def test_build_items_shows_a_matched_passage_and_keeps_the_whole_text_for_the_summary() -> None:
    text = "Sam: " + "The weather was fine today. " * 40 + "I bought a new espresso machine."
    item = _lifted_event(text, "I bought a new espresso machine.")
    assert item.line.endswith("I bought a new espresso machine.") and item.plain == text


def test_a_lifted_text_that_fits_its_line_is_shown_whole() -> None:
    """The start-and-passage line is only for a text its line would cut: one that fits keeps every word."""
    text = (
        "Sam: I'm looking for advice on writing a solid contract for my freelance clients, one that covers "
        "the scope, the payment terms and the deadlines of every project. I just signed with my first client "
        "today."
    )
    assert _lifted_event(text, "I just signed with my first client today.").line == text
