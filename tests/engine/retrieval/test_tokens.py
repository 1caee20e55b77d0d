from hypothesis import given
from hypothesis import strategies as st

from engine.retrieval import tokens


def test_estimate_hand_computed() -> None:
    assert tokens.estimate("") == 0
    assert tokens.estimate("abc") == 1
    assert tokens.estimate("abcd") == 2  # ceil(4 / 3)
    assert tokens.estimate("héllo") == 2 + 1  # 4 ascii -> ceil(4/3) = 2, plus one non-ascii
    assert tokens.estimate("東京") == 2
    assert tokens.line_tokens("abc") == 1 + tokens.LINE_OVERHEAD
    assert tokens.line_tokens("") == 0


def test_truncate_fits_and_keeps_prefix() -> None:
    text = "alpha beta gamma delta epsilon zeta eta theta"
    out = tokens.truncate(text, 6)
    assert tokens.estimate(out) <= 6
    assert out.endswith(tokens.ELLIPSIS)
    assert text.startswith(out[:-1].rstrip())
    assert tokens.truncate(text, 100) == text
    assert tokens.truncate(text, 1) == ""


@given(st.text(max_size=300), st.integers(min_value=0, max_value=120))
def test_truncate_never_exceeds(text: str, limit: int) -> None:
    assert tokens.estimate(tokens.truncate(text, limit)) <= limit


@given(st.text(max_size=200), st.text(max_size=200))
def test_estimate_is_monotone_in_appending(a: str, b: str) -> None:
    assert tokens.estimate(a + b) >= tokens.estimate(a)
