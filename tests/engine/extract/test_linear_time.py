"""Every regular expression that request text reaches runs in time linear in that text.

Each pattern (found by walking the modules that see request text, so a new pattern is covered without
being listed) is run on adversarial texts at 1,000 and at 20,000 characters: long runs of digits,
letters, spaces of every kind, punctuation, mixed scripts, and texts pumped from the pattern's own
matches (Hypothesis `from_regex`, a piece repeated, a tail that breaks the match). The check is a ratio
measured in the same run, in CPU time of the test's thread: time per character at 20,000 over time per
character at 1,000. Linear work
gives about 1, quadratic work about 20; the bound is 4. The step from 1,000 to 4,000 characters is
measured first, and one whose time per character more than doubles stops there, so a regression fails
in seconds instead of running for minutes; a ratio over a bound is measured again, both ends, before it
fails (the machine is shared). The whole extractor and every redaction rule get the same treatment.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.extract.rules import RuleExtractor
from engine.redact.registry import RULE_ORDER, create_rule

TINY, SMALL, MIDDLE, LARGE = 250, 1_000, 4_000, 20_000
MAX_TINY_STEP = 8.0  # time per character, SMALL over TINY (cubic 16)
MAX_RATIO = 4.0  # time per character, LARGE over SMALL (linear about 1, quadratic 20)
MAX_STEP = 2.5  # time per character, MIDDLE over SMALL (linear about 1, quadratic 4)
#: packages and modules whose patterns see request text (bodies, queries, headers, error messages)
REACHED = (
    "engine.extract",
    "engine.redact",
    "engine.retrieval",
    "engine.write",
    "engine.storage.local_index",
    "engine.embed.hash",
    "server.gateway",
    "server.errors",
    "server.http",
    "server.event_stream",
)

UNITS = [
    "1",
    "a",
    "A",
    " ",
    "\u2003",
    "\r",
    ".",
    ",",
    "-",
    "'",
    "@",
    ":",
    "1,",
    "1.",
    "a ",
    "Aa ",
    "a.",
    "A-",
    "a1",
    "é",
    "中",
    "🙂",
    " \u2003",
    "a, ",
    "a and ",
    ", I ",
    " now",
    "1 2-3 ",
    "\u0661",
]


def _modules() -> Iterator[Any]:
    for name in REACHED:
        module = importlib.import_module(name)
        yield module
        if hasattr(module, "__path__"):
            for info in pkgutil.walk_packages(module.__path__, prefix=f"{name}."):
                if not info.name.endswith(("minilm", "bert_fast", "openai")):
                    yield importlib.import_module(info.name)


def _patterns_in(value: Any) -> Iterator[re.Pattern[str]]:
    if isinstance(value, re.Pattern) and isinstance(value.pattern, str):
        yield value
    elif isinstance(value, tuple | list):
        for item in value:
            yield from _patterns_in(item)


def all_patterns() -> dict[str, re.Pattern[str]]:
    found: dict[str, re.Pattern[str]] = {}
    for module in _modules():
        for attr, value in vars(module).items():
            for i, pattern in enumerate(_patterns_in(value)):
                found.setdefault(f"{module.__name__}.{attr}[{i}]", pattern)
    return found


PATTERNS = all_patterns()


def per_char(run: Callable[[str], Any], text: str) -> float:
    """CPU seconds of this thread per character of `run(text)` (other processes' load does not count):
    the better of 2 timed blocks of at least ~0.5 ms each."""
    reps = 1
    while True:
        start = time.thread_time()
        for _ in range(reps):
            run(text)
        spent = time.thread_time() - start
        if spent > 0.0005 or reps >= 256:
            break
        reps *= 4
    best = spent / reps
    for _ in range(1):
        start = time.thread_time()
        for _ in range(reps):
            run(text)
        best = min(best, (time.thread_time() - start) / reps)
    return best / max(len(text), 1)


def _ratio(
    run: Callable[[str], Any], make: Callable[[int], str], small: int, large: int, bound: float
) -> float:
    """Time per character at `large` over that at `small`, both measured afresh up to 3 times while the
    ratio exceeds `bound` (a busy machine inflates one measurement, rarely three)."""
    best = float("inf")
    for _ in range(3):
        best = min(best, per_char(run, make(large)) / max(per_char(run, make(small)), 1e-12))
        if best <= bound:
            break
    return best


def growth(run: Callable[[str], Any], make: Callable[[int], str]) -> float:
    """Time per character at LARGE over that at SMALL. Cheaper steps come first so that a regression
    stops early (reported as a ratio over MAX_RATIO) instead of running at LARGE for minutes: TINY to
    SMALL catches cubic work (16 times per character; a bounded repetition near TINY characters can
    show 4), SMALL to MIDDLE quadratic work (4 times)."""
    step = _ratio(run, make, TINY, SMALL, MAX_TINY_STEP)
    if step > MAX_TINY_STEP:
        return step * LARGE / SMALL
    step = _ratio(run, make, SMALL, MIDDLE, MAX_STEP)
    if step > MAX_STEP:
        return step * LARGE / MIDDLE
    return _ratio(run, make, SMALL, LARGE, MAX_RATIO)


def scan(pattern: re.Pattern[str]) -> Callable[[str], Any]:
    return lambda text: (pattern.match(text), sum(1 for _ in pattern.finditer(text)))


def repeat(unit: str, prefix: str = "", suffix: str = "") -> Callable[[int], str]:
    """About n characters: `unit` repeated whole, so every size ends the same way (a run cut inside a unit
    can end in a match at one size and force a full backtrack at another; `per_char` divides by the
    real length)."""
    return lambda n: prefix + unit * max(1, (n - len(prefix) - len(suffix)) // len(unit)) + suffix


def test_the_walk_finds_the_patterns_of_every_reached_package() -> None:
    names = " ".join(PATTERNS)
    for where in (
        "extract.rules.quantities",
        "extract.rules.clauses",
        "redact.rules.email",
        "server.gateway",
    ):
        assert where in names
    assert len(PATTERNS) > 150


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(PATTERNS))
def test_every_pattern_is_linear_on_runs(name: str) -> None:
    run = scan(PATTERNS[name])
    worst = max((growth(run, repeat(unit)), unit) for unit in UNITS)
    assert worst[0] <= MAX_RATIO, f"{name} grows {worst[0]:.1f}x per character on runs of {worst[1]!r}"


def _pumped(draw: st.DrawFn, pattern: re.Pattern[str]) -> tuple[str, str, str]:
    """A match of `pattern` cut in three: (head, piece to repeat, tail that may break the match)."""
    example = draw(st.from_regex(pattern).filter(lambda s: 2 <= len(s) <= 200))
    i = draw(st.integers(0, len(example) - 1))
    k = draw(st.integers(1, min(3, len(example) - i)))
    tail = draw(st.sampled_from(["", "!", "\x00", "1", " x", "\u2003"]))
    return example[:i], example[i : i + k], tail


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(PATTERNS))
@settings(
    max_examples=4,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large],
)
@given(data=st.data())
def test_every_pattern_is_linear_on_its_own_matches_pumped(name: str, data: st.DataObject) -> None:
    pattern = PATTERNS[name]
    head, piece, tail = data.draw(st.composite(lambda draw: _pumped(draw, pattern))())
    ratio = growth(scan(pattern), repeat(piece, head, tail))
    assert ratio <= MAX_RATIO, f"{name} grows {ratio:.1f}x per character on {head!r} + {piece!r}* + {tail!r}"


ADVERSARIAL_TEXTS = [
    repeat(u) for u in ("1", "a", " ", "\u2003", ".", ",", "-", "A-", "a.", "1 2-3 ", "中")
] + [
    repeat("\u2003", "I love "),
    repeat(" now", "I live in Berlin"),
    repeat("tea, ", "I like "),
    repeat("A-", "", "'s birthday is May 1"),
    repeat("0 ", "I am not ", " anymore"),
    repeat("1", "My number is "),
    repeat(" ", "I can not eat x", " I am allergic"),
    repeat("Ab ", "my sister "),
    repeat("1.", "I earn $"),
    repeat(" and I", "My name is Sam"),
    repeat(" and my a b c", "I live in Oslo"),
    repeat(" and Ab Cd", "I work at Acme"),
    repeat(" rock and roll and", "I like"),
    repeat(" x Max", "I met"),
    # the ends of a value: unpaired brackets, dashes, hashtags, quotes; markup around words
    repeat(")]", "I work at Google"),
    repeat(" -)", "I work at Google"),
    repeat("(", "I like ", "x"),
    repeat(" #tag", "I live in Berlin"),
    repeat('".', "I work at Google"),
    repeat("**a", "I work at "),
    repeat("<b>", "I work at "),
    repeat("[a](", "I work at "),
]


@pytest.mark.slow
@pytest.mark.parametrize("make", ADVERSARIAL_TEXTS, ids=[repr(m(12)) for m in ADVERSARIAL_TEXTS])
def test_the_extractor_is_linear(make: Callable[[int], str]) -> None:
    extractor = RuleExtractor(budget_ms=0)  # no budget: this measures the patterns, not the cut-off
    ratio = growth(lambda text: extractor.extract(text), make)
    assert ratio <= MAX_RATIO, f"extraction grows {ratio:.1f}x per character"


@pytest.mark.slow
@pytest.mark.parametrize("rule", RULE_ORDER)
def test_every_redaction_rule_is_linear(rule: str) -> None:
    detector = create_rule(rule)
    worst = max((growth(detector.detect, make), make(12)) for make in ADVERSARIAL_TEXTS)
    assert worst[0] <= MAX_RATIO, f"redaction rule {rule} grows {worst[0]:.1f}x per character on {worst[1]!r}"


def test_a_run_of_dashes_after_a_thing_one_cannot_eat_is_linear() -> None:
    """The case the pumped search found: the dash before "I am allergic" starts only at a run's first dash."""
    from engine.extract.rules.rewrite import _AROUND_ALLERGIC

    ratio = growth(scan(_AROUND_ALLERGIC), repeat("-", "I can not eat 0" + "\x85" * 13))
    assert ratio <= MAX_RATIO, f"grows {ratio:.1f}x per character"
