"""The inspector in a real browser against a real `loci serve`: sign-in, the memories table and one
memory, fact timelines with the as_of slider, the entity graph, the assemble playground, live events,
a read-only key, and no request to any other origin."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import msgspec
import pytest

from engine.retrieval.presets import get_preset
from tests.browser.conftest import Loci, Traffic, sign_in

pytestmark = pytest.mark.browser

Shot = Callable[[Any, str], Path]
CHANNELS = ("semantic", "bm25", "graph_prior", "recency_decay", "confidence")


def _rows(page: Any) -> list[str]:
    rows: list[str] = page.locator("table.grid tbody tr").all_inner_texts()
    return rows


def test_sign_in_then_filter_and_page_the_table(page: Any, loci: Loci, shot: Shot) -> None:
    page.goto(f"{loci.base}/ui/")
    page.get_by_label("API key", exact=True).fill("loci_not-a-real-key")
    page.get_by_role("button", name="Sign in").click()
    page.get_by_text("Sign-in failed: invalid API key").wait_for()

    sign_in(page, loci)
    page.get_by_text("org acme").wait_for()
    assert page.get_by_role("link", name="Memories").get_attribute("aria-current") == "page"
    page.locator("#memories-count").wait_for()

    page.get_by_label("Text contains", exact=True).fill("berlin")
    page.get_by_label("Type", exact=True).select_option("fact")
    page.get_by_role("button", name="Apply filters").click()
    page.get_by_text("Page 1: 2 memories").wait_for()
    rows = _rows(page)
    assert len(rows) == 2 and all("berlin" in r.lower() for r in rows)
    assert "q=berlin" in page.url and "type=fact" in page.url

    page.get_by_label("Status", exact=True).select_option("superseded")
    page.get_by_role("button", name="Apply filters").click()
    page.get_by_text("Page 1: 0 memories").wait_for()
    page.get_by_label("Text contains", exact=True).fill("")
    page.get_by_role("button", name="Apply filters").click()
    page.get_by_text("Page 1: 1 memory").wait_for()
    assert "Alice lives in Paris" in _rows(page)[0]
    shot(page, "memories-filtered")

    page.get_by_role("button", name="Clear").click()
    page.get_by_label("Namespace", exact=True).fill("docs")
    page.get_by_label("Since (UTC day)", exact=True).fill("2024-05-01")
    page.get_by_label("Until (UTC day, exclusive)", exact=True).fill("2024-05-02")
    page.get_by_role("button", name="Apply filters").click()
    page.get_by_text("Page 1: 25 memories (more on the next page)").wait_for()
    page.get_by_role("button", name="Next page →").click()
    page.get_by_text("Page 2: 5 memories").wait_for()
    assert page.get_by_role("button", name="Next page →").is_disabled()
    page.get_by_role("button", name="← Previous page").click()
    page.get_by_text("Page 1: 25 memories").wait_for()
    shot(page, "memories")


def test_filters_from_the_address_that_no_option_names_are_shown_and_kept(page: Any, loci: Loci) -> None:
    """An address with type=fact,note (the API's comma list) and size=10 shows them in the form and keeps
    them when another filter is applied; the boxes showed "any" and 25 and the next Apply dropped them."""
    sign_in(page, loci, view="#/memories?entity=ent%3Aalice&type=fact%2Cnote&size=3")
    page.get_by_text("Page 1: 3 memories (more on the next page)").wait_for()
    assert page.get_by_label("Type", exact=True).input_value() == "fact,note"
    assert page.get_by_label("Page size", exact=True).input_value() == "3"
    page.get_by_label("Order", exact=True).select_option("timestamp_asc")
    page.get_by_role("button", name="Apply filters").click()
    page.wait_for_url(re.compile(r"sort=timestamp_asc"))
    page.get_by_text("Page 1: 3 memories (more on the next page)").wait_for()
    assert "type=fact%2Cnote" in page.url and "size=3" in page.url
    assert all(r.split("\t")[1] in ("fact", "note") for r in _rows(page))


def test_next_page_twice_before_it_loads_opens_the_next_page(page: Any, loci: Loci) -> None:
    """Two clicks on Next page before the page loads open page 2, not a "Page 3" holding page 1 again
    (the second click read a cursor not yet known)."""
    sign_in(page, loci, view="#/memories?namespace=docs&sort=timestamp_asc")
    page.get_by_text("Page 1: 25 memories (more on the next page)").wait_for()
    page.evaluate(
        """() => { const next = [...document.querySelectorAll('nav.pager button')].at(-1);
        next.click(); next.click(); }"""
    )
    page.get_by_text("Page 2: 5 memories").wait_for()
    rows = _rows(page)
    assert len(rows) == 5 and "Handbook chunk 25" in rows[0] and "Handbook chunk 29" in rows[-1]
    assert page.get_by_role("button", name="Next page →").is_disabled()


def test_open_a_memory_with_its_history(page: Any, loci: Loci, shot: Shot) -> None:
    sign_in(page, loci)
    page.get_by_label("Text contains", exact=True).fill("lives in paris")
    page.get_by_role("button", name="Apply filters").click()
    page.get_by_role("link", name="Alice lives in Paris").click()
    page.get_by_role("heading", name=re.compile(f"Memory {loci.ids['paris']}")).wait_for()
    record = page.locator("dl.record").inner_text()
    assert "superseded" in record and "ent:alice|lives_in" in record and "2025-01-01T00:00:00Z" in record
    history = page.locator("#history-title + table").inner_text()
    assert "memory.created" in history and "memory.superseded" in history
    assert loci.ids["berlin"] in history  # superseded_by
    shot(page, "memory")


def test_record_shows_the_text_with_its_line_breaks(page: Any, loci: Loci) -> None:
    """The record shows a memory's text as stored: its lines and runs of spaces were joined into one line."""
    text = "Agenda:\n  1. budget\n  2. hiring\n\nNext   week"
    with loci.client() as c:
        mid = c.post("/v0/memories", json={"type": "note", "entity_id": "ent:lines", "text": text}).json()[
            "memory_id"
        ]
    sign_in(page, loci, view=f"#/memory/{mid}")
    shown = page.locator("dl.record dt", has_text=re.compile("^text$")).locator(
        "xpath=following-sibling::dd[1]"
    )
    assert shown.inner_text() == text


def test_history_shows_events_past_the_first_page(page: Any, loci: Loci) -> None:
    """A memory with more events than one page of the event log (500) shows them all: the newest (here
    its archiving) were left out without a word."""
    with loci.client() as c:
        mid = c.post("/v0/memories", json={"type": "note", "entity_id": "ent:busy", "text": "busy"}).json()[
            "memory_id"
        ]
        for i in range(500):
            c.patch(f"/v0/memories/{mid}", json={"tags": [f"t{i}"]}).raise_for_status()
        c.patch(f"/v0/memories/{mid}", json={"archived": True}).raise_for_status()
    sign_in(page, loci, view=f"#/memory/{mid}")
    history = page.locator("#history-title + table tbody tr")
    history.first.wait_for()
    assert history.count() == 502
    assert "memory.archived" in history.last.inner_text()


def test_tags_round_trip_with_commas(page: Any, loci: Loci, shot: Shot) -> None:
    """A tag holding a comma stays one tag: saved unedited it is unchanged (the comma-separated box split
    it in two), the table shows each tag on its own, and a tag is added and removed as typed."""
    with loci.client() as c:
        mid = c.post(
            "/v0/memories",
            json={
                "type": "note",
                "entity_id": "ent:tagged",
                "text": "tagged",
                "tags": ["city, country", "x"],
            },
        ).json()["memory_id"]
        sign_in(page, loci, view=f"#/memory/{mid}")
        page.get_by_role("button", name="Save tags").click()
        page.get_by_text("Save tags: done.").wait_for()
        assert c.get(f"/v0/memories/{mid}").json()["tags"] == ["city, country", "x"]

        page.get_by_label("Add a tag", exact=True).fill("a,b")
        page.get_by_label("Add a tag", exact=True).press("Enter")
        page.get_by_role("button", name="Remove tag x", exact=True).click()
        page.get_by_role("button", name="Save tags").click()
        page.get_by_text("Save tags: done.").wait_for()
        assert c.get(f"/v0/memories/{mid}").json()["tags"] == ["city, country", "a,b"]
        shot(page, "tags")

    page.goto(f"{loci.base}/ui/#/memories?entity=ent%3Atagged")
    page.locator("#memories-count").wait_for()
    assert page.locator("table.grid tbody tr li.tag").all_inner_texts() == ["city, country", "a,b"]


def test_focus_stays_on_the_control_after_a_change(page: Any, loci: Loci) -> None:
    """Archive, Unarchive and Save tags redraw the memory; keyboard focus stays on the control that acted
    (it fell to <body>)."""
    with loci.client() as c:
        mid = c.post("/v0/memories", json={"type": "note", "entity_id": "ent:focus", "text": "focus"}).json()[
            "memory_id"
        ]
    sign_in(page, loci, view=f"#/memory/{mid}")
    focused = "() => document.activeElement.id"
    page.locator("#archive-toggle").focus()
    page.keyboard.press("Enter")
    page.get_by_text("Archive: done.").wait_for()
    assert page.evaluate(focused) == "archive-toggle"
    page.keyboard.press("Enter")  # the same control, now Unarchive
    page.get_by_text("Unarchive: done.").wait_for()
    assert page.evaluate(focused) == "archive-toggle"
    assert page.locator("#archive-toggle").inner_text() == "Archive"
    page.locator("#save-tags").focus()
    page.keyboard.press("Enter")
    page.get_by_text("Save tags: done.").wait_for()
    assert page.evaluate(focused) == "save-tags"


@pytest.mark.parametrize(
    ("view", "button", "shown"),
    [("timeline", "Show timeline", "#true-then"), ("graph", "Show graph", "svg.graph .node-centre")],
)
def test_an_earlier_entity_answering_late_does_not_replace_the_chosen_one(
    page: Any, loci: Loci, view: str, button: str, shown: str
) -> None:
    """Show ent:alice, then ent:acme before Alice's answer came: Acme stays on screen when Alice's answer
    arrives (it replaced Acme's under an address and a form naming Acme)."""
    held: list[Any] = []

    def hold_alice(route: Any) -> None:
        if "ent%3Aalice" in route.request.url and not held:
            held.append(route)
        else:
            route.continue_()

    sign_in(page, loci, view=f"#/{view}")
    page.route("**/v0/**", hold_alice)
    entity = page.get_by_label("Entity", exact=True)
    entity.fill("ent:alice")
    page.get_by_role("button", name=button).click()
    entity.fill("ent:acme")
    page.get_by_role("button", name=button).click()
    page.locator(shown, has_text="ent:acme").wait_for()
    assert held, "Alice's request was not held"
    held[0].continue_()
    held[0].request.response().finished()
    page.evaluate("() => new Promise((done) => setTimeout(done, 0))")  # Alice's answer handled
    assert "entity=ent%3Aacme" in page.url
    assert "ent:alice" not in page.locator(shown).text_content()


def _slider_x(page: Any, when: datetime) -> tuple[float, float, float]:
    slider = page.locator("#asof")
    lo, hi = float(slider.get_attribute("min")), float(slider.get_attribute("max"))
    box = slider.bounding_box()
    thumb = 8  # half of Chromium's range thumb: the value maps to [left + thumb, right - thumb]
    frac = (when.timestamp() * 1000 - lo) / (hi - lo)
    current = (float(slider.input_value()) - lo) / (hi - lo)
    span = box["width"] - 2 * thumb
    y = box["y"] + box["height"] / 2
    return box["x"] + thumb + current * span, box["x"] + thumb + frac * span, y


def test_timeline_as_of_slider_shows_the_older_value(page: Any, loci: Loci, shot: Shot) -> None:
    sign_in(page, loci)
    page.get_by_role("link", name="Fact timelines").click()
    page.get_by_label("Entity", exact=True).fill("ent:alice")
    page.get_by_role("button", name="Show timeline").click()
    row = page.locator("#true-then tr", has_text="ent:alice|lives_in")
    row.wait_for()
    assert row.locator("td.value").inner_text() == "Berlin"
    bars = page.locator("a.seg")
    assert bars.count() == 5  # lives_in twice, works_at, knows, likes
    paris = page.locator("a.seg-superseded")
    assert paris.count() == 1 and "Paris: superseded, 2023-01-01 to 2025-01-01" in paris.get_attribute(
        "aria-label"
    )

    start, target, y = _slider_x(page, datetime(2024, 3, 1, tzinfo=UTC))
    page.mouse.move(start, y)
    page.mouse.down()
    page.mouse.move(target, y, steps=12)
    page.mouse.up()
    assert row.locator("td.value").inner_text() == "Paris"
    when = datetime.fromisoformat(
        page.locator("#asof-value").inner_text().replace(" ", "T").replace("Z", "+00:00")
    )
    assert datetime(2023, 12, 1, tzinfo=UTC) < when < datetime(2024, 6, 1, tzinfo=UTC)
    assert "seg-then" in (paris.get_attribute("class") or "")
    knows = page.locator("#true-then tr", has_text="ent:alice|knows").locator("td.value").inner_text()
    assert knows == "—"  # Alice knew Bob only from June 2024
    shot(page, "timeline")

    page.keyboard.press("End")  # the slider keeps focus: back to now
    assert row.locator("td.value").inner_text() == "Berlin"


def test_timeline_moment_is_exact(page: Any, loci: Loci) -> None:
    """The slider holds exact moments: "Now" is the clock's now to the millisecond (a step of a 2,000th of
    the span rounded it by hours), an arrow key moves a day here and Shift+arrow an hour."""
    now = datetime(2026, 6, 15, 12, 34, 56, 789000, tzinfo=UTC)
    now_ms = int(now.timestamp() * 1000)
    day, hour = 86_400_000, 3_600_000
    page.clock.set_fixed_time(now)
    sign_in(page, loci, view="#/timeline?entity=ent%3Aalice")
    slider = page.locator("#asof")
    link = page.get_by_role("link", name="Assemble a context as of this time")

    def shown(ms: int) -> None:
        iso = datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        assert slider.input_value() == str(ms)
        assert page.locator("#asof-value").inner_text() == iso.replace("T", " ")[:19] + "Z"
        assert f"as_of={iso.replace(':', '%3A')}" in (link.get_attribute("href") or "")

    page.locator("#true-then").wait_for()
    shown(now_ms)
    slider.focus()
    page.keyboard.press("ArrowLeft")
    shown(now_ms - day)
    page.keyboard.press("Shift+ArrowLeft")
    shown(now_ms - day - hour)
    page.keyboard.press("ArrowRight")
    shown(now_ms - hour)
    page.get_by_role("button", name="Now").click()
    shown(now_ms)


def test_timeline_over_the_cap_keeps_the_newest_facts(page: Any, loci: Loci) -> None:
    """Over 2,000 facts the timeline leaves out the oldest and says so (it kept the oldest 2,000 and
    dropped the newest, which are what is true now)."""
    with loci.client() as c:
        for first in range(0, 2001, 200):
            items = [
                {
                    "entity_id": "ent:many",
                    "namespace": "bulk",
                    "subject": "ent:many",
                    "predicate": f"p{i:04d}",
                    "object_text": f"v{i}",
                    "object_type": "string",
                    "valid_from": f"{datetime(2020, 1, 1, tzinfo=UTC) + timedelta(hours=i):%Y-%m-%dT%H:%M:%SZ}",
                    "text": f"many has p{i:04d}",
                }
                for i in range(first, min(first + 200, 2001))
            ]
            c.post("/v0/memories:batch_upsert", json={"items": items}).raise_for_status()
    sign_in(page, loci, view="#/timeline?entity=ent%3Amany&namespace=bulk")
    page.locator("#true-then").wait_for()
    assert "Truncated: the newest 2000 facts only" in page.locator(".timeline").inner_text()
    newest = page.locator("#true-then tr", has_text="ent:many|p2000")
    assert newest.locator("td.value").inner_text() == "v2000"
    assert page.locator("#true-then tr", has_text="ent:many|p0000").count() == 0


def test_entity_graph_around_an_entity(page: Any, loci: Loci, shot: Shot) -> None:
    sign_in(page, loci)
    page.get_by_role("link", name="Entity graph").click()
    page.get_by_label("Entity", exact=True).fill("ent:alice")
    page.get_by_role("button", name="Show graph").click()
    svg = page.locator("svg.graph")
    svg.wait_for()
    names = page.locator("svg.graph .node text").all_text_contents()
    assert {"ent:alice", "ent:acme", "ent:bob", "ent:berlin"} <= set(names)
    labels = page.locator("svg.graph .edge text").all_text_contents()
    assert {"works_at", "knows", "located_in"} <= set(labels)
    edges = page.locator("#edges-title + table").inner_text()
    assert "works_at" in edges and "located_in" in edges
    shot(page, "graph")

    page.locator("svg.graph a.node", has_text="ent:acme").focus()
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(r"entity=ent%3Aacme"))
    page.locator("svg.graph a.node-centre", has_text="ent:acme").wait_for()


