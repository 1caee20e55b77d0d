"""The NUL-safe string code for PostgreSQL columns (pure; no database needed)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from engine.storage.postgres.pgtext import dec, enc

# Small alphabets make NUL/U+0001 collisions likely.
texts = st.text(alphabet=st.sampled_from(["\x00", "\x01", "\x02", "a", "é", "\U0001f600"]), max_size=8)


def test_examples() -> None:
    assert enc("plain id") == "plain id"
    assert enc("a\x00b") == "a\x01\x01b"
    assert enc("\x01") == "\x01\x02"
    assert dec("a\x01\x01b\x01\x02") == "a\x00b\x01"


@given(texts)
def test_round_trip_and_no_nul(s: str) -> None:
    assert "\x00" not in enc(s)
    assert dec(enc(s)) == s


@given(texts, texts)
def test_keeps_equality_and_code_point_order(a: str, b: str) -> None:
    assert (enc(a) == enc(b)) == (a == b)
    assert (enc(a) < enc(b)) == (a < b)
