"""The eval gate: a small replay must stay above the floors in evals/floors.json."""

from __future__ import annotations

import pytest

from evals.gate import GATE_STORES, Floors, check, comparison, load_floors, measure


def test_check_reports_floors_and_ceilings() -> None:
    floors = Floors(floors={"a": 0.5, "b": 0.2}, ceilings={"overflow": 0})
    assert check({"a": 0.5, "b": 0.3, "overflow": 0}, floors) == []
    failures = check({"a": 0.49, "overflow": 1}, floors)
    assert failures == [
        "a = 0.49 is below its floor 0.5",
        "b = None is below its floor 0.2",
        "overflow = 1 is above its ceiling 0",
    ]
    assert check({"a": float("nan"), "b": 1, "overflow": 0}, floors) == ["a = nan is below its floor 0.5"]


def test_floors_file_is_consistent() -> None:
    floors = load_floors()
    assert floors.floors and floors.ceilings["locomo.overflow_count"] == 0
    assert floors.ceilings["synthetic.overflow_count"] == 0
    # the recorded measurement passes its own floors, with a margin
    assert check(floors.measured, floors) == []
    for name, floor in floors.floors.items():
        assert floors.measured[name] >= floor


@pytest.mark.eval
@pytest.mark.slow
@pytest.mark.parametrize(
    "backend", ["sqlite", pytest.param("postgres", marks=pytest.mark.integration)], ids=str
)
def test_eval_gate(backend: str) -> None:
    """The same floors on every backend: they rank alike."""
    floors = load_floors()
    measured = measure(floors.spec, GATE_STORES[backend])
    failures = check(measured, floors)
    assert not failures, "eval gate failed:\n" + "\n".join(failures) + "\n\n" + comparison(measured, floors)
