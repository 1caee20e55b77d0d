"""`Redactor`: one per response. Replaces detected values with stable placeholders.

- The same value (by the rule's normalized key) always gets the same placeholder within one Redactor:
  `[EMAIL_1]`, `[PHONE_1]`, `[CARD_1]`, `[IBAN_1]`, `[SSN_1]`, `[IP_1]` (IPv4 and IPv6 share the stem),
  `[SECRET_1]`, `[PII_1]`; numbers count up per stem in order of first sight.
- Overlapping detections: the longest span wins; equal lengths go to the earlier rule of
  `registry.RULE_ORDER`.
- Sensitivity of the memory a string came from:
  `none`  -> left as it is;
  `auto`  -> detected values are replaced;
  `pii`   -> detected values are replaced, and so are the memory's object values that no rule detects
             (each as a whole, `[PII_n]`, wherever it occurs in the memory's text as a whole word).
             A `pii` string in which nothing at all was replaced is replaced as a whole by `[PII_n]`:
             a string from a `pii` memory never leaves unredacted under `auto`.
- `policy.pii_redaction="off"`: every method returns its input unchanged.
- Inputs are never modified: `redact_memory` returns a new Memory.
- Rules read the text folded by `engine.redact.fold` (Unicode spaces, zero-width characters, digits of
  any script, full-width forms); spans are cut from the original text, keys come from the folded one.
- `placeholders` maps each placeholder to the first original spelling seen (e.g. `[PHONE_1]` ->
  `(212) 736-5000` even if `+1 212 736 5000` also appeared).
"""

from __future__ import annotations

import functools
import re
import threading
from collections.abc import Sequence
from typing import Any

import msgspec

from engine.models import Memory, ObjectValue, Sensitivity
from engine.redact.base import Detection
from engine.redact.fold import Folded, fold
from engine.redact.policy import RedactionPolicy, RedactionReport
from engine.redact.registry import PII_LABEL, PII_RULE, create_rules
from engine.redact.rules.phone import DEFAULT_REGIONS

#: texts up to this long have their detections remembered (see `_Detector`)
DETECT_CACHE_MAX_CHARS = 4000
DETECT_CACHE_SIZE = 16384


class _Detector:
    """The rules of one configuration and their detections per text, shared by every Redactor with
    that configuration. Detection is a pure function of (rules, text), and assemble redacts the same
    memory texts turn after turn: running the regex rules costs far more than a lookup. Remembers up
    to `DETECT_CACHE_SIZE` texts of up to `DETECT_CACHE_MAX_CHARS`."""

    def __init__(self, rules: Sequence[str] | None, phone_regions: Sequence[str]) -> None:
        self.rules = create_rules(rules, phone_regions=phone_regions)
        self.priority = {rule.name: i for i, rule in enumerate(self.rules)}
        self.cached = functools.lru_cache(maxsize=DETECT_CACHE_SIZE)(self.compute)

    def compute(self, text: str) -> tuple[Detection, ...]:
        folded = fold(text)
        candidates = [d for rule in self.rules for d in rule.detect(text if folded is None else folded.text)]
        if folded is not None:
            candidates = [_unfold(text, folded, d) for d in candidates]
        candidates.sort(key=lambda d: (d.start - d.end, self.priority[d.rule], d.start))
        chosen: list[Detection] = []
        for d in candidates:
            if all(d.end <= c.start or d.start >= c.end for c in chosen):
                chosen.append(d)
        return tuple(sorted(chosen, key=lambda d: d.start))

    def detect(self, text: str) -> list[Detection]:
        found = self.cached(text) if len(text) <= DETECT_CACHE_MAX_CHARS else self.compute(text)
        return list(found)


def _unfold(text: str, folded: Folded, d: Detection) -> Detection:
    """A detection in the folded text as a span of the original; the key stays the folded one, so a
    value written with look-alike characters shares the placeholder of its ASCII spelling."""
    start, end = folded.span(d.start, d.end)
    return msgspec.structs.replace(d, start=start, end=end, value=text[start:end])


_DETECTORS: dict[tuple[tuple[str, ...] | None, tuple[str, ...]], _Detector] = {}
_DETECTORS_LOCK = threading.Lock()


