"""The inspector's own JavaScript modules, run in Chromium: the server-sent-event parser, the event
stream's resume after the server ends it (Last-Event-ID), and the timeline model's as_of rule."""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.browser.conftest import Loci, sign_in

pytestmark = pytest.mark.browser


def test_sse_parser_across_chunk_boundaries(page: Any, loci: Loci) -> None:
    page.goto(f"{loci.base}/ui/")
    out = page.evaluate("""async () => {
        const { SseParser } = await import('/ui/js/sse.js');
        const p = new SseParser();
        const chunks = ['retry: 1000\\n: connected\\n\\n', 'id: a\\nevent: memory.created\\nda',
                        'ta: {"x":1}\\n', '\\n', 'id: b\\r\\nevent: e2\\r\\ndata: line1\\r\\ndata:line2\\r',
                        '\\n\\r\\n', ': keep-alive\\n\\n', 'data: no id or type\\n\\n', 'event: empty\\n\\n'];
        const events = chunks.flatMap((c) => p.push(c));
        return { events, retry: p.retry, rest: p.buffer };
    }""")
    assert out["events"] == [
        {"id": "a", "event": "memory.created", "data": '{"x":1}'},
        {"id": "b", "event": "e2", "data": "line1\nline2"},
        {"id": "b", "event": "message", "data": "no id or type"},  # the last event id carries over
    ]
    assert out["retry"] == 1000 and out["rest"] == ""


def test_event_stream_resumes_without_gaps_or_repeats(page: Any, loci: Loci) -> None:
    """The server ends each stream after 1 s (`timeout`); the client reconnects with Last-Event-ID."""
    sign_in(page, loci)
    page.evaluate("""async () => {
        const { followEvents } = await import('/ui/js/api.js');
        window.got = []; window.states = [];
        window.stopStream = followEvents({ type: 'memory.created', entity_id: 'ent:resume', timeout: 1 }, {
            onEvent: (item) => window.got.push(item.memory_id), onState: (s) => window.states.push(s) });
    }""")
    ids = []
    with loci.client() as c:
        for i in range(3):
            ids.append(
                c.post(
                    "/v0/memories", json={"type": "note", "entity_id": "ent:resume", "text": f"resume {i}"}
                ).json()["memory_id"]
            )
            page.wait_for_function("(n) => window.got.length >= n", arg=i + 1)
            lives = page.evaluate("() => window.states.filter((s) => s === 'live').length")
            deadline = time.monotonic() + 30
            while page.evaluate("() => window.states.filter((s) => s === 'live').length") <= lives:
                assert time.monotonic() < deadline, "the stream did not reconnect"
                page.wait_for_timeout(100)
    page.evaluate("() => window.stopStream()")
    assert page.evaluate("() => window.got") == ids  # each once, in order, across reconnections


def test_timeline_model_follows_the_as_of_rule(page: Any, loci: Loci) -> None:
    page.goto(f"{loci.base}/ui/")
    out = page.evaluate("""async () => {
        const m = await import('/ui/js/timeline_model.js');
        const f = (id, obj, from, to, extra = {}) => ({ memory_id: id, subject: 'ent:a', predicate: 'lives_in',
            object: obj, text: 'a ' + obj, timestamp: '2020-01-01T00:00:00Z', valid_from: from, valid_to: to,
            status: to ? 'superseded' : 'active', ...extra });
        const facts = [
            f('m1', 'Paris', '2023-01-01T00:00:00Z', '2025-01-01T00:00:00Z'),
            f('m2', 'Berlin', '2025-01-01T00:00:00Z', null),
            f('m3', 'Rome', '2024-01-01T00:00:00Z', null, { archived: true }),
            f('m4', 'Oslo', null, null, { keys: ['ent:a|visits'], timestamp: '2024-06-01T00:00:00Z' }),
            f('m5', 'Bonn', null, null, { keys: ['ent:a|visits'], timestamp: '2024-06-01T00:00:00Z',
                                          status: 'disputed' }),
        ];
        const model = m.buildTimelines(facts, Date.parse('2026-01-01T00:00:00Z'));
        const at = (iso) => Object.fromEntries(m.trueAt(model.rows, Date.parse(iso))
            .map((r) => [r.key, r.segments.map((s) => s.value)]));
        return { keys: model.rows.map((r) => r.key), before: at('2022-06-01T00:00:00Z'),
                 mid: at('2024-07-01T00:00:00Z'), edge: at('2025-01-01T00:00:00Z'),
                 covers: model.min < Date.parse('2023-01-01T00:00:00Z') && model.max > Date.parse('2026-01-01T00:00:00Z') };
    }""")
    assert out["keys"] == ["ent:a|lives_in", "ent:a|visits"]
    assert out["before"] == {"ent:a|lives_in": [], "ent:a|visits": []}
    assert out["mid"] == {"ent:a|lives_in": ["Paris"], "ent:a|visits": ["Oslo", "Bonn"]}  # archived never
    assert out["edge"]["ent:a|lives_in"] == ["Berlin"]  # valid_to is exclusive, valid_from inclusive
    assert out["covers"]