def test_graph_draws_each_direction_as_itself(page: Any, loci: Loci) -> None:
    """Cara manages Dov and Dov mentors Cara: two arrows, each from its subject to its object with its own
    predicate (one arrow Dov -> Cara read "mentors, manages"); Dov's memory naming Cara is a dashed line."""
    with loci.client() as c:
        c.post(
            "/v0/memories:batch_upsert",
            json={
                "items": [
                    {"entity_id": "ent:cara", "subject": "ent:cara", "predicate": "manages",
                     "object_text": "ent:dov", "object_type": "entity", "text": "Cara manages Dov"},
                    {"entity_id": "ent:dov", "subject": "ent:dov", "predicate": "mentors",
                     "object_text": "ent:cara", "object_type": "entity", "text": "Dov mentors Cara"},
                    {"entity_id": "ent:dov", "subject": "ent:cara", "predicate": "drinks",
                     "object_text": "tea", "object_type": "string", "text": "Dov says Cara drinks tea"},
                ]
            },
        ).raise_for_status()  # fmt: skip
    sign_in(page, loci, view="#/graph?entity=ent%3Acara")
    page.locator("svg.graph").wait_for()
    drawn = page.evaluate("""() => {
        const at = {};
        for (const a of document.querySelectorAll('svg.graph a.node')) {
            const c = a.querySelector('circle');
            at[a.querySelector('text').textContent] = [Number(c.getAttribute('cx')), Number(c.getAttribute('cy'))];
        }
        const near = (x, y) => Object.entries(at).sort(([, p], [, q]) =>
            Math.hypot(p[0] - x, p[1] - y) - Math.hypot(q[0] - x, q[1] - y))[0][0];
        return [...document.querySelectorAll('svg.graph g.edge')].map((g) => {
            const l = g.querySelector('line');
            const n = (name) => Number(l.getAttribute(name));
            return [g.getAttribute('class'), near(n('x1'), n('y1')), near(n('x2'), n('y2')),
                    g.querySelector('text') ? g.querySelector('text').textContent : ''];
        });
    }""")
    assert sorted(drawn) == [
        ["edge edge-fact", "ent:cara", "ent:dov", "manages"],
        ["edge edge-fact", "ent:dov", "ent:cara", "mentors"],
        ["edge edge-mention", "ent:dov", "ent:cara", ""],
    ]


