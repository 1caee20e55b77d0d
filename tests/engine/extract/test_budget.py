"""The rule extractor's per-text time budget: past it, extraction stops between sentences and says so."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from engine.errors import InvalidInput
from engine.extract.rules import BUDGET_ENV, DEFAULT_BUDGET_MS, RuleExtractor, budget_from_env

TEXT = "I live in Berlin. I work at Acme. My sister Anna lives in Rome. I have a dog named Max."


def ticking(step_s: float) -> Iterator[float]:
    t = 0.0
    while True:
        yield t
        t += step_s


def test_past_the_budget_extraction_stops_between_sentences_and_says_so() -> None:
    clock = ticking(1.0)  # every reading of the clock is one second later
    result = RuleExtractor(budget_ms=1500, clock=lambda: next(clock)).extract(TEXT)
    assert result.truncated
    assert [f.predicate for f in result.facts] == ["lives_in"]  # the first sentence only


def test_within_the_budget_or_without_one_nothing_is_cut() -> None:
    full = RuleExtractor(budget_ms=0).extract(TEXT)
    assert not full.truncated and {f.predicate for f in full.facts} >= {"lives_in", "works_at", "has_pet"}
    assert not RuleExtractor(budget_ms=10_000).extract(TEXT).truncated


def test_the_budget_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(BUDGET_ENV, raising=False)
    assert budget_from_env() == DEFAULT_BUDGET_MS
    monkeypatch.setenv(BUDGET_ENV, "0")
    assert RuleExtractor().budget_ms == 0
    monkeypatch.setenv(BUDGET_ENV, "soon")
    with pytest.raises(InvalidInput, match=BUDGET_ENV):
        budget_from_env()
