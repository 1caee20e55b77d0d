"""`loci.integrations.texts.fit`: user text cut to an API limit between two characters as a reader sees
them, never inside one."""

from __future__ import annotations

import pytest

from loci.integrations.texts import fit

FAMILY = "\U0001f468\u200d\U0001f469\u200d\U0001f467"  # three emoji joined by zero-width joiners
FLAGS = "\U0001f1f5\U0001f1f9\U0001f1eb\U0001f1f7"  # two flags, two regional indicators each


@pytest.mark.parametrize(
    ("text", "limit", "cut"),
    [
        ("short", 10, "short"),
        ("exactly", 7, "exactly"),
        ("abcdef", 3, "abc"),
        ("ab" + FAMILY, 4, "ab"),  # not inside a joined sequence
        ("ab" + FAMILY + "c", 7, "ab" + FAMILY),
        ("e\u0301e\u0301", 3, "e\u0301"),  # not before a combining accent
        ("x\U0001f44d\U0001f3fd", 2, "x"),  # not before a skin-tone modifier
        ("x\u2764\ufe0f", 2, "x"),  # not before a variation selector
        ("x" + FLAGS, 4, "x" + FLAGS[:2]),  # not inside a flag
        ("x" + FLAGS, 3, "x" + FLAGS[:2]),
        ("x\ud83d\ude00", 2, "x"),  # not between the halves of a surrogate pair
        ("\u0301" * 5, 3, "\u0301" * 3),  # one cluster longer than the limit: cut anyway
    ],
)
def test_fit_cuts_between_characters(text: str, limit: int, cut: str) -> None:
    assert fit(text, limit) == cut
    assert len(fit(text, limit)) <= limit