def test_assemble_playground(page: Any, loci: Loci, shot: Shot) -> None:
    with loci.client() as c:
        before = c.get("/v0/memories", params={"page_size": 200}).json()["items"]
    sign_in(page, loci)
    page.get_by_role("link", name="Assemble playground").click()
    page.get_by_label("Entity", exact=True).fill("ent:alice")
    page.get_by_label("Turn", exact=True).fill(
        "Where does Alice live, and what did the quarterly reports say?"
    )
    page.get_by_label("Preset", exact=True).select_option("factual")
    assert not page.get_by_label("Ingest this turn", exact=False).is_checked()
    page.get_by_label("Budget (max context tokens)", exact=True).fill("256")
    page.get_by_role("button", name="Assemble").click()
    context = page.locator("#context-text")
    context.wait_for()
    text = context.inner_text()
    assert "Alice lives in Berlin (since 2025-01-01)" in text and "Paris" not in text
    assert " used of 256 (planned " in page.locator("#token-counts").inner_text()
    used = int(page.locator("#token-counts").inner_text().split(" used")[0])
    assert 0 < used <= 256
    assert page.locator("#budget-actions tbody tr").count() >= 1  # the long reports do not all fit
    assert page.locator("ol.matches li").count() >= 5
    assert (
        page.locator(".stack-seg.ch-semantic").count() >= 1
        and page.locator(".stack-seg.ch-bm25").count() >= 1
    )
    assert page.locator("#matches-title").inner_text().startswith("Matches (")
    weights = page.get_by_role("slider", name="semantic", exact=True).input_value()
    # the sliders show what the factual preset ran
    assert float(weights) == pytest.approx(get_preset("factual").weights.semantic)
    shot(page, "assemble")

    page.get_by_label("Custom weights", exact=False).check()
    page.get_by_role("slider", name="semantic", exact=True).fill("1")
    for other in ("bm25", "graph_prior", "recency_decay", "confidence"):
        page.get_by_role("slider", name=other, exact=True).fill("0")
    page.get_by_role("button", name="Assemble").click()
    page.get_by_text("semantic 1.00 · bm25 0.00").wait_for()
    assert page.locator(".stack-seg.ch-bm25").count() == 0
    with loci.client() as c:
        after = c.get("/v0/memories", params={"page_size": 200}).json()["items"]
    assert len(after) == len(before)  # ingest off: playing wrote nothing


