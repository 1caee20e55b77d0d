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
