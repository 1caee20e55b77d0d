import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.errors import UnknownName
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


# --- exact BPE counts -------------------------------------------------------------------------------
FIXTURE = Path(__file__).parent / "data" / "tiktoken_counts.json"
BPE = ("o200k_base", "cl100k_base")


def _reference() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(FIXTURE.read_text())
    return data


def test_bpe_counts_equal_tiktoken_on_locomo_turns() -> None:
    """Counts recorded with tiktoken itself (OpenAI's rank files, hash-checked) on 300 LoCoMo turns."""
    from evals.loaders import load_dataset

    ref = _reference()["locomo_turns"]
    dataset = load_dataset("locomo")
    texts = {
        f"{c.conversation_id}/{t.turn_id}": f"{t.speaker}: {t.text}"
        for c in dataset.conversations
        for t in c.turns
    }
    for i, name in enumerate(BPE):
        tok = tokens.get_tokenizer(name)
        assert {k: tok.count(texts[k]) for k in ref} == {k: v[i] for k, v in ref.items()}


def test_bpe_counts_equal_tiktoken_on_edge_cases() -> None:
    for text, o200k, cl100k in _reference()["strings"]:
        assert tokens.get_tokenizer("o200k_base").count(text) == o200k, text
        assert tokens.get_tokenizer("cl100k_base").count(text) == cl100k, text


def test_the_two_encodings_differ_and_undercut_the_estimate() -> None:
    text = "Caroline: I went to a LGBTQ support group yesterday and it was so powerful."
    o200k, cl100k = (tokens.get_tokenizer(n).count(text) for n in BPE)
    assert o200k == 17 and cl100k == 17  # tiktoken's counts
    assert tokens.estimate(text) == 25 == tokens.get_tokenizer("estimate").count(text)  # ceil(75 / 3)
    assert [tokens.get_tokenizer(n).count("東京タワーに行きました。") for n in BPE] == [9, 12]


def test_unknown_tokenizer_is_a_named_error() -> None:
    with pytest.raises(UnknownName) as err:
        tokens.get_tokenizer("gpt2")
    assert err.value.field == "budget.tokenizer"


@settings(max_examples=60)
@given(st.text(max_size=400), st.integers(min_value=0, max_value=60), st.sampled_from(BPE))
def test_bpe_truncate_never_exceeds_and_keeps_a_prefix(text: str, limit: int, name: str) -> None:
    tok = tokens.get_tokenizer(name)
    out = tok.truncate(text, limit)
    assert tok.count(out) <= limit
    if out and out != text:
        assert out.endswith(tokens.ELLIPSIS) and text.startswith(out[:-1].rstrip())


@settings(max_examples=80)
@given(st.lists(st.text(min_size=1, max_size=80), min_size=1, max_size=8), st.sampled_from(BPE))
def test_lines_counted_separately_never_undercount_the_joined_text(lines: list[str], name: str) -> None:
    tok = tokens.get_tokenizer(name)
    assert tok.count("\n".join(lines)) <= sum(tok.line_tokens(line) for line in lines)


#: words, numbers, punctuation, a pipe, marks, other scripts and whitespace of every kind the
#: pre-tokenizers treat apart
_PIECE_TEXT = st.text(
    alphabet=st.sampled_from(list("abXY 09.,:'\"/|()-…é\u0308ß日한👍\t\n\r\x0b\x85\xa0\u2028\u3000\x1c")),
    max_size=40,
)


@settings(max_examples=300)
@given(st.lists(_PIECE_TEXT, min_size=1, max_size=8), st.sampled_from(BPE), st.booleans())
def test_count_pieces_equals_the_joined_count(pieces: list[str], name: str, long: bool) -> None:
    """Pieces counted apart where they meet at a space after a non-space, the joined text elsewhere:
    the count is the joined text's either way, and so is the text's count asked again afterwards."""
    tok = tokens.get_tokenizer(name)
    assert isinstance(tok, tokens.BpeTokenizer)
    if long:
        pieces = ["w" * (tokens.CACHED_MAX_CHARS + 1), *pieces]
    text = "".join(pieces)
    assert tok.count_pieces(pieces) == tok._count(text)
    assert tok.count(text) == tok._count(text)


@settings(max_examples=300)
@given(st.lists(_PIECE_TEXT, min_size=1, max_size=8), st.sampled_from(BPE))
def test_count_pieces_counts_apart_where_they_meet_at_a_cut(pieces: list[str], name: str) -> None:
    """The same with every piece after the first starting with a space after a non-space: the case the
    summary's entries take, summed from their cached counts."""
    head = "w" * (tokens.CACHED_MAX_CHARS + 1)
    pieces = [head + pieces[0].rstrip() + "x", *(" " + p.rstrip() + "x" for p in pieces[1:])]
    assert tokens._meet_at_a_cut(pieces)
    tok = tokens.get_tokenizer(name)
    assert isinstance(tok, tokens.BpeTokenizer)
    assert tok.count_pieces(pieces) == tok._count("".join(pieces))


def test_count_pieces_of_a_summary_is_remembered_and_exact() -> None:
    """A summary's text (day lines of entries joined by " | ") counted by its pieces: the sum of their
    counts, the joined text's exact count, remembered for the next count of the same text."""
    tok = tokens.get_tokenizer("o200k_base")
    assert isinstance(tok, tokens.BpeTokenizer)
    entries = [f"Caroline: entry {i} about the pottery class, the lake and the 3 dogs." for i in range(60)]
    text = (
        "2023-05-08 (Monday): "
        + " | ".join(entries[:40])
        + "\n2023-05-01 (Monday): "
        + " | ".join(entries[40:])
    )
    first, *rest = text.split(" | ")
    pieces = [first, *(p for part in rest for p in (" |", f" {part}"))]
    assert "".join(pieces) == text and len(text) > tokens.CACHED_MAX_CHARS
    assert tok.count_pieces(pieces) == sum(tok.count(p) for p in pieces) == tok._count(text)
    assert tok._long.get(text) == tok._count(text)


def test_count_pieces_falls_back_where_pieces_meet_elsewhere() -> None:
    """Pieces that meet inside a word, before a newline or after a space are not counted apart."""
    assert not tokens._meet_at_a_cut(["2023", "-05"])
    assert not tokens._meet_at_a_cut(["end.", "\nnext"])
    assert not tokens._meet_at_a_cut(["a ", " b"])
    assert not tokens._meet_at_a_cut(["", " b"])
    assert tokens._meet_at_a_cut(["alone"])
    assert tokens._meet_at_a_cut(["a", " |", " b"])
    tok = tokens.get_tokenizer("cl100k_base")
    assert isinstance(tok, tokens.BpeTokenizer)
    word = "y" * (tokens.CACHED_MAX_CHARS + 5)
    assert tok.count_pieces([word, "yy"]) == tok._count(word + "yy") < tok.count(word) + tok.count("yy")
    assert tokens.ESTIMATE.count_pieces(["abcd", " ef"]) == tokens.estimate("abcd ef")
