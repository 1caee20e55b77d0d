"""Rule names -> detector instances. Unknown names raise `engine.errors.UnknownName`.

`RULE_ORDER` is also the tie-break when two rules claim spans of the same length at one place
(e.g. a `secret` assignment whose value is also a valid `card` number): earlier wins.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from engine.errors import UnknownName
from engine.redact.base import Rule
from engine.redact.rules.card import CardRule
from engine.redact.rules.email import EmailRule
from engine.redact.rules.iban import IbanRule
from engine.redact.rules.ip import Ipv4Rule, Ipv6Rule
from engine.redact.rules.phone import DEFAULT_REGIONS, PhoneRule
from engine.redact.rules.secret import SecretRule
from engine.redact.rules.us_ssn import UsSsnRule

RULE_ORDER: tuple[str, ...] = ("secret", "email", "iban", "card", "us_ssn", "ipv6", "ipv4", "phone")

_FACTORIES: dict[str, Callable[[Sequence[str]], Rule]] = {
    "secret": lambda _regions: SecretRule(),
    "email": lambda _regions: EmailRule(),
    "iban": lambda _regions: IbanRule(),
    "card": lambda _regions: CardRule(),
    "us_ssn": lambda _regions: UsSsnRule(),
    "ipv6": lambda _regions: Ipv6Rule(),
    "ipv4": lambda _regions: Ipv4Rule(),
    "phone": lambda regions: PhoneRule(regions),
}

# The stem of the whole-value placeholder used for sensitivity="pii" values no rule detected.
PII_RULE = "pii"
PII_LABEL = "PII"


def rule_names() -> tuple[str, ...]:
    return RULE_ORDER


def create_rule(name: str, *, phone_regions: Sequence[str] = DEFAULT_REGIONS) -> Rule:
    factory = _FACTORIES.get(name)
    if factory is None:
        raise UnknownName("redaction rule", name, _FACTORIES)
    return factory(phone_regions)


def create_rules(
    names: Sequence[str] | None = None, *, phone_regions: Sequence[str] = DEFAULT_REGIONS
) -> list[Rule]:
    """The named rules (all of them when `names` is None), in `RULE_ORDER`."""
    wanted = RULE_ORDER if names is None else tuple(names)
    rules = {name: create_rule(name, phone_regions=phone_regions) for name in wanted}
    return [rules[name] for name in RULE_ORDER if name in rules]
