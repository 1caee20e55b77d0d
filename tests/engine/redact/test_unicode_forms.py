"""Values written with non-ASCII look-alikes (Unicode spaces, zero-width characters, full-width and
other-script digits, internationalized e-mail addresses) and national phone numbers after a telephone
word: redacted like their ASCII spellings, the rest of the text kept character for character."""

from __future__ import annotations

import pytest

from engine.redact import Redactor
from engine.redact.fold import fold

NBSP, NNBSP, THIN, ZWSP, LRM = "\u00a0", "\u202f", "\u2009", "\u200b", "\u200e"


@pytest.mark.parametrize(
    ("text", "expected", "original"),
    [
        (f"card 4111{NBSP}1111{NBSP}1111{NBSP}1111", "card [CARD_1]", f"4111{NBSP}1111{NBSP}1111{NBSP}1111"),
        (
            f"card 4111{NNBSP}1111{NNBSP}1111{NNBSP}1111.",
            "card [CARD_1].",
            f"4111{NNBSP}1111{NNBSP}1111{NNBSP}1111",
        ),
        ("card ４１１１１１１１１１１１１１１１ ok", "card [CARD_1] ok", "４１１１１１１１１１１１１１１１"),
        (
            f"IBAN FR76{NBSP}3000{NBSP}6000{NBSP}0112{NBSP}3456{NBSP}7890{NBSP}189",
            "IBAN [IBAN_1]",
            f"FR76{NBSP}3000{NBSP}6000{NBSP}0112{NBSP}3456{NBSP}7890{NBSP}189",
        ),
        (
            f"tel +33{NBSP}6{NBSP}12{NBSP}34{NBSP}56{NBSP}78",
            "tel [PHONE_1]",
            f"+33{NBSP}6{NBSP}12{NBSP}34{NBSP}56{NBSP}78",
        ),
        (f"tel +44{THIN}20{THIN}7946{THIN}0958", "tel [PHONE_1]", f"+44{THIN}20{THIN}7946{THIN}0958"),
        (
            "тел. +7 912 345\u201167\u201189",
            "тел. [PHONE_1]",
            "+7 912 345\u201167\u201189",
        ),  # non-breaking hyphens
        (f"ssn 123-45-{ZWSP}6789", "ssn [SSN_1]", f"123-45-{ZWSP}6789"),
        ("ssn １２３－４５－６７８９", "ssn [SSN_1]", "１２３－４５－６７８９"),
        ("IP ２００１:db8::1", "IP [IP_1]", "２００１:db8::1"),
        ("IP ١٩٢.١٦٨.١.٢٠ here", "IP [IP_1] here", "١٩٢.١٦٨.١.٢٠"),  # Arabic-Indic digits
        ("mail josé@example.com", "mail [EMAIL_1]", "josé@example.com"),
        ("mail jose\u0301@example.com", "mail [EMAIL_1]", "jose\u0301@example.com"),  # decomposed é
        ("mail jürgen@müller.de!", "mail [EMAIL_1]!", "jürgen@müller.de"),
        ("mail 山田@例え.jp", "mail [EMAIL_1]", "山田@例え.jp"),
        ("почта: иван@пример.рф.", "почта: [EMAIL_1].", "иван@пример.рф"),
        ("mail user@xn--e1afmkfd.xn--p1ai", "mail [EMAIL_1]", "user@xn--e1afmkfd.xn--p1ai"),
        (
            "Contact ａｌｉｃｅ＠ｅｘａｍｐｌｅ．ｃｏｍ please",
            "Contact [EMAIL_1] please",
            "ａｌｉｃｅ＠ｅｘａｍｐｌｅ．ｃｏｍ",
        ),
        ("連絡先はalice@example.comです", "連絡先は[EMAIL_1]です", "alice@example.com"),
    ],
)
def test_non_ascii_spelling_is_redacted_in_place(text: str, expected: str, original: str) -> None:
    r = Redactor()
    assert r.redact_text(text) == expected
    assert list(r.placeholders.values()) == [original]  # the value as written, from the original text


def test_a_value_shares_its_placeholder_with_its_ascii_spelling() -> None:
    r = Redactor()
    out = r.redact_text(
        f"4111 1111 1111 1111 / 4111{NBSP}1111{NBSP}1111{NBSP}1111 / ４１１１１１１１１１１１１１１１; "
        "JOSÉ@EXAMPLE.COM = josé@example.com = jose\u0301@example.com"
    )
    assert out == "[CARD_1] / [CARD_1] / [CARD_1]; [EMAIL_1] = [EMAIL_1] = [EMAIL_1]"


def test_dropped_invisible_characters_keep_every_offset_around_them() -> None:
    # The zero-width characters outside the number stay where they were; the one inside goes with it.
    text = f"{LRM}ssn{ZWSP} 123-45-{ZWSP}6789{ZWSP}, card{ZWSP}: 4111{ZWSP}1111{ZWSP}1111{ZWSP}1111 {LRM}end"
    r = Redactor()
    assert r.redact_text(text) == f"{LRM}ssn{ZWSP} [SSN_1]{ZWSP}, card{ZWSP}: [CARD_1] {LRM}end"
    assert [(d.rule, d.start, d.end) for d in r.detect(text)] == [("us_ssn", 6, 18), ("card", 28, 47)]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("tel 06 12 34 56 78", "tel [PHONE_1]"),
        ("call me on 020 7946 0958 tomorrow", "call me on [PHONE_1] tomorrow"),
        ("Handy: 0151 23456789", "Handy: [PHONE_1]"),
        ("Telefon (privat): 030 1234567", "Telefon (privat): [PHONE_1]"),
        ("tél. 01 42 68 53 00", "tél. [PHONE_1]"),
        ("電話番号は090-1234-5678です", "電話番号は[PHONE_1]です"),
        ("電話番号は０９０－１２３４－５６７８です", "電話番号は[PHONE_1]です"),
    ],
)
def test_national_number_after_a_telephone_word(text: str, expected: str) -> None:
    assert Redactor().redact_text(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "06 12 34 56 78",  # a national number without a telephone word: could be anything
        "the code was 020 7946 0958",
        "phone bill: 0123456 yen",  # 7 digits: too short for a keyed national number
        "phone order 0123456789",  # an order number, even after "phone"
        "phone: INV-0123456789",
        "call at 10:30 on 2024-05-01, budget 1 250 000 EUR",
        "Telefonrechnung 2024 über 1.234.567,89 €",
        f"we called 3{NBSP}141{NBSP}592 people in 2024",
        f"price ４，５００円 and 1{NNBSP}000{NNBSP}000 €",
        "注文番号2125551234",  # digits glued to Japanese: an identifier, as glued to Latin letters
        "mail@ and @handle and a@b and 山田@例え",
        "retina アイコン@2x.png",
    ],
)
def test_look_alikes_stay(text: str) -> None:
    assert Redactor().detect(text) == []


def test_fast_path_texts_come_back_as_they_are() -> None:
    assert fold("plain ASCII text, nothing to fold: 12 34 56") is None
    assert fold("café au lait") is None  # non-ASCII, but nothing folds
    text = f"cost 1{NBSP}000{NBSP}€"
    assert Redactor().redact_text(text) is text
