"""Quantities: "$800" -> (800, "USD"), "2,000 euros" -> (2000, "EUR"), "5 km" -> (5, "km"),
"1.5k" -> 1500, number words up to twenty and tens."""

from __future__ import annotations

import re

_WORDS: dict[str, int] = {
    "zero": 0, "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
    "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13,
    "fourteen": 14, "fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19,
    "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80,
    "ninety": 90, "hundred": 100,
}  # fmt: skip
NUMBER_WORDS = (
    r"(?:" + "|".join(sorted((w for w in _WORDS if w not in ("a", "an")), key=len, reverse=True)) + r")"
)
_TENS = ("twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety")
_UNITS_1_9 = ("one", "two", "three", "four", "five", "six", "seven", "eight", "nine")
#: a number in words read whole: "forty-two" and "thirty one" are never "forty" and "thirty"
NUMBER_PHRASE = rf"(?:(?:{'|'.join(_TENS)})[- ](?:{'|'.join(_UNITS_1_9)})(?![\w-])|{NUMBER_WORDS}(?![\w-]| (?:{'|'.join(_UNITS_1_9)})\b))"

_CURRENCY_SYMBOLS = {"$": "USD", "€": "EUR", "£": "GBP", "¥": "JPY", "₹": "INR"}
_CURRENCY_WORDS = {
    "dollars": "USD", "dollar": "USD", "bucks": "USD", "usd": "USD", "euros": "EUR", "euro": "EUR",
    "eur": "EUR", "pounds": "GBP", "pound": "GBP", "gbp": "GBP", "yen": "JPY", "rupees": "INR",
    "francs": "CHF", "chf": "CHF", "cad": "CAD", "aud": "AUD",
}  # fmt: skip
_UNITS = {
    "km": "km", "kilometers": "km", "kilometres": "km", "miles": "mi", "mile": "mi", "mi": "mi",
    "kg": "kg", "kilos": "kg", "kilograms": "kg", "lbs": "lb", "lb": "lb", "pounds": "lb",
    "cm": "cm", "centimeters": "cm", "m": "m", "meters": "m", "metres": "m", "feet": "ft", "ft": "ft",
    "hours": "h", "hour": "h", "minutes": "min", "steps": "steps", "years": "years", "year": "years",
}  # fmt: skip

# A number starts where a run of digits starts and has at most 7 thousands groups, so a search is
# linear in the text: a run of digits is tried once, not from each of its digits.
_NUM = r"(?<!\d)(?P<num>\d{1,3}(?:,\d{3}){1,7}(?:\.\d+)?|\d+(?:\.\d+)?)(?P<k>\s?[kK]\b)?"
_MONEY_SYMBOL = re.compile(r"(?P<sym>[$€£¥₹])\s?" + _NUM)
_MONEY_WORD = re.compile(
    _NUM + r"\s*(?P<cur>" + "|".join(sorted(_CURRENCY_WORDS, key=len, reverse=True)) + r")\b",
    re.IGNORECASE,
)
_MEASURE = re.compile(
    _NUM + r"\s*(?P<unit>" + "|".join(sorted(_UNITS, key=len, reverse=True)) + r")\b", re.IGNORECASE
)
_BARE = re.compile(_NUM)


class Quantity:
    __slots__ = ("value", "unit", "text")

    def __init__(self, value: int | float, unit: str | None, text: str) -> None:
        self.value = value
        self.unit = unit
        self.text = text

    def __repr__(self) -> str:
        return f"Quantity({self.value!r}, {self.unit!r})"


def word_number(word: str) -> int | None:
    w = word.strip().lower()
    if w.isdigit():
        return int(w)
    tens, _, unit = re.sub(r"[\s-]+", " ", w).partition(" ")
    if unit:  # "forty-two", "thirty one"
        return _WORDS[tens] + _WORDS[unit] if tens in _TENS and unit in _UNITS_1_9 else None
    return _WORDS.get(w)


def _number(num: str, k: str | None) -> int | float:
    value = float(num.replace(",", ""))
    if k:
        value *= 1000
    return int(value) if value.is_integer() else value


def parse_money(text: str) -> Quantity | None:
    m = _MONEY_SYMBOL.search(text)
    if m:
        unit = _CURRENCY_SYMBOLS[m.group("sym")]
        return Quantity(_number(m.group("num"), m.group("k")), unit, m.group(0))
    m = _MONEY_WORD.search(text)
    if m:
        unit = _CURRENCY_WORDS[m.group("cur").lower()]
        return Quantity(_number(m.group("num"), m.group("k")), unit, m.group(0))
    return None


def parse_measure(text: str) -> Quantity | None:
    m = _MEASURE.search(text)
    if m:
        return Quantity(_number(m.group("num"), m.group("k")), _UNITS[m.group("unit").lower()], m.group(0))
    return None


def parse_quantity(text: str) -> Quantity | None:
    """Money first, then a measure with a unit, then a bare number (unit None)."""
    found = parse_money(text) or parse_measure(text)
    if found:
        return found
    m = _BARE.search(text)
    if m:
        return Quantity(_number(m.group("num"), m.group("k")), None, m.group(0))
    return None


def format_quantity(value: int | float, unit: str | None) -> str:
    symbols = {v: k for k, v in _CURRENCY_SYMBOLS.items()}
    shown = f"{value:,}" if isinstance(value, int) else f"{value:,.2f}".rstrip("0").rstrip(".")
    if unit in symbols:
        return f"{symbols[unit]}{shown}"
    if unit and unit not in ("years",):
        return f"{shown} {unit}"
    return shown