def _detector(rules: Sequence[str] | None, phone_regions: Sequence[str]) -> _Detector:
    key = (None if rules is None else tuple(rules), tuple(phone_regions))
    found = _DETECTORS.get(key)
    if found is None:
        with _DETECTORS_LOCK:
            found = _DETECTORS.get(key)
            if found is None:
                found = _DETECTORS[key] = _Detector(rules, phone_regions)
    return found


class Redactor:
    def __init__(
        self,
        policy: RedactionPolicy | None = None,
        *,
        rules: Sequence[str] | None = None,
        phone_regions: Sequence[str] = DEFAULT_REGIONS,
    ) -> None:
        self.policy = policy if policy is not None else RedactionPolicy()
        self._detector = _detector(rules, phone_regions)
        self._labels = {rule.name: rule.label for rule in self._detector.rules}
        self._labels[PII_RULE] = PII_LABEL
        self._by_key: dict[tuple[str, str], str] = {}
        self._originals: dict[str, str] = {}
        self._counters: dict[str, int] = {}
        self._fired: set[str] = set()
        #: every value replaced so far, as written -> (rule, key): hidden wherever it occurs again
        self._seen: dict[str, tuple[str, str]] = {}

    @property
    def enabled(self) -> bool:
        return self.policy.pii_redaction == "auto"

    # --- detection (pure: assigns no placeholders) ----------------------------------------------
    def detect(self, text: str) -> list[Detection]:
        """Non-overlapping detections of all rules in `text`, in text order."""
        return self._detector.detect(text)

    # --- redaction ----------------------------------------------------------------------------------
    def redact_text(self, text: str, sensitivity: Sensitivity = "auto", *, whole: Sequence[str] = ()) -> str:
        """`text` with detected values replaced. `whole`: for `pii`, values to hide wherever they occur."""
        if not self.enabled or sensitivity == "none" or not text.strip():
            return text
        detections = self.detect(text)
        if sensitivity == "pii":
            detections = _add_whole_values(text, detections, whole)
            if not detections:
                detections = [Detection(rule=PII_RULE, start=0, end=len(text), value=text, key=text)]
        elif not detections and not self._seen:
            return text  # most texts of a response: nothing found here, nothing hidden before
        return self._replace(text, self._add_seen_values(text, detections))

    def redact_object(self, value: ObjectValue, sensitivity: Sensitivity = "auto") -> ObjectValue:
        """A memory's `object`: strings are redacted like texts; under `pii` a number or boolean becomes a
        `[PII_n]` string (so a caller rendering `object_num` must move it to `object_text`); dict
        objects are redacted leaf by leaf, keys kept."""
        if not self.enabled or sensitivity == "none":
            return value
        result: ObjectValue = self._redact_tree(value, sensitivity)
        return result

    def redact_memory(self, memory: Memory) -> Memory:
        """A redacted copy: `text`, `object` and the string leaves of `metadata` and `provenance` (the
        latter two by the rules only, as under `auto`, and the values already hidden: a fact's
        `object_name` and `source_text` repeat its object). Ids, tags and the other fields are kept."""
        if not self.enabled or memory.sensitivity == "none":
            return memory
        text = self.redact_memory_text(memory)
        obj = self.redact_object(memory.object, memory.sensitivity)
        return msgspec.structs.replace(
            memory,
            text=text,
            object=obj,
            metadata=self._redact_tree(memory.metadata, "auto"),
            provenance=self._redact_tree(memory.provenance, "auto"),
        )

    def redact_memory_text(self, memory: Memory, text: str | None = None) -> str:
        """A string rendered from `memory` (its text by default, or e.g. a fact line), redacted under the
        memory's sensitivity with its object values as `whole`."""
        source = memory.text if text is None else text
        if not self.enabled or memory.sensitivity == "none":
            return source
        return self.redact_text(source, memory.sensitivity, whole=self.whole_values(memory))

    def whole_values(self, memory: Memory) -> tuple[str, ...]:
        """For a `pii` memory: its object's scalar values (strings and numbers, not booleans) in which no
        rule detects anything. Empty for other sensitivities."""
        if memory.sensitivity != "pii":
            return ()
        values: list[str] = []
        for leaf in _scalar_leaves(memory.object):
            if leaf.strip() and not self.detect(leaf):
                values.append(leaf)
        return tuple(values)

    # --- results ----------------------------------------------------------------------------------
    @property
    def placeholders(self) -> dict[str, str]:
        return dict(self._originals)

    @property
    def rules_fired(self) -> list[str]:
        return sorted(self._fired)

    def report(self, include_map: bool | None = None) -> RedactionReport:
        """The response's Redaction; the map is included when asked, or (None) when the policy allows
        egress rehydration."""
        if include_map is None:
            include_map = self.policy.egress_rehydration == "allowed"
        return RedactionReport(
            applied=bool(self._originals),
            rules=self.rules_fired,
            placeholders=self.placeholders if include_map else None,
        )

    # --- internals ----------------------------------------------------------------------------------
    def _add_seen_values(self, text: str, detections: list[Detection]) -> list[Detection]:
        """`detections` plus whole-word occurrences of values already replaced (in this text or earlier
        in the response) that no rule caught here, e.g. an SSN repeated without its context words:
        a value once hidden is hidden everywhere in the response."""
        known = dict(self._seen)
        known.update({d.value: (d.rule, d.key) for d in detections})
        taken = list(detections)
        for value in sorted(known, key=len, reverse=True):
            if not value.strip() or value not in text:
                continue
            rule, key = known[value]
            for m in re.finditer(r"(?<!\w)" + re.escape(value) + r"(?!\w)", text):
                if all(m.end() <= d.start or m.start() >= d.end for d in taken):
                    taken.append(Detection(rule=rule, start=m.start(), end=m.end(), value=value, key=key))
        return sorted(taken, key=lambda d: d.start)

    def _replace(self, text: str, detections: Sequence[Detection]) -> str:
        parts: list[str] = []
        pos = 0
        for d in detections:
            parts.append(text[pos : d.start])
            parts.append(self._placeholder(d))
            pos = d.end
        parts.append(text[pos:])
        return "".join(parts)

    def _placeholder(self, d: Detection) -> str:
        label = self._labels[d.rule]
        self._fired.add(d.rule)
        self._seen.setdefault(d.value, (d.rule, d.key))
        found = self._by_key.get((label, d.key))
        if found is not None:
            return found
        n = self._counters.get(label, 0) + 1
        self._counters[label] = n
        placeholder = f"[{label}_{n}]"
        self._by_key[(label, d.key)] = placeholder
        self._originals[placeholder] = d.value
        return placeholder

    def _redact_tree(self, value: Any, sensitivity: Sensitivity) -> Any:
        if isinstance(value, str):
            return self.redact_text(value, sensitivity)
        if isinstance(value, dict):
            return {k: self._redact_tree(v, sensitivity) for k, v in value.items()}
        if isinstance(value, list):
            return [self._redact_tree(v, sensitivity) for v in value]
        if sensitivity == "pii" and isinstance(value, bool | int | float):
            key = _scalar_text(value)
            return self._placeholder(Detection(rule=PII_RULE, start=0, end=len(key), value=key, key=key))
        return value


def _scalar_text(value: bool | int | float) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _scalar_leaves(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, bool) or value is None:
        return []
    if isinstance(value, int | float):
        return [str(value)]
    if isinstance(value, dict):
        return [leaf for v in value.values() for leaf in _scalar_leaves(v)]
    if isinstance(value, list):
        return [leaf for v in value for leaf in _scalar_leaves(v)]
    return []


def _add_whole_values(text: str, detections: list[Detection], whole: Sequence[str]) -> list[Detection]:
    """`detections` plus the whole-word occurrences of `whole` values that do not overlap them."""
    taken = list(detections)
    for value in sorted(set(whole), key=len, reverse=True):
        if not value.strip():
            continue
        for m in re.finditer(r"(?<!\w)" + re.escape(value) + r"(?!\w)", text):
            if all(m.end() <= d.start or m.start() >= d.end for d in taken):
                taken.append(Detection(rule=PII_RULE, start=m.start(), end=m.end(), value=value, key=value))
    return sorted(taken, key=lambda d: d.start)