def _sliders(page: Any) -> dict[str, float]:
    return {c: float(page.get_by_role("slider", name=c, exact=True).input_value()) for c in CHANNELS}


def test_assemble_sliders_show_the_chosen_preset(page: Any, loci: Loci) -> None:
    """The weight sliders show the chosen preset's weights before any run, and "custom weights" starts from
    them (they showed a stale set that custom sent whatever the preset)."""
    weights = {
        name: msgspec.to_builtins(get_preset(name).weights) for name in ("balanced", "factual", "graphy")
    }
    sign_in(page, loci, view="#/assemble?entity=ent%3Aalice")
    page.get_by_label("Turn", exact=True).fill("Where does Alice live?")
    assert _sliders(page) == weights["balanced"]
    page.get_by_label("Preset", exact=True).select_option("graphy")
    assert _sliders(page) == weights["graphy"]
    page.get_by_label("Preset", exact=True).select_option("factual")
    assert _sliders(page) == weights["factual"]
    page.get_by_label("Custom weights", exact=False).check()
    with page.expect_request(lambda r: r.url.endswith("/v0/context/assemble")) as sent:
        page.get_by_role("button", name="Assemble").click()
    page.locator("#context-text").wait_for()
    assert sent.value.post_data_json["retrieval"] == {"preset": "factual", "weights": weights["factual"]}


