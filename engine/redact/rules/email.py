"""`email`: addresses of the form local@domain.tld (RFC 5322's common subset, and RFC 6531's
internationalized addresses).

The local part and the domain's labels are letters and digits of any script (with their combining
marks, so a decomposed `é` is part of the word) plus the usual `._%+-` in the local part and `-` in
labels; the top-level domain is letters (`com`, `de`, `рф`, `テスト`) or punycode (`xn--p1ai`).
Scripts written without spaces (Chinese, Japanese, Korean particles, Thai, ...) glue words to an
address: an ASCII address is cut from such text at the script change (`連絡先はalice@example.comです`
gives `alice@example.com`); a local part in such a script itself extends back to the previous space or
punctuation, at most 64 characters (no word boundary to cut it at), so more is hidden rather than
less. File names such as `icon@2x.png` are not addresses. Key: the address in NFC, lower-cased.
"""

from __future__ import annotations

import re
import unicodedata

from engine.letters import MARKS
from engine.redact.base import Detection

# Image/file suffixes that look like TLDs in "icon@2x.png": not e-mail addresses.
_FILE_SUFFIXES = frozenset({"png", "jpg", "jpeg", "gif", "svg", "webp", "pdf", "txt", "js", "css"})


_M = MARKS  # combining marks: a decomposed letter's accent is part of its word
# Scripts written without spaces between words (CJK, kana, Hangul syllables, Thai, Lao, Khmer, Myanmar).
_SPACELESS = "\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f"

_EMAIL = re.compile(
    rf"(?:(?<![\w.%+\-{_M}])|(?<=[{_SPACELESS}]))"
    rf"([^\W_](?:[\w.%+\-{_M}]{{0,62}}[\w%+\-{_M}])?)"  # local part, no leading/trailing dot
    r"@"
    rf"((?:[^\W_](?:(?:[^\W_]|[\-{_M}]){{0,61}}(?:[^\W_]|[{_M}]))?\.)+"
    rf"(?:[A-Za-z]{{2,63}}(?:(?![\w\-{_M}])|(?=[{_SPACELESS}]))"
    rf"|xn--[A-Za-z0-9-]{{1,59}}(?![\w-])"
    rf"|(?:[^\W\d_]|[{_M}]){{2,63}}(?![\w\-{_M}])))"
)
# In a local part: a run of a spaceless script glued to an ASCII local part that ends it.
_GLUED_BEFORE_ASCII = re.compile(rf"[{_SPACELESS}](?=[A-Za-z0-9][A-Za-z0-9._%+-]*+$)")


class EmailRule:
    name = "email"
    label = "EMAIL"

    def detect(self, text: str) -> list[Detection]:
        if "@" not in text:
            return []
        found: list[Detection] = []
        for m in _EMAIL.finditer(text):
            local, domain = m.group(1), m.group(2)
            if domain.rsplit(".", 1)[1].lower() in _FILE_SUFFIXES or ".." in local:
                continue
            start = m.start()
            glued = _GLUED_BEFORE_ASCII.search(local)
            if glued is not None:
                start += glued.end()
            value = text[start : m.end()]
            key = unicodedata.normalize("NFC", value).lower()
            found.append(Detection(rule=self.name, start=start, end=m.end(), value=value, key=key))
        return found
