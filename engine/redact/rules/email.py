"""`email`: addresses of the form local@domain.tld (RFC 5322's common subset)."""

from __future__ import annotations

import re

from engine.redact.base import Detection

# Image/file suffixes that look like TLDs in "icon@2x.png": not e-mail addresses.
_FILE_SUFFIXES = frozenset({"png", "jpg", "jpeg", "gif", "svg", "webp", "pdf", "txt", "js", "css"})

_EMAIL = re.compile(
    r"(?<![\w.%+-])"
    r"([A-Za-z0-9](?:[A-Za-z0-9._%+-]{0,62}[A-Za-z0-9_%+-])?)"  # local part, no leading/trailing dot
    r"@"
    r"((?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+([A-Za-z]{2,63}))"
    r"(?![\w-])"
)


class EmailRule:
    name = "email"
    label = "EMAIL"

    def detect(self, text: str) -> list[Detection]:
        found: list[Detection] = []
        for m in _EMAIL.finditer(text):
            if m.group(3).lower() in _FILE_SUFFIXES or ".." in m.group(1):
                continue
            value = m.group(0)
            found.append(
                Detection(rule=self.name, start=m.start(), end=m.end(), value=value, key=value.lower())
            )
        return found