def test_an_earlier_assemble_answering_late_does_not_replace_the_last(page: Any, loci: Loci) -> None:
    """Assemble for Alice, then for Bob before Alice's answer came: Bob's context stays when Alice's answer
    arrives (it replaced Bob's)."""
    held: list[Any] = []

    def hold_alice(route: Any) -> None:
        if '"ent:alice"' in (route.request.post_data or "") and not held:
            held.append(route)
        else:
            route.continue_()

    sign_in(page, loci, view="#/assemble")
    page.route("**/v0/context/assemble", hold_alice)
    page.get_by_label("Turn", exact=True).fill("What is new?")
    for entity in ("ent:alice", "ent:bob"):
        page.get_by_label("Entity", exact=True).fill(entity)
        page.get_by_role("button", name="Assemble").click()
    page.locator("#context-text", has_text="cello").wait_for()
    assert held, "Alice's request was not held"
    held[0].continue_()
    held[0].request.response().finished()
    page.evaluate("() => new Promise((done) => setTimeout(done, 0))")  # Alice's answer handled
    assert "Alice" not in page.locator("#context-text").inner_text()


@pytest.mark.parametrize("asked", ["", "1000", "100"])
def test_assemble_budget_shown_is_budget_sent(page: Any, loci: Loci, asked: str) -> None:
    """The budget shown is the one sent: the default 1200 (a step of 64 from 256 sent 1216), one from the
    address, and one below the API's 256 shown as the 256 it becomes."""
    expected = {"": 1200, "1000": 1000, "100": 256}[asked]
    sign_in(page, loci, view=f"#/assemble?entity=ent%3Aalice&budget={asked}")
    page.get_by_label("Turn", exact=True).fill("Where does Alice live?")
    shown = page.locator(".weight output").last
    assert shown.inner_text() == str(expected)
    with page.expect_request(lambda r: r.url.endswith("/v0/context/assemble")) as sent:
        page.get_by_role("button", name="Assemble").click()
    page.locator("#context-text").wait_for()
    assert sent.value.post_data_json["budget"] == {"max_context_tokens": expected}
    assert f" used of {expected} " in page.locator("#token-counts").inner_text()


