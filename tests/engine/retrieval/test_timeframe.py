"""The time a question points to (engine.retrieval.timeframe): days before the reference's day."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from engine.retrieval.timeframe import days_back, window
from engine.timeutil import from_micros

TUESDAY = datetime(2023, 5, 30, 15, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("question", "back"),
    [
        ("What kitchen appliance did I buy 10 days ago?", (9, 11)),
        ("What did I mention four weeks ago?", (25, 31)),
        ("the trip a month ago", (20, 40)),
        ("Where was I two years ago?", (685, 775)),
        ("How many times did I bake in the past two weeks?", (0, 14)),
        ("jewelry I bought over the last 3 months", (0, 90)),
        ("Who came to the concert last Saturday?", (2, 4)),  # Tuesday -> Saturday, three days back
        ("What did I cook last Tuesday?", (6, 8)),  # the same weekday: a week back
        ("What did I do last week?", (3, 14)),
        ("the party last weekend", (3, 14)),
        ("the book I finished last month", (15, 60)),
        ("what I ate yesterday", (0, 2)),
    ],
)
def test_relative_phrases(question: str, back: tuple[int, int]) -> None:
    assert days_back(question, TUESDAY) == back


@pytest.mark.parametrize(
    "question",
    [
        "How many days ago did I meet Emma?",
        "What is my favourite colour?",
        "since March 3rd",
        "99999 days ago",
    ],
)
def test_no_relative_time(question: str) -> None:
    assert days_back(question, TUESDAY) is None and window(question, TUESDAY) is None


def test_the_window_covers_whole_utc_days() -> None:
    start, end = window("what did I buy 10 days ago", TUESDAY) or (0, 0)
    assert from_micros(start) == datetime(2023, 5, 19, tzinfo=UTC)
    assert from_micros(end) == datetime(2023, 5, 22, tzinfo=UTC)  # exclusive: the 21st is in
    # a reference given in another zone counts its UTC day
    other = TUESDAY.astimezone(ZoneInfo("Pacific/Kiritimati"))
    assert window("what I ate yesterday", other) == window("what I ate yesterday", TUESDAY)


def test_a_window_before_year_one_is_none() -> None:
    early = datetime(1, 1, 5, tzinfo=UTC)
    assert window("what happened 12 years ago", early) is None
    assert window("what happened 2 days ago", early + timedelta(days=1)) is not None