def test_timeline_key_steps_are_whole_units(page: Any, loci: Loci) -> None:
    """Arrows move by the largest of a minute, an hour, a day within a hundredth of the span; Shift by the
    unit below; Page Up/Down by a tenth of the span in whole arrow steps."""
    page.goto(f"{loci.base}/ui/")
    minute, hour, day = 60_000, 3_600_000, 86_400_000
    out = page.evaluate(
        """async (spans) => {
        const { keySteps } = await import('/ui/js/timeline_model.js');
        return spans.map(keySteps);
    }""",
        [4 * 365 * day, 7 * day, 2 * hour],
    )
    assert out == [
        {"arrow": day, "fine": hour, "page": round(4 * 365 / 10) * day},
        {"arrow": hour, "fine": minute, "page": round(7 * 24 / 10) * hour},
        {"arrow": minute, "fine": 1000, "page": round(2 * 60 / 10) * minute},
    ]


def test_assemble_body_leaves_empty_counts_to_the_api(page: Any, loci: Loci) -> None:
    """An empty Max facts/Max events box is the API's default (left out), not 0 (which asked for no facts)."""
    page.goto(f"{loci.base}/ui/")
    out = page.evaluate("""async () => {
        const { assembleBody } = await import('/ui/js/views/assemble.js');
        const form = { entity: 'ent:a', turn: 't', budget: '1200', preset: 'balanced', weights: {} };
        return [assembleBody({ ...form, max_facts: '', max_events: ' ' }).return,
                assembleBody({ ...form, max_facts: '0', max_events: '7' }).return];
    }""")
    flags = {"include_scores": True, "include_raw_matches": True, "trace": True}
    assert out == [flags, {**flags, "max_facts": 0, "max_events": 7}]


def test_graph_edges_keep_their_direction(page: Any, loci: Loci) -> None:
    """One line per direction and kind: "carol manages dave" and "dave mentors carol" are two arrows, each
    with its own label (they were one arrow dave -> carol labelled "mentors, manages"), and a mention
    beside a fact is a line of its own; a pair's lines take lanes centred on 0."""
    page.goto(f"{loci.base}/ui/")
    out = page.evaluate("""async () => {
        const { mergeEdges } = await import('/ui/js/graph_layout.js');
        const e = (source, target, kind, predicate, memory_id) => ({ source, target, kind, predicate, memory_id });
        return mergeEdges([
            e('ent:dave', 'ent:carol', 'fact', 'mentors', 'm1'), e('ent:carol', 'ent:dave', 'fact', 'manages', 'm2'),
            e('ent:carol', 'ent:dave', 'fact', 'hired', 'm3'), e('ent:dave', 'ent:carol', 'mention', null, 'm4'),
            e('ent:carol', 'ent:erin', 'fact', 'knows', 'm5'),
        ]);
    }""")
    assert out == [
        {"source": "ent:dave", "target": "ent:carol", "kind": "fact", "labels": ["mentors"], "memoryIds": ["m1"], "lane": -1},
        {"source": "ent:carol", "target": "ent:dave", "kind": "fact", "labels": ["manages", "hired"],
         "memoryIds": ["m2", "m3"], "lane": 0},
        {"source": "ent:dave", "target": "ent:carol", "kind": "mention", "labels": [], "memoryIds": ["m4"], "lane": 1},
        {"source": "ent:carol", "target": "ent:erin", "kind": "fact", "labels": ["knows"], "memoryIds": ["m5"], "lane": 0},
    ]  # fmt: skip
