"""`secret`: API keys, access tokens and private keys.

Two kinds of evidence, both chosen to keep false positives low:
1. Vendor formats with a fixed prefix: OpenAI `sk-...` (also `sk-proj-...`), Stripe `sk_live_`/
   `rk_test_`..., GitHub `ghp_`/`gho_`/`ghu_`/`ghs_`/`ghr_` and `github_pat_`, GitLab `glpat-`, AWS access key ids
   `AKIA`/`ASIA` + 16, Slack `xoxb-`/`xoxp-`/`xoxa-`/`xoxr-`/`xoxs-`, Google `AIza` + 35, JSON Web
   Tokens (`eyJ...`.`eyJ...`.`...`), and PEM private key blocks.
2. Context: the token after `Bearer ` (any case), or a value assigned to a secret-sounding word
   (`api_key=...`, `token: ...`, `secret is ...`, `password=...`) that is at least 16 characters long,
   mixes letters and digits and has a Shannon entropy of at least 3 bits per character. Only the
   value is reported, not the word before it.
Key: the token itself.
"""

from __future__ import annotations

import math
import re
from collections import Counter

from engine.redact.base import Detection

_VENDOR = re.compile(
    r"(?<![\w-])(?:"
    r"sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}"
    r"|[sr]k_(?:live|test)_[A-Za-z0-9]{16,}"
    r"|gh[pousr]_[A-Za-z0-9]{36,255}"
    r"|github_pat_[A-Za-z0-9_]{22,255}"
    r"|glpat-[A-Za-z0-9_-]{20,}"
    r"|(?:AKIA|ASIA)[A-Z0-9]{16}"
    r"|xox[abprs]-[A-Za-z0-9-]{10,}"
    r"|AIza[0-9A-Za-z_-]{35}"
    r"|eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"
    r")(?![\w-])"
    r"|-----BEGIN (?:[A-Z]+ )*PRIVATE KEY-----[\s\S]*?-----END (?:[A-Z]+ )*PRIVATE KEY-----"
)
_BEARER = re.compile(r"\b[Bb](?i:earer)\s+([A-Za-z0-9._~+/-]{16,}=*)(?![\w.~+/=-])")
_ASSIGNED = re.compile(
    r"(?i)\b(?:api[_ -]?key|apikey|access[_ -]?key|secret(?:[_ -]?key)?|client[_ -]?secret|"
    r"(?:access[_ -]?|auth[_ -]?|refresh[_ -]?)?token|password|passwd|pwd)\b"
    r"[\"']?\s*(?:[:=]|\bis\b)\s*[\"']?([A-Za-z0-9._~+/=!@#$%^&*-]{16,})(?![\w.~+/=-])"
)


def entropy_bits(value: str) -> float:
    """Shannon entropy of the characters of `value`, in bits per character."""
    counts = Counter(value)
    n = len(value)
    return -sum(c / n * math.log2(c / n) for c in counts.values())


def looks_random(value: str) -> bool:
    has_letter = any(ch.isalpha() for ch in value)
    has_digit = any(ch.isdigit() for ch in value)
    return has_letter and has_digit and entropy_bits(value) >= 3.0


class SecretRule:
    name = "secret"
    label = "SECRET"

    def detect(self, text: str) -> list[Detection]:
        found: list[Detection] = []
        for m in _VENDOR.finditer(text):
            found.append(self._detection(m.start(), m.end(), m.group(0)))
        for m in _BEARER.finditer(text):
            if looks_random(m.group(1)) or len(m.group(1)) >= 32:
                found.append(self._detection(m.start(1), m.end(1), m.group(1)))
        for m in _ASSIGNED.finditer(text):
            if looks_random(m.group(1)):
                found.append(self._detection(m.start(1), m.end(1), m.group(1)))
        return found

    def _detection(self, start: int, end: int, value: str) -> Detection:
        return Detection(rule=self.name, start=start, end=end, value=value, key=value)
