"""The checksums and validity rules behind the detectors, on hand-checked values."""

from __future__ import annotations

import pytest

from engine.errors import UnknownName
from engine.redact import RULE_ORDER, create_rule, create_rules
from engine.redact.rules.card import grouping_ok, luhn_ok
from engine.redact.rules.iban import iban_ok
from engine.redact.rules.phone import PhoneRule
from engine.redact.rules.secret import entropy_bits
from engine.redact.rules.us_ssn import ssn_ok


def test_luhn() -> None:
    assert luhn_ok("4111111111111111")
    assert luhn_ok("79927398713")  # the textbook example
    assert not luhn_ok("4111111111111112")
    assert not luhn_ok("79927398710")


def test_card_groupings() -> None:
    assert grouping_ok([4, 4, 4, 4])
    assert grouping_ok([4, 6, 5])
    assert grouping_ok([4, 4, 4, 4, 3])
    assert not grouping_ok([4, 4, 4, 4, 2])
    assert not grouping_ok([3, 3, 4])


def test_iban_mod97_and_length() -> None:
    assert iban_ok("DE89370400440532013000")
    assert iban_ok("GB82WEST12345698765432")
    assert not iban_ok("DE89370400440532013001")  # checksum
    assert not iban_ok("DE8937040044053201300")  # one short for DE (22)
    assert not iban_ok("ZZ89370400440532013000")  # unknown country


def test_ssn_never_issued() -> None:
    assert ssn_ok("123", "45", "6789")
    for area, group, serial in [
        ("000", "12", "3456"),
        ("666", "12", "3456"),
        ("900", "12", "3456"),
        ("999", "12", "3456"),
        ("123", "00", "4567"),
        ("123", "45", "0000"),
    ]:
        assert not ssn_ok(area, group, serial), (area, group, serial)


def test_entropy() -> None:
    assert entropy_bits("aaaa") == 0.0
    assert entropy_bits("abab") == 1.0
    assert entropy_bits("abcd") == 2.0


def test_phone_region_strategy() -> None:
    text = "office 020 7946 0958 or +44 20 7946 0958"  # no telephone word: national GB only for GB
    us = [d.value for d in create_rule("phone").detect(text)]
    assert us == ["+44 20 7946 0958"]  # international form is found from any region
    gb = PhoneRule(("US", "GB")).detect(text)
    assert [d.value for d in gb] == ["020 7946 0958", "+44 20 7946 0958"]
    assert gb[0].key == gb[1].key == "+442079460958"


def test_registry() -> None:
    assert [r.name for r in create_rules()] == list(RULE_ORDER)
    assert [r.name for r in create_rules(["phone", "email"])] == ["email", "phone"]
    with pytest.raises(UnknownName, match="valid: card, email"):
        create_rule("passport")
