"""PII redaction of what the service returns (never of what it stores).

    from engine.redact import Redactor, RedactionPolicy
    r = Redactor(RedactionPolicy(pii_redaction="auto", egress_rehydration="allowed"))
    line = r.redact_memory_text(memory, rendered_line)   # or r.redact_text(text, memory.sensitivity)
    report = r.report()                                   # RedactionReport(applied, rules, placeholders)

Rules (one module each under `engine/redact/rules/`): email, phone, card, iban, us_ssn, ipv4, ipv6,
secret. See `redactor.py` for the sensitivity semantics and placeholder stability.
"""

from engine.redact.apply import RedactedMemories, RedactedTexts, redact_memories, redact_texts
from engine.redact.base import Detection, Rule
from engine.redact.policy import EgressRehydration, PiiRedaction, RedactionPolicy, RedactionReport
from engine.redact.redactor import Redactor
from engine.redact.registry import PII_RULE, RULE_ORDER, create_rule, create_rules, rule_names

__all__ = [
    "PII_RULE",
    "RULE_ORDER",
    "Detection",
    "EgressRehydration",
    "PiiRedaction",
    "RedactedMemories",
    "RedactedTexts",
    "RedactionPolicy",
    "RedactionReport",
    "Redactor",
    "Rule",
    "create_rule",
    "create_rules",
    "redact_memories",
    "redact_texts",
    "rule_names",
]
