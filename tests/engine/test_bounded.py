"""`BoundedMap`: the entries written last, by count or by weight."""

from __future__ import annotations

from engine.bounded import BoundedMap


def test_it_keeps_the_last_entries_by_count() -> None:
    held: BoundedMap[str, int] = BoundedMap(2)
    for key, value in (("a", 1), ("b", 2), ("c", 3)):
        held.put(key, value)
    assert [held.get(k) for k in "abc"] == [None, 2, 3]


def test_with_weigh_the_weights_held_stay_within_the_size() -> None:
    held: BoundedMap[str, list[int]] = BoundedMap(5, weigh=len)
    held.put("a", [1, 1])
    held.put("b", [2, 2])
    held.put("a", [1])  # rewritten: weighs 1 now, and is the newest
    assert [held.get(k) for k in "ab"] == [[1], [2, 2]]
    held.put("c", [3, 3])  # 1 + 2 + 2 = 5: all fit
    assert held.get("b") == [2, 2]
    held.put("d", [4])  # 6: the oldest, b, goes
    assert [held.get(k) for k in "abcd"] == [[1], None, [3, 3], [4]]
    held.put("e", [5] * 6)  # heavier than the whole map: nothing else fits beside it, nor it
    assert [held.get(k) for k in "acde"] == [None, None, None, None]
