import math

import numpy as np
import pytest

from engine.errors import UnknownName
from engine.retrieval.normalize import NORMALIZERS, get_normalizer, normalize


def test_minmax_hand_computed() -> None:
    out = normalize("minmax", [1.0, 2.0, 3.0])
    assert out.tolist() == [0.0, (2 - 1) / (3 - 1), 1.0]


def test_minmax_constant_and_single_hit_are_one() -> None:
    assert normalize("minmax", [0.4, 0.4]).tolist() == [1.0, 1.0]
    assert normalize("minmax", [7.0]).tolist() == [1.0]


def test_zscore_hand_computed() -> None:
    # mean 2, population std sqrt(2/3)
    std = math.sqrt(((1 - 2) ** 2 + 0 + (3 - 2) ** 2) / 3)
    out = normalize("zscore", [1.0, 2.0, 3.0])
    assert out.tolist() == pytest.approx([-1 / std, 0.0, 1 / std])


def test_zscore_constant_is_zero() -> None:
    assert normalize("zscore", [5.0, 5.0, 5.0]).tolist() == [0.0, 0.0, 0.0]


def test_softmax_hand_computed() -> None:
    denom = math.exp(1) + math.exp(2) + math.exp(3)
    out = normalize("softmax", [1.0, 2.0, 3.0])
    assert out.tolist() == pytest.approx([math.exp(1) / denom, math.exp(2) / denom, math.exp(3) / denom])
    assert float(out.sum()) == pytest.approx(1.0)


def test_softmax_large_values_do_not_overflow() -> None:
    out = normalize("softmax", [1000.0, 1000.0])
    assert out.tolist() == [0.5, 0.5]


@pytest.mark.parametrize("name", sorted(NORMALIZERS))
def test_empty_input_and_no_mutation(name: str) -> None:
    fn = get_normalizer(name)
    assert fn(np.zeros(0)).size == 0
    x = np.array([3.0, 1.0, 2.0])
    before = x.copy()
    out = fn(x)
    assert np.array_equal(x, before)
    assert out is not x and out.shape == x.shape


def test_unknown_name_lists_valid_and_field() -> None:
    with pytest.raises(UnknownName) as info:
        get_normalizer("l2")
    assert "minmax" in info.value.message and info.value.field == "retrieval.normalization"