@pytest.mark.parametrize(
    ("as_of", "moment"),
    [
        ("2025-01-01T00:00:00.250Z", "2025-01-01T00:00:00.250Z"),  # the timeline's link: to the millisecond
        ("2025-01-01T01:00:00+02:00", "2024-12-31T23:00:00Z"),  # an offset is that moment, not its local time
    ],
)
def test_assemble_and_graph_run_at_the_moment_in_the_address(
    page: Any, loci: Loci, as_of: str, moment: str
) -> None:
    """An as_of in the address (the timeline's "assemble at this time" link) is the moment sent: its
    milliseconds were cut and an offset was read as UTC."""
    expected = datetime.fromisoformat(moment)
    quoted = as_of.replace(":", "%3A").replace("+", "%2B")
    sign_in(page, loci, view=f"#/assemble?entity=ent%3Aalice&as_of={quoted}")
    page.get_by_label("Turn", exact=True).fill("Where does Alice live?")
    with page.expect_request(lambda r: r.url.endswith("/v0/context/assemble")) as sent:
        page.get_by_role("button", name="Assemble").click()
    page.locator("#context-text").wait_for()
    assert datetime.fromisoformat(sent.value.post_data_json["as_of"]) == expected

    page.goto(f"{loci.base}/ui/#/graph?entity=ent%3Aalice&as_of={quoted}")
    page.locator("svg.graph").wait_for()
    with page.expect_request(lambda r: "/graph?" in r.url) as asked:
        page.get_by_role("button", name="Show graph").click()
    sent_as_of = parse_qs(urlsplit(asked.value.url).query)["as_of"][0]
    assert datetime.fromisoformat(sent_as_of) == expected


