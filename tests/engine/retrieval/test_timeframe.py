"""The time a question points to (engine.retrieval.timeframe): days before the reference's day."""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo

import pytest

from engine.retrieval.timeframe import days_back, named_days, window
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


@pytest.mark.parametrize(
    ("question", "first", "last"),
    [
        ("What did Jolene ask Deb on 13 March, 2023?", date(2023, 3, 12), date(2023, 3, 14)),
        ("What painting did Melanie show on October 13, 2023?", date(2023, 10, 12), date(2023, 10, 14)),
        ("What did I buy on 2023-05-02?", date(2023, 5, 1), date(2023, 5, 3)),
        ("What setback did Melanie face in October 2022?", date(2022, 10, 1), date(2022, 10, 31)),
        ("What did I do in December 2022?", date(2022, 12, 1), date(2022, 12, 31)),
        # no year: the latest such day up to the reference (a Tuesday, 30 May 2023)
        ("Who did I meet on March 3rd?", date(2023, 3, 2), date(2023, 3, 4)),
        ("What did I cook on June 3rd?", date(2022, 6, 2), date(2022, 6, 4)),
        ("the party on Feb 29", date(2020, 2, 28), date(2020, 3, 1)),
    ],
)
def test_a_calendar_date_the_question_names(question: str, first: date, last: date) -> None:
    assert days_back(question, TUESDAY) is None
    assert named_days(question, TUESDAY) == (first, last)
    start, end = window(question, TUESDAY) or (0, 0)
    assert (from_micros(start), from_micros(end)) == (
        datetime.combine(first, time(), tzinfo=UTC),
        datetime.combine(last + timedelta(days=1), time(), tzinfo=UTC),
    )


@pytest.mark.parametrize(
    "question",
    ["What changed since March 3rd?", "before 1 May 2023", "from June 2022 on", "after the 3rd of May"],
)
def test_a_date_that_bounds_a_span_points_to_no_time(question: str) -> None:
    assert named_days(question, TUESDAY) is None and window(question, TUESDAY) is None


def test_a_relative_phrase_comes_before_a_named_date() -> None:
    assert window("What did I buy 10 days ago, on May 2nd?", TUESDAY) == window(
        "what did I buy 10 days ago", TUESDAY
    )