def test_live_events_show_a_new_memory(page: Any, loci: Loci, shot: Shot) -> None:
    sign_in(page, loci)
    page.get_by_role("link", name="Live events").click()
    page.locator("#stream-state[data-state='live']").wait_for()
    with loci.client() as c:
        created = c.post(
            "/v0/memories",
            json={"type": "note", "entity_id": "ent:carol", "text": "Carol joined the book club"},
        ).json()
    row = page.locator("#events-table tbody tr", has_text=created["memory_id"])
    row.wait_for(timeout=15_000)
    assert "memory.created" in row.inner_text() and "ent:carol" in row.inner_text()
    shot(page, "events")
    page.get_by_role("button", name="Stop").click()
    page.locator("#stream-state[data-state='stopped']").wait_for()


# Counts the event streams the page holds open, and holds back /v0/health answers while window.hold is set.
STREAMS_AND_HELD_CLOCK = """
window.openStreams = 0; window.hold = false; window.held = [];
const realFetch = window.fetch;
window.fetch = function (input, init) {
  if (init && init.headers && init.headers.Accept === 'text/event-stream') {
    window.openStreams += 1;
    init.signal.addEventListener('abort', () => { window.openStreams -= 1; });
  }
  const answer = realFetch.apply(this, arguments);
  if (String(input).startsWith('/v0/health') && window.hold) {
    answer.catch(() => {}); // aborted while held: the app sees it on release
    return new Promise((resolve, reject) => window.held.push(() => answer.then(resolve, reject)));
  }
  return answer;
};
"""


def test_leaving_live_events_ends_its_stream(page: Any, loci: Loci) -> None:
    """Leaving while the view still waits for the server's clock opens no stream later (six such streams
    held all of Chromium's connections to the server, and every view hung on "Loading…")."""
    page.add_init_script(STREAMS_AND_HELD_CLOCK)
    sign_in(page, loci)
    page.evaluate("() => { window.hold = true; }")
    for _ in range(6):
        page.evaluate("() => { location.hash = '#/events'; }")
        page.locator("#stream-state").wait_for()
        page.evaluate("() => { location.hash = '#/memories'; }")
        page.locator("#memories-count").wait_for()
    assert page.evaluate("() => window.held.length") == 6
    page.evaluate("() => { window.hold = false; window.held.splice(0).forEach((release) => release()); }")
    page.evaluate("() => { location.hash = '#/events'; }")
    page.locator("#stream-state[data-state='live']").wait_for()
    assert page.evaluate("() => window.openStreams") == 1  # this visit's stream only
    page.get_by_role("link", name="Memories").click()
    page.locator("#memories-count").wait_for()
    assert page.evaluate("() => window.openStreams") == 0


def test_live_event_links_to_the_entity_in_its_namespace(page: Any, loci: Loci) -> None:
    """A fact written in namespace 日本 links to that namespace's timeline (the link left the namespace out:
    "No facts for ent:jp in namespace default")."""
    sign_in(page, loci, view="#/events?entity=ent%3Ajp")
    page.locator("#stream-state[data-state='live']").wait_for()
    with loci.client() as c:
        c.post(
            "/v0/memories:batch_upsert",
            json={
                "items": [
                    {
                        "entity_id": "ent:jp",
                        "namespace": "日本",
                        "subject": "ent:jp",
                        "predicate": "capital",
                        "object_text": "Tokyo",
                        "object_type": "string",
                        "text": "The capital is Tokyo",
                    }
                ]
            },
        ).raise_for_status()
    page.locator("#events-table tbody tr", has_text="memory.created").get_by_role(
        "link", name="ent:jp"
    ).click()
    row = page.locator("#true-then tr", has_text="ent:jp|capital")
    row.wait_for()
    assert row.locator("td.value").inner_text() == "Tokyo"
    assert page.get_by_label("Namespace", exact=True).input_value() == "日本"


def test_read_only_key_cannot_change_anything(page: Any, loci: Loci, shot: Shot) -> None:
    sign_in(page, loci, key=loci.read_key, view=f"#/memory/{loci.ids['berlin']}")
    page.get_by_text("read-only", exact=True).wait_for()
    page.get_by_role("heading", name=re.compile("Memory")).wait_for()
    for name in ("Archive", "Delete", "Save tags"):
        assert page.get_by_role("button", name=name).is_disabled(), name
    assert page.get_by_label("Add a tag", exact=True).is_disabled()
    refused = page.evaluate(
        """async (id) => {
        const key = sessionStorage.getItem('loci.apiKey');
        const r = await fetch('/v0/memories/' + id, {method: 'PATCH', body: JSON.stringify({archived: true}),
            headers: {'Authorization': 'Bearer ' + key, 'Content-Type': 'application/json'}});
        return [r.status, (await r.json()).error];
    }""",
        loci.ids["berlin"],
    )
    assert refused == [403, "forbidden"]
    shot(page, "read-only")

    page.get_by_role("link", name="Assemble playground").click()
    assert page.get_by_label("Ingest this turn", exact=False).is_disabled()
    page.get_by_label("Entity", exact=True).fill("ent:alice")
    page.get_by_label("Turn", exact=True).fill("Where does Alice live?")
    page.get_by_role("button", name="Assemble").click()
    page.locator("#context-text").wait_for()  # reading is allowed
    with loci.client() as c:
        assert c.get(f"/v0/memories/{loci.ids['berlin']}").json()["archived"] is False


def test_no_request_leaves_the_server(page: Any, loci: Loci, traffic: Traffic) -> None:
    response = page.goto(f"{loci.base}/ui/")
    csp = response.headers["content-security-policy"]
    assert "default-src 'none'" in csp and "connect-src 'self'" in csp and "http" not in csp
    page.get_by_label("API key", exact=True).fill(loci.key)
    page.get_by_role("button", name="Sign in").click()
    page.locator("#memories-count").wait_for()
    for view, ready in (
        ("timeline?entity=ent:alice", "#true-then"),
        ("graph?entity=ent:alice", "svg.graph"),
        ("events", "#stream-state[data-state='live']"),
        (f"memory/{loci.ids['paris']}", "dl.record"),
    ):
        page.goto(f"{loci.base}/ui/#/{view}")
        page.locator(ready).wait_for()
    page.goto(f"{loci.base}/ui/#/assemble")
    page.get_by_label("Entity", exact=True).fill("ent:alice")
    page.get_by_label("Turn", exact=True).fill("hello")
    page.get_by_role("button", name="Assemble").click()
    page.locator("#context-text").wait_for()
    stored = page.evaluate(
        "() => [localStorage.length, document.cookie, sessionStorage.getItem('loci.apiKey')]"
    )
    assert stored == [0, "", loci.key]  # the key is in this tab's session storage only
    assert {
        "/ui/",
        "/ui/app.css",
        "/ui/js/app.js",
        "/ui/js/views/graph.js",
        "/v0/keys/self",
        "/v0/memories",
        "/v0/observability/events",
        "/v0/context/assemble",
    } <= set(traffic.paths)
    assert traffic.external == []  # and the page fixture fails the test on any other origin


def _tab_to(page: Any, predicate: str, limit: int = 40, key: str = "Tab") -> None:
    """Press Tab (or `key`) until the focused element satisfies the JS predicate `(el) => bool`."""
    for _ in range(limit):
        page.keyboard.press(key)
        if page.evaluate(f"() => ({predicate})(document.activeElement)"):
            return
    raise AssertionError(f"Tab never reached an element with {predicate}")


def test_keyboard_only(page: Any, loci: Loci, shot: Shot) -> None:
    page.goto(f"{loci.base}/ui/")
    page.keyboard.type(loci.key)  # the key field has focus
    page.keyboard.press("Enter")
    page.locator("#memories-count").wait_for()
    _tab_to(page, "(el) => el.textContent === 'Fact timelines'", key="Shift+Tab")  # back from the heading
    outline = page.evaluate("() => getComputedStyle(document.activeElement).outlineStyle")
    assert outline not in ("", "none")  # a visible focus state
    page.keyboard.press("Enter")
    page.get_by_role("heading", name="Fact timelines").wait_for()
    _tab_to(page, "(el) => el.name === 'entity'")
    page.keyboard.type("ent:alice")
    page.keyboard.press("Enter")
    row = page.locator("#true-then tr", has_text="ent:alice|lives_in").locator("td.value")
    row.wait_for()
    _tab_to(page, "(el) => el.id === 'asof'")
    page.keyboard.press("Home")
    assert row.inner_text() == "—"  # before any fact
    for _ in range(12):
        page.keyboard.press("PageUp")  # a tenth of the range each
        if row.inner_text() != "—":
            break
    assert row.inner_text() == "Paris"
    shot(page, "keyboard")


def test_a_broken_address_says_so(page: Any, loci: Loci) -> None:
    """A truncated %-escape in the address is a "Not found" page, not an uncaught URIError over the old view."""
    sign_in(page, loci)
    page.locator("#memories-count").wait_for()
    page.evaluate("() => { location.hash = '#/memory/%E0%A4%A'; }")
    page.get_by_role("heading", name="Not found").wait_for()
    assert "is not valid" in page.get_by_role("alert").inner_text()
    assert page.locator("#memories-count").count() == 0  # the old view is gone
    page.get_by_role("link", name="Memories").click()
    page.locator("#memories-count").wait_for()
